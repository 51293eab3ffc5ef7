// A local stand-in for Meta's Graph API, the one outside service the project may fake. It answers the
// WhatsApp Cloud API, Instagram messaging and Messenger (Facebook Pages) send endpoints with Meta's
// documented success and error bodies, enforces the rules the hub has to live with (24-hour windows, the
// HUMAN_AGENT tag, 80 messages/second per phone number, approved template names, text lengths, OAuth
// tokens — shared per product or one per number / account / Page), and emits Meta's webhooks to the hub
// signed the way Meta signs them. One app: a WhatsApp Business Account with one or more phone numbers, one
// or more Instagram accounts, one or more Pages; windows and throughput are per number / account / Page,
// as at Meta. WhatsApp people may be known by phone number (wa_id), by business-scoped user id (BSUID), or
// both. Webhooks may batch several entries, changes and messages in one delivery, as Meta's do. Tests steer
// it (failures injected for one recipient, window state, its clock) and read back every send it accepted
// or refused, with when it arrived.
//
// Deliberately independent of the hub's own code: it signs, serialises and validates on its own, so a
// bug shared between the hub and a helper it exports cannot hide.
import {
  checkTemplateHeader,
  interactivePart,
  MEDIA_TYPES,
  mediaPart,
  RuleBroken,
  type InteractivePart,
  type MediaPart,
  type MediaType,
  type TemplateHeaderFormat,
} from "./fake-graph-rich.js";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Request, type Response } from "express";
import { FakeGraphMedia } from "./fake-graph-media.js";

export interface FakeGraphOptions {
  version?: string;
  phoneNumberId?: string;
  /** More phone numbers of the same WhatsApp Business Account; the same token sends from each. */
  otherPhoneNumberIds?: string[];
  waToken?: string;
  igAccountId?: string;
  /** More Instagram professional accounts of the same app; the same token sends from each. */
  otherIgAccountIds?: string[];
  igToken?: string;
  /** The Facebook Page that sends Messenger messages; `me` with the Page token is this Page. */
  pageId?: string;
  /** More Pages of the same app; the same Page token sends from each. */
  otherPageIds?: string[];
  pageToken?: string;
  /**
   * Tokens of their own, by phone number id / Instagram account id / Page id. A node listed here accepts only
   * its own token (not the product's shared one), so a test can tell which account's token a send carried.
   */
  tokens?: Record<string, string>;
  /** Signs webhooks: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>. */
  appSecret?: string;
  /** Where to POST webhooks; can be set later via the property. */
  hubWebhookUrl?: string;
  /** Messages per second allowed per phone number (Cloud API default: 80). */
  mps?: number;
  /** Approved WhatsApp template names. */
  templates?: string[];
  /** The header format of those templates that have a media header (none: text or no header). */
  templateHeaders?: Record<string, TemplateHeaderFormat>;
  /** The time (ms) the fake lives by, for windows, throughput and records; Date.now by default. */
  clock?: () => number;
}

export type Channel = "whatsapp" | "instagram" | "messenger";

export interface SentMessage {
  channel: Channel;
  /** wamid ("wamid.<base64>") or Instagram / Messenger mid ("m_..."). */
  id: string;
  /** The phone number id / Instagram account id / Page id it was sent from. */
  from: string;
  /** WhatsApp `to` or `recipient` (a BSUID), as the hub sent it / Instagram or Messenger recipient.id. */
  to: string;
  type: "text" | "template" | MediaType | "interactive";
  text?: string;
  template?: { name: string; language: string; components?: unknown[] };
  /** WhatsApp media, and (Instagram / Messenger) an attachment: its link and caption / file name. */
  media?: MediaPart;
  /** WhatsApp reply buttons or a list. */
  interactive?: InteractivePart;
  /** Instagram / Messenger quick replies offered with the text. */
  quickReplies?: { title: string; payload: string }[];
  /** Instagram / Messenger: the tag, when messaging_type = MESSAGE_TAG. */
  tag?: string;
  /** The fake's clock (Date.now() unless a `clock` was given) when accepted. */
  at: number;
}

export interface RejectedSend {
  channel: Channel;
  code: number;
  /** The phone number id / Instagram account id / Page id the send was for ("" when the path named none the fake knows). */
  from: string;
  to: string;
  at: number;
}

/** One send request as it arrived, accepted or refused. */
export interface SendAttempt {
  channel: Channel;
  from: string;
  to: string;
  /** The fake's clock when the request arrived. */
  at: number;
  /** The HTTP status the fake answered. */
  httpStatus: number;
}

export interface StatusError {
  code: number;
  title: string;
  message?: string;
  details?: string;
}

/** A webhook the fake posted (or tried to), for debugging failing tests. */
export interface PostedWebhook {
  body: unknown;
  /** The hub's HTTP status, or 0 when the post itself failed (see `error`). */
  status: number;
  error?: string;
}

/**
 * What a person can send on WhatsApp: text; `button`, a template's quick-reply button (its label in `text`, a
 * payload that differs); `button_reply` and `list_reply`, answers to an interactive message (their title,
 * with an id that differs); an image (the text is its caption, "" for none).
 */
export type WhatsAppInboundKind = "text" | "button" | "button_reply" | "list_reply" | "image";

/**
 * One message from a person, inside a WhatsApp webhook. The person is known by phone number (`from`, their
 * wa_id), by business-scoped user id (`userId`), or both; at least one is needed. With only a userId the
 * message has no `from` and the contact only `user_id`, as for a person who hides their number behind a
 * username. A message carrying both links them: the fake then treats either id as the same person.
 */
export interface WhatsAppInbound {
  from?: string;
  /** The person's BSUID, e.g. "US.13491208655302741918" (contacts[].user_id). */
  userId?: string;
  text: string;
  kind?: WhatsAppInboundKind;
  /** The message's own `timestamp` (when the person sent it); their window runs from it. Default: now. */
  at?: Date;
  /** The profile name in `contacts`. */
  name?: string;
  id?: string;
}

/** One status update of a wamid, inside a WhatsApp webhook; `failed` carries `errors`. */
export interface WhatsAppStatusUpdate {
  wamid: string;
  status: "sent" | "delivered" | "read" | "failed";
  errors?: StatusError[];
  at?: Date;
  /**
   * recipient_id, or recipient_user_id when it is a BSUID; by default the recipient the wamid was sent to
   * (a send to a BSUID reports recipient_user_id).
   */
  to?: string;
}

/** One `changes[]` element: everything for one phone number of the business account. */
export interface WhatsAppChange {
  /** metadata.phone_number_id; the fake's first phone number by default. */
  phoneNumberId?: string;
  messages?: WhatsAppInbound[];
  statuses?: WhatsAppStatusUpdate[];
}

/** One `entry[]` element of a WhatsApp webhook. */
export interface WhatsAppEntry {
  /** entry[].id, the WhatsApp Business Account id. */
  wabaId?: string;
  changes: WhatsAppChange[];
}

/** A message from a person to an Instagram account… */
export interface InstagramInbound {
  from: string;
  text: string;
  at?: Date;
  id?: string;
  /** A tapped quick reply: its payload (the text is its title). */
  quickReplyPayload?: string;
}

/** …or the echo of a message the account sent to a person. */
export interface InstagramEcho {
  echoTo: string;
  text: string;
  id?: string;
}

/** One `entry[]` element of an Instagram webhook: events of one Instagram account. */
export interface InstagramEntry {
  /** entry[].id and the account side of each event; the fake's first account by default. */
  accountId?: string;
  messaging: (InstagramInbound | InstagramEcho)[];
}

/** A message from a person (their page-scoped id, PSID) to a Facebook Page… */
export interface MessengerInbound {
  from: string;
  text: string;
  at?: Date;
  id?: string;
  /** A tapped quick reply: its payload (the text is its title). */
  quickReplyPayload?: string;
}

/** …a tap on a postback button (its title, and the payload it was built with; by default derived from the title)… */
export interface MessengerPostback {
  from: string;
  postback: { title: string; payload?: string };
  at?: Date;
  id?: string;
}

/** …or the echo of a message the Page sent (from any app or the Page inbox; `appId` when an app sent it). */
export interface MessengerEcho {
  echoTo: string;
  text: string;
  id?: string;
  /** message.app_id: the app that sent it (a number, as in Meta's echoes). */
  appId?: number;
}

/** One Page's events in a Messenger webhook; the fake's first Page by default. */
export interface MessengerEntry {
  pageId?: string;
  messaging: (MessengerInbound | MessengerPostback | MessengerEcho)[];
}

/** The WhatsApp Business Account id the webhooks carry in entry[].id. */
export const FAKE_WABA_ID = "2222222222222222";
/** metadata.display_phone_number in WhatsApp webhooks. */
export const FAKE_DISPLAY_PHONE_NUMBER = "15550000000";

const HOUR_MS = 3_600_000;
const WHATSAPP_WINDOW_MS = 24 * HOUR_MS;
const INSTAGRAM_WINDOW_MS = 24 * HOUR_MS;
const INSTAGRAM_HUMAN_AGENT_MS = 7 * 24 * HOUR_MS;
const MESSENGER_WINDOW_MS = 24 * HOUR_MS;
const MESSENGER_HUMAN_AGENT_MS = 7 * 24 * HOUR_MS;
const THROUGHPUT_WINDOW_MS = 1000;
/** Delay before the `failed` status webhook in windowErrorMode "async" (Meta sends it shortly after the 200). */
const ASYNC_FAILURE_DELAY_MS = 50;
const MAX_TEXT_BODY = 4096;
const MAX_INSTAGRAM_TEXT = 1000;
const MAX_MESSENGER_TEXT = 2000;
const ERROR_CODES_URL = "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/";

const WINDOW_DETAILS =
  "Message failed to send because more than 24 hours have passed since the customer last replied to this number.";

/**
 * Titles and details of the Cloud API codes tests are likely to inject, as Meta's error-code reference
 * words them. The title goes into `message` as "(#code) title"; `details` into error_data.details.
 */
const WHATSAPP_ERRORS: Record<number, { title: string; details: string }> = {
  0: { title: "AuthException", details: "We were unable to authenticate the app user." },
  3: { title: "API Method", details: "Capability or permissions issue." },
  4: { title: "Too many calls", details: "The app has reached its API call rate limit." },
  10: { title: "Permission Denied", details: "Permission is either not granted or has been removed." },
  100: {
    title: "Invalid parameter",
    details: "The request included one or more unsupported or misspelled parameters.",
  },
  190: { title: "Invalid OAuth access token", details: "Your access token has expired or is invalid." },
  368: {
    title: "Temporarily blocked for policies violations",
    details: "The WhatsApp Business Account associated with the app has been restricted or disabled.",
  },
  80007: { title: "Rate limit issues", details: "The WhatsApp Business Account has reached its rate limit." },
  130429: { title: "Rate limit hit", details: "Cloud API message throughput has been reached." },
  131000: { title: "Something went wrong", details: "Message failed to send due to an unknown error." },
  131005: { title: "Access denied", details: "Permission is either not granted or has been removed." },
  131008: { title: "Required parameter is missing", details: "The request is missing a required parameter." },
  131009: { title: "Parameter value is not valid", details: "One or more parameter values are invalid." },
  131026: {
    title: "Message undeliverable",
    details:
      "Unable to deliver message. Reasons can include: the recipient phone number is not a WhatsApp phone number; " +
      "the recipient has not accepted the new Terms of Service; the recipient uses an old WhatsApp version.",
  },
  131047: { title: "Re-engagement message", details: WINDOW_DETAILS },
  131048: {
    title: "Spam rate limit hit",
    details:
      "Message failed to send because there are restrictions on how many messages can be sent from this phone number.",
  },
  131049: {
    title: "This message was not delivered to maintain healthy ecosystem engagement.",
    details: "In order to maintain a healthy ecosystem engagement, the message failed to be delivered.",
  },
  131051: { title: "Unsupported message type", details: "Unsupported message type." },
  131052: { title: "Media download error", details: "Unable to download the media sent by the user." },
  131053: {
    title: "Media upload error",
    details: "Unable to upload the media used in the message: it could not be downloaded or its type is not supported.",
  },
  131056: {
    title: "(Business Account, Consumer Account) pair rate limit hit",
    details:
      "Message failed to send because there were too many messages sent from this phone number to the same phone " +
      "number in a short period of time.",
  },
  131062: {
    title: "Business-scoped User ID recipients are not supported for this message.",
    details: "Business-scoped User ID recipients are not supported for this message.",
  },
  132000: {
    title: "Number of parameters does not match the expected number of params",
    details: "The number of variable parameter values does not match the number of variables the template defines.",
  },
  132001: {
    title: "Template name does not exist in the translation",
    details: "The template does not exist in the specified language or it has not been approved.",
  },
  132015: { title: "Template is Paused", details: "Template is paused due to low quality so it cannot be sent." },
  132016: {
    title: "Template is Disabled",
    details: "Template has been paused too many times due to low quality and is now permanently disabled.",
  },
  132012: {
    title: "Parameter format does not match format in the created template",
    details: "Variable parameter values formatted incorrectly.",
  },
  133010: { title: "Phone number not registered", details: "The phone number is not registered on the platform." },
};

interface GraphError {
  code: number;
  message: string;
  type?: string;
  subcode?: number;
  /** WhatsApp errors carry error_data {messaging_product: "whatsapp", details}. */
  details?: string;
  isTransient?: boolean;
}

type InjectedFailure =
  | { kind: "5xx" | "429" }
  | { kind: "code"; code: number; httpStatus: number }
  /** Lets one send through as usual: queued before a failure, it makes that failure hit a later send. */
  | { kind: "pass" };

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function nonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value.trim() !== "";
}

/** WhatsApp ids are digits; the hub may send "+1 555…" and Meta normalises it to wa_id "1555…". */
function waId(phone: string): string {
  return phone.replace(/\D/g, "");
}

/**
 * A WhatsApp business-scoped user id: an ISO country code, ".", then up to 128 letters and digits
 * ("US.13491208655302741918"; a parent BSUID has "ENT." after the country). Never mistaken for a phone
 * number, whose digits alone make its wa_id.
 */
function isBsuid(value: string): boolean {
  return /^[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}$/.test(value);
}

function fbtraceId(): string {
  return randomBytes(17).toString("base64url").slice(0, 23);
}

/**
 * A wamid shaped like Meta's: "wamid." + base64 of a small protobuf-ish record holding the recipient's
 * number and a random hex id (e.g. wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTND…). Standard base64, so it may
 * contain "+", "/" and "=" just like the real ones.
 */
function newWamid(to: string): string {
  const number = Buffer.from(waId(to) || "0");
  const hex = Buffer.from(randomBytes(9).toString("hex").toUpperCase());
  const record = Buffer.concat([
    Buffer.from([0x1c, 0x18, number.length]),
    number,
    Buffer.from([0x15, 0x02, 0x00, 0x11, 0x18, hex.length]),
    hex,
    Buffer.from([0x00]),
  ]);
  return `wamid.${record.toString("base64")}`;
}

function newMid(): string {
  return `m_${randomBytes(24).toString("base64url")}`;
}

function unixSeconds(ms: number): string {
  return String(Math.floor(ms / 1000));
}

/**
 * JSON the way Meta's webhook sender writes it: non-ASCII characters as \uXXXX escapes and "/" as "\/".
 * The signature covers these exact bytes, so a hub that re-serialises the parsed body before checking the
 * signature fails here just as it would against Meta.
 */
export function metaJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`)
    .replace(/\//g, "\\/");
}

export function signMetaBody(appSecret: string, rawBody: string): string {
  return `sha256=${createHmac("sha256", appSecret).update(rawBody).digest("hex")}`;
}

function errorBody(error: GraphError): { error: Json } {
  // Key order follows Meta's examples; consumers must not depend on it, but logs read alike.
  return {
    error: {
      message: error.message,
      type: error.type ?? "OAuthException",
      code: error.code,
      ...(error.details !== undefined ? { error_data: { messaging_product: "whatsapp", details: error.details } } : {}),
      ...(error.subcode !== undefined ? { error_subcode: error.subcode } : {}),
      ...(error.isTransient !== undefined ? { is_transient: error.isTransient } : {}),
      fbtrace_id: fbtraceId(),
    },
  };
}

function whatsappError(code: number, details?: string, subcode?: number): GraphError {
  const known = WHATSAPP_ERRORS[code];
  return {
    code,
    message: `(#${code}) ${known?.title ?? "Error"}`,
    details: details ?? known?.details ?? `Error ${code} injected by the test.`,
    ...(subcode !== undefined ? { subcode } : {}),
  };
}

/** Runs one of fake-graph-rich.ts's checks, answering a broken rule with Meta's error. */
function richRule<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof RuleBroken) throw new SendRefused(400, whatsappError(error.code, error.details));
    throw error;
  }
}

const INVALID_TOKEN: GraphError = { code: 190, message: "Invalid OAuth access token - Cannot parse access token" };

/** Thrown inside the send handlers to answer with Meta's error body and record the refusal. */
class SendRefused extends Error {
  constructor(
    readonly httpStatus: number,
    readonly graphError: GraphError,
  ) {
    super(graphError.message);
  }
}

export class FakeGraph {
  url = "";
  hubWebhookUrl: string;
  readonly sent: SentMessage[] = [];
  /** WhatsApp read receipts the business sent (`status: read`), with whether they asked for the typing indicator. */
  readonly reads: { from: string; messageId: string; typing: boolean; at: number }[] = [];
  /**
   * Template statuses as Meta holds them (name → APPROVED | PAUSED | DISABLED | REJECTED | PENDING…): a send
   * of a paused one is refused with 132015, a disabled one with 132016, one not approved with 132001.
   */
  readonly templateStatus = new Map<string, string>();
  /** Pricing category of a template (for its statuses' `pricing`): utility by default. */
  readonly templateCategory = new Map<string, string>();
  readonly rejected: RejectedSend[] = [];
  /** WhatsApp media the person's messages name (fake-graph-media.ts). */
  readonly media = new FakeGraphMedia(this);
  /** Every send request on either channel, accepted or refused, in arrival order. */
  readonly attempts: SendAttempt[] = [];
  /** Every webhook posted to the hub, in order, with the hub's answer. */
  readonly webhooks: PostedWebhook[] = [];
  /**
   * How 131047 (outside the 24-hour window) is reported for WhatsApp. "sync": a 400 error response.
   * "async": accepted with a wamid (recorded in `rejected`, not `sent`), then a `failed` status webhook
   * carrying errors[{code: 131047}] ~50 ms later — which is how Cloud API itself reports it.
   */
  windowErrorMode: "sync" | "async" = "sync";

  readonly version: string;
  /** The first phone number of the business account: webhooks and windows use it unless told otherwise. */
  readonly phoneNumberId: string;
  /** Every phone number of the business account, the first one included. */
  readonly phoneNumberIds: readonly string[];
  readonly waToken: string;
  /** The first Instagram account: webhooks and windows use it unless told otherwise. */
  readonly igAccountId: string;
  /** Every Instagram account of the app, the first one included. */
  readonly igAccountIds: readonly string[];
  readonly igToken: string;
  /** The first Page: Messenger webhooks and windows use it unless told otherwise; `me` with the Page token. */
  readonly pageId: string;
  /** Every Page of the app, the first one included. */
  readonly pageIds: readonly string[];
  readonly pageToken: string;
  /** Per-node tokens (see FakeGraphOptions.tokens); `tokenFor` says which token a node accepts. */
  readonly tokens: Readonly<Record<string, string>>;
  readonly appSecret: string;
  readonly mps: number;
  readonly templates: readonly string[];
  /** Header formats of media-header templates; tests may declare more. */
  templateHeaders: Record<string, TemplateHeaderFormat>;
  readonly clock: () => number;

  private server: Server | undefined;
  private requestCount = 0;
  private throughputRejectionCount = 0;
  /** Injected failures, each for one recipient, in the order they were queued. */
  private readonly injected: { to: string; failure: InjectedFailure }[] = [];
  /** Accepted WhatsApp sends (the fake's clock) per phone number, oldest first, for the sliding one-second window. */
  private readonly acceptedAt = new Map<string, number[]>();
  /**
   * Last inbound message time (ms) per (business account, person id): WhatsApp by phone number id and wa_id
   * or BSUID, Instagram by account id and IGSID, Messenger by Page id and PSID. A window is between one
   * person and one business number, account or Page.
   */
  private readonly lastInbound = {
    whatsapp: new Map<string, number>(),
    instagram: new Map<string, number>(),
    messenger: new Map<string, number>(),
  };
  /** A WhatsApp person's wa_id and BSUID, linked by an inbound message that carried both. */
  private readonly waIdOfBsuid = new Map<string, string>();
  private readonly bsuidOfWaId = new Map<string, string>();
  /** wamid → the phone number that sent it and its recipient (wa_id or BSUID), so status webhooks can carry both. */
  private readonly wamids = new Map<string, { from: string; to: string }>();
  /** Last template / any message wamid per (phone number, person id): quick-reply and interactive answers quote it. */
  private readonly lastTemplateTo = new Map<string, string>();
  private readonly lastMessageTo = new Map<string, string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** wamids of the messages people sent (posted as webhooks), by the phone number they were sent to. */
  private readonly inboundWamids = new Map<string, string>();
  private readonly pending = new Set<Promise<unknown>>();

  constructor(options: FakeGraphOptions = {}) {
    this.version = options.version ?? "v21.0";
    this.phoneNumberId = options.phoneNumberId ?? "1111111111";
    this.phoneNumberIds = [this.phoneNumberId, ...(options.otherPhoneNumberIds ?? [])];
    this.waToken = options.waToken ?? "wa-token-for-tests";
    this.igAccountId = options.igAccountId ?? "17841400000000001";
    this.igAccountIds = [this.igAccountId, ...(options.otherIgAccountIds ?? [])];
    this.igToken = options.igToken ?? "ig-token-for-tests";
    this.pageId = options.pageId ?? "100000000000001";
    this.pageIds = [this.pageId, ...(options.otherPageIds ?? [])];
    this.pageToken = options.pageToken ?? "page-token-for-tests";
    this.tokens = { ...options.tokens };
    this.appSecret = options.appSecret ?? "app-secret-for-tests";
    this.hubWebhookUrl = options.hubWebhookUrl ?? "";
    this.mps = options.mps ?? 80;
    this.templates = options.templates ?? ["results_ready", "hub_default"];
    this.templateHeaders = options.templateHeaders ?? {};
    this.clock = options.clock ?? Date.now;
  }

  /** Count of send requests received on any channel, accepted or not. */
  get requests(): number {
    return this.requestCount;
  }

  /** Count of 130429 answers given (the fake's own throughput limit, plus any injected 130429). */
  get throughputRejections(): number {
    return this.throughputRejectionCount;
  }

  /** Whether no webhook is scheduled or being posted (see `settled`). */
  get idle(): boolean {
    return this.timers.size === 0 && this.pending.size === 0;
  }

  /** metadata.display_phone_number of one of the business account's phone numbers. */
  displayPhoneNumber(phoneNumberId: string): string {
    if (phoneNumberId === this.phoneNumberId) return FAKE_DISPLAY_PHONE_NUMBER;
    return `1555${waId(phoneNumberId).slice(-7).padStart(7, "0")}`;
  }

  /**
   * Answer the next n sends to this recipient (any channel) with HTTP 500 / HTTP 429 and Meta's error
   * body. Only sends to that recipient consume them: a late send to someone else never does. On WhatsApp
   * the recipient is matched as the send names it: a wa_id (by its digits) or a BSUID.
   */
  failNext(to: string, n: number, kind: "5xx" | "429"): void {
    for (let i = 0; i < n; i++) this.injected.push({ to, failure: { kind } });
  }

  /** Let the next n sends to this recipient through untouched; failures queued after them hit the sends after. */
  passNext(to: string, n: number): void {
    for (let i = 0; i < n; i++) this.injected.push({ to, failure: { kind: "pass" } });
  }

  /** Answer the next n sends to this recipient with the given Meta error code and HTTP status (400 by default). */
  errorNext(to: string, n: number, code: number, httpStatus = 400): void {
    for (let i = 0; i < n; i++) this.injected.push({ to, failure: { kind: "code", code, httpStatus } });
  }

  /** How many injected failures are still waiting for a send to this recipient. */
  failuresLeft(to: string): number {
    return this.injected.filter((entry) => sameRecipient(entry.to, to)).length;
  }

  /** Drops the injected failures still waiting for this recipient; returns how many there were. */
  clearFailures(to: string): number {
    let cleared = 0;
    for (let i = this.injected.length - 1; i >= 0; i--) {
      if (sameRecipient(this.injected[i]!.to, to)) {
        this.injected.splice(i, 1);
        cleared++;
      }
    }
    return cleared;
  }

  /**
   * Sets a person's window (their last inbound message time) without posting a webhook; `account` is the
   * phone number id / Instagram account id / Page id the window is with (the first one by default). On
   * WhatsApp `who` is a wa_id or a BSUID; a person linked to the other id shares the window.
   */
  setLastInbound(channel: Channel, who: string, at: Date, options: { account?: string } = {}): void {
    const account =
      options.account ??
      (channel === "whatsapp" ? this.phoneNumberId : channel === "instagram" ? this.igAccountId : this.pageId);
    this.lastInbound[channel].set(windowKey(channel, account, who), at.getTime());
  }

  /** The access token sends from this phone number / Instagram account / Page must carry (its own, else its product's). */
  tokenFor(node: string): string {
    if (Object.hasOwn(this.tokens, node)) return this.tokens[node]!;
    return this.sharedToken(
      this.igAccountIds.includes(node) ? "instagram" : this.pageIds.includes(node) ? "messenger" : "whatsapp",
    );
  }

  private sharedToken(channel: Channel): string {
    return channel === "whatsapp" ? this.waToken : channel === "instagram" ? this.igToken : this.pageToken;
  }

  private nodesOf(channel: Channel): readonly string[] {
    return channel === "whatsapp" ? this.phoneNumberIds : channel === "instagram" ? this.igAccountIds : this.pageIds;
  }

  /** Whether some node of the product accepts this token (for a path naming no node the fake knows). */
  private isProductToken(channel: Channel, token: string | undefined): boolean {
    return (
      token !== undefined &&
      [this.sharedToken(channel), ...this.nodesOf(channel).map((node) => this.tokenFor(node))].includes(token)
    );
  }

  /** Every id the fake knows a WhatsApp person by: the one given, and the other one an inbound linked to it. */
  private whatsappIdsOf(person: string): string[] {
    if (isBsuid(person)) {
      const wa = this.waIdOfBsuid.get(person);
      return wa !== undefined ? [person, wa] : [person];
    }
    const wa = waId(person);
    const bsuid = this.bsuidOfWaId.get(wa);
    return bsuid !== undefined ? [wa, bsuid] : [wa];
  }

  async start(): Promise<this> {
    const app = express();
    app.disable("x-powered-by");
    // Raw bytes, parsed by the handlers themselves, so a body that is not JSON is still counted as a send
    // request and answered with Meta's code 100 rather than Express's HTML error page.
    app.use(express.raw({ type: () => true, limit: "5mb" }));
    app.post("/:version/:node/messages", (req, res) => this.handleSend(req, res));
    this.media.routes(app);
    // Anything else is a path Graph does not know for this token.
    app.use((req, res) => {
      res.status(400).json(
        errorBody({
          code: 100,
          type: "GraphMethodException",
          subcode: 33,
          message: `Unsupported ${req.method.toLowerCase()} request. Object with ID '${req.path.split("/")[2] ?? ""}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        }),
      );
    });
    this.server = app.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Resolves once the asynchronous webhooks already scheduled (windowErrorMode "async") have been posted. */
  async settled(): Promise<void> {
    while (this.timers.size > 0 || this.pending.size > 0) {
      await Promise.allSettled([...this.pending]);
      if (this.timers.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.pending]);
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  // ---- Sending (the hub calls these endpoints) ---------------------------------------------------------

  private handleSend(req: Request, res: Response): void {
    this.requestCount++;
    const arrivedAt = this.clock();
    const node = String(req.params.node);
    const token = this.tokenOf(req);
    const { channel, from } = this.senderOf(node, token);
    const body = parseBody(req.body);
    const to = recipientOf(channel, body);
    const answer = (httpStatus: number, json: unknown) => {
      this.attempts.push({ channel, from, to, at: arrivedAt, httpStatus });
      res.status(httpStatus).json(json);
    };
    try {
      const tokenAccepted = from !== "" ? token === this.tokenFor(from) : this.isProductToken(channel, token);
      if (!tokenAccepted) throw new SendRefused(401, INVALID_TOKEN);
      this.applyInjectedFailure(channel, to);
      if (String(req.params.version) !== this.version || from === "") {
        throw new SendRefused(400, {
          code: 100,
          type: "GraphMethodException",
          subcode: 33,
          message: `Unsupported post request. Object with ID '${node}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        });
      }
      const result =
        channel === "whatsapp"
          ? this.sendWhatsapp(from, body)
          : channel === "instagram"
            ? this.sendInstagram(from, body)
            : this.sendMessenger(from, body);
      answer(200, result);
    } catch (error) {
      if (!(error instanceof SendRefused)) throw error;
      this.refuse(channel, from, to, error.graphError.code);
      answer(error.httpStatus, errorBody(error.graphError));
    }
  }

  /**
   * Which product and node a send is from: the node named in the path; `me` is the Instagram account, else
   * the Page, whose token the request carries. A node the fake does not know gets from "" and the product
   * its token belongs to, so the refusal is recorded on the right channel.
   */
  private senderOf(node: string, token: string | undefined): { channel: Channel; from: string } {
    for (const channel of ["whatsapp", "instagram", "messenger"] as const) {
      if (this.nodesOf(channel).includes(node)) return { channel, from: node };
    }
    if (node === "me" && token !== undefined) {
      for (const channel of ["instagram", "messenger"] as const) {
        const own = this.nodesOf(channel).find((id) => this.tokenFor(id) === token);
        if (own !== undefined) return { channel, from: own };
      }
    }
    const channel = this.isProductToken("instagram", token)
      ? "instagram"
      : this.isProductToken("messenger", token)
        ? "messenger"
        : "whatsapp";
    return { channel, from: "" };
  }

  private tokenOf(req: Request): string | undefined {
    const header = req.get("authorization");
    if (header?.startsWith("Bearer ")) return header.slice("Bearer ".length);
    // Graph also takes the token as a query parameter.
    const query: unknown = req.query.access_token;
    return typeof query === "string" ? query : undefined;
  }

  private refuse(channel: Channel, from: string, to: string, code: number): void {
    if (code === 130429) this.throughputRejectionCount++;
    this.rejected.push({ channel, code, from, to, at: this.clock() });
  }

  /** failNext / errorNext answers come before any validation (after auth), in the order they were queued. */
  private applyInjectedFailure(channel: Channel, to: string): void {
    if (to === "") return;
    const index = this.injected.findIndex((entry) => sameRecipient(entry.to, to));
    if (index < 0) return;
    const [entry] = this.injected.splice(index, 1);
    const failure = entry!.failure;
    if (failure.kind === "pass") return;
    if (failure.kind === "code") throw new SendRefused(failure.httpStatus, this.injectedError(channel, failure.code));
    if (failure.kind === "5xx") {
      throw new SendRefused(
        500,
        channel === "whatsapp"
          ? { ...whatsappError(131000), isTransient: true }
          : {
              code: 2,
              message: "An unexpected error has occurred. Please retry your request later.",
              isTransient: true,
            },
      );
    }
    // 429: Cloud API's throughput error (Meta's table gives it HTTP 429); Graph's app-level limit on Instagram
    // and Messenger.
    throw new SendRefused(
      429,
      channel === "whatsapp"
        ? whatsappError(130429)
        : { code: 4, message: "(#4) Application request limit reached", isTransient: true },
    );
  }

  private injectedError(channel: Channel, code: number): GraphError {
    if (code === 190) return INVALID_TOKEN;
    if (channel !== "whatsapp") return { code, message: `(#${code}) ${WHATSAPP_ERRORS[code]?.title ?? "Error"}` };
    if (code === 131047) return whatsappError(131047, WINDOW_DETAILS);
    return whatsappError(code);
  }

  private sendWhatsapp(from: string, body: Json | undefined): Json {
    const invalid = (details: string) => new SendRefused(400, whatsappError(100, details));
    if (!body) throw invalid("The request body is not valid JSON.");
    if (body.messaging_product !== "whatsapp") throw invalid("The parameter messaging_product is required.");
    // Marking a person's message read (optionally with the typing indicator) names no recipient: only the
    // message, which must be one this phone number received.
    if (body.status !== undefined) return this.markWhatsappRead(from, body, invalid);
    // A person is addressed by phone number (`to`) or by BSUID (`recipient`). Meta lets `to` win when both
    // are given; the fake refuses both, so the hub never depends on which one Meta picks.
    if (body.to !== undefined && body.recipient !== undefined) {
      throw invalid("Give either to (a phone number) or recipient (a business-scoped user id), not both.");
    }
    if (body.to === undefined && body.recipient === undefined) {
      throw invalid("The parameter to is required (or recipient, for a business-scoped user id).");
    }
    let to: string;
    if (body.to !== undefined) {
      if (!nonEmptyString(body.to) || waId(body.to) === "") throw invalid("The parameter to is required.");
      if (isBsuid(body.to)) {
        throw invalid("Param to must be a phone number; a business-scoped user id goes in recipient.");
      }
      to = body.to;
    } else {
      if (!nonEmptyString(body.recipient) || !isBsuid(body.recipient)) {
        throw invalid("Param recipient must be a business-scoped user id such as US.13491208655302741918.");
      }
      to = body.recipient;
    }
    const toUserId = isBsuid(to);
    if (body.recipient_type !== undefined && body.recipient_type !== "individual") {
      throw invalid("Param recipient_type must be one of {INDIVIDUAL, GROUP}.");
    }
    let message: Omit<SentMessage, "id" | "at">;
    if (body.type === "text") {
      const text = body.text;
      if (!isRecord(text) || typeof text.body !== "string") throw invalid("The parameter text['body'] is required.");
      if (text.body.trim() === "") throw invalid("Param text['body'] must be a non-empty string.");
      // Meta counts characters; counting code points keeps emoji from being counted twice.
      if (Array.from(text.body).length > MAX_TEXT_BODY) {
        throw invalid(`Param text['body'] must be at most ${MAX_TEXT_BODY} characters long.`);
      }
      if (text.preview_url !== undefined && typeof text.preview_url !== "boolean") {
        throw invalid("Param text['preview_url'] must be a boolean.");
      }
      message = { channel: "whatsapp", from, to, type: "text", text: text.body };
    } else if (body.type === "template") {
      const template = body.template;
      if (!isRecord(template) || !nonEmptyString(template.name))
        throw invalid("The parameter template['name'] is required.");
      const language = template.language;
      if (!isRecord(language) || !nonEmptyString(language.code)) {
        throw invalid("The parameter template['language']['code'] is required.");
      }
      if (template.components !== undefined && !Array.isArray(template.components)) {
        throw invalid("Param template['components'] must be an array.");
      }
      const templateStatus = this.templateStatus.get(template.name) ?? "APPROVED";
      if (templateStatus === "PAUSED") throw new SendRefused(400, whatsappError(132015));
      if (templateStatus === "DISABLED") throw new SendRefused(400, whatsappError(132016));
      if (!this.templates.includes(template.name) || !["APPROVED", "FLAGGED", "REINSTATED"].includes(templateStatus)) {
        throw new SendRefused(
          400,
          whatsappError(132001, `template name (${template.name}) does not exist in ${language.code}`, 2494073),
        );
      }
      richRule(() =>
        checkTemplateHeader(this.templateHeaders[String(template.name)], template.components as unknown[] | undefined),
      );
      message = {
        channel: "whatsapp",
        from,
        to,
        type: "template",
        template: {
          name: template.name,
          language: language.code,
          ...(template.components !== undefined ? { components: template.components as unknown[] } : {}),
        },
      };
    } else if (typeof body.type === "string" && (MEDIA_TYPES as readonly string[]).includes(body.type)) {
      const type = body.type as MediaType;
      message = { channel: "whatsapp", from, to, type, media: richRule(() => mediaPart(type, body[type])) };
    } else if (body.type === "interactive") {
      message = {
        channel: "whatsapp",
        from,
        to,
        type: "interactive",
        interactive: richRule(() => interactivePart(body.interactive)),
      };
    } else {
      throw invalid(
        typeof body.type === "string"
          ? `Message type ${body.type} is not supported by this fake (only text, template, media and interactive).`
          : "The parameter type is required.",
      );
    }

    // Throughput: at most `mps` accepted sends per phone number in any sliding second.
    const now = this.clock();
    const accepted = this.acceptedAt.get(from) ?? [];
    this.acceptedAt.set(from, accepted);
    while (accepted.length > 0 && (accepted[0] ?? 0) <= now - THROUGHPUT_WINDOW_MS) accepted.shift();
    if (accepted.length >= this.mps) throw new SendRefused(400, whatsappError(130429));

    // The customer service window: free-form messages only within 24 hours of the person's last message
    // to this phone number, whichever of their ids it came with.
    const keys = this.whatsappIdsOf(to).map((person) => windowKey("whatsapp", from, person));
    const times = keys.flatMap((key) => this.lastInbound.whatsapp.get(key) ?? []);
    const last = times.length > 0 ? Math.max(...times) : undefined;
    const outsideWindow = message.type !== "template" && (last === undefined || now - last >= WHATSAPP_WINDOW_MS);
    if (outsideWindow && this.windowErrorMode === "sync") {
      throw new SendRefused(400, whatsappError(131047, WINDOW_DETAILS));
    }

    const id = newWamid(to);
    accepted.push(now);
    this.wamids.set(id, { from, to: toUserId ? to : waId(to) });
    if (outsideWindow) {
      // Accepted by the API, then failed by WhatsApp: refused, not sent.
      this.refuse("whatsapp", from, to, 131047);
      this.scheduleWindowFailure(id);
    } else {
      this.sent.push({ ...message, id, at: now });
      for (const key of keys) {
        this.lastMessageTo.set(key, id);
        if (message.type === "template") this.lastTemplateTo.set(key, id);
      }
    }
    const contact = toUserId ? { input: to, user_id: to } : { input: to, wa_id: waId(to) };
    return { messaging_product: "whatsapp", contacts: [contact], messages: [{ id }] };
  }

  /** `{messaging_product, status: "read", message_id, typing_indicator?: {type: "text"}}` → `{success: true}`. */
  private markWhatsappRead(from: string, body: Json, invalid: (details: string) => SendRefused): Json {
    if (body.status !== "read") throw invalid("Param status must be read.");
    if (!nonEmptyString(body.message_id)) throw invalid("The parameter message_id is required.");
    if (body.to !== undefined || body.recipient !== undefined || body.type !== undefined) {
      throw invalid("A read receipt takes only messaging_product, status, message_id and typing_indicator.");
    }
    const typing = body.typing_indicator;
    if (typing !== undefined && (!isRecord(typing) || typing.type !== "text")) {
      throw invalid("Param typing_indicator['type'] must be text.");
    }
    if (this.inboundWamids.get(body.message_id) !== from) {
      throw invalid(`Invalid message_id: no message ${body.message_id} was received by this phone number.`);
    }
    this.reads.push({ from, messageId: body.message_id, typing: typing !== undefined, at: this.clock() });
    return { success: true };
  }

  private scheduleWindowFailure(wamid: string): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const posting = this.whatsappStatus(wamid, "failed", {
        errors: [{ code: 131047, title: "Re-engagement message", details: WINDOW_DETAILS }],
      }).catch(() => {
        // Already recorded in `webhooks` (status 0 with the error); nobody awaits this post to rethrow to.
      });
      this.pending.add(posting);
      void posting.finally(() => this.pending.delete(posting));
    }, ASYNC_FAILURE_DELAY_MS);
    this.timers.add(timer);
  }

  private sendInstagram(from: string, body: Json | undefined): Json {
    return this.sendMessaging("instagram", from, body);
  }

  private sendMessenger(from: string, body: Json | undefined): Json {
    return this.sendMessaging("messenger", from, body);
  }

  /**
   * Instagram messaging and Messenger share one send API and one policy: anything within 24 hours of the
   * person's last message to this account / Page, up to 7 days only with the HUMAN_AGENT tag. They differ
   * in text length, in whether messaging_type may be left out, and in the window error's wording.
   */
  /** Quick replies (Send API): at most 13, each a text one with a title ≤ 20 characters and a payload ≤ 1,000. */
  private quickReplies(value: unknown, invalid: (details: string) => SendRefused): Pick<SentMessage, "quickReplies"> {
    if (value === undefined) return {};
    if (!Array.isArray(value) || value.length === 0)
      throw invalid("Param message[quick_replies] must be a non-empty array.");
    if (value.length > 13) throw invalid("param message[quick_replies] must have at most 13 elements.");
    return {
      quickReplies: value.map((reply: unknown, i) => {
        if (!isRecord(reply) || reply.content_type !== "text") {
          throw invalid(`Param message[quick_replies][${i}][content_type] must be text.`);
        }
        if (!nonEmptyString(reply.title) || Array.from(reply.title).length > 20) {
          throw invalid(`Param message[quick_replies][${i}][title] must be 1 to 20 characters long.`);
        }
        if (!nonEmptyString(reply.payload) || reply.payload.length > 1000) {
          throw invalid(`Param message[quick_replies][${i}][payload] must be 1 to 1000 characters long.`);
        }
        return { title: reply.title, payload: reply.payload };
      }),
    };
  }

  private sendMessaging(channel: "instagram" | "messenger", from: string, body: Json | undefined): Json {
    const rules =
      channel === "instagram"
        ? {
            maxText: MAX_INSTAGRAM_TEXT,
            window: INSTAGRAM_WINDOW_MS,
            humanAgent: INSTAGRAM_HUMAN_AGENT_MS,
            defaultType: "RESPONSE",
            tagError: "Param tag must be HUMAN_AGENT: it is the only message tag Instagram messaging supports.",
            windowError: "(#10) This message is sent outside of allowed window.",
          }
        : {
            maxText: MAX_MESSENGER_TEXT,
            window: MESSENGER_WINDOW_MS,
            humanAgent: MESSENGER_HUMAN_AGENT_MS,
            // The Messenger Send API lists messaging_type as required.
            defaultType: undefined,
            // Messenger has other tags (ACCOUNT_UPDATE, …) with rules of their own the fake does not model.
            tagError: "Param tag: this fake supports only HUMAN_AGENT.",
            windowError:
              "(#10) This message is sent outside of allowed window. Learn more about the new policy here: " +
              "https://developers.facebook.com/docs/messenger-platform/policy-overview",
          };
    const invalid = (details: string) => new SendRefused(400, { code: 100, message: `(#100) ${details}` });
    if (!body) throw invalid("The request body is not valid JSON.");
    const recipient = body.recipient;
    if (!isRecord(recipient) || !nonEmptyString(recipient.id)) throw invalid("param recipient must be non-empty.");
    const message = body.message;
    if (!isRecord(message)) throw invalid("param message must be non-empty.");
    let sentPart: Pick<SentMessage, "type" | "text" | "media" | "quickReplies">;
    if (message.attachment !== undefined) {
      // An attachment by URL: image, video, audio or file; never with text in the same message.
      if (message.text !== undefined) throw invalid("Only one of message[text] and message[attachment] may be set.");
      const attachment = message.attachment;
      const kinds = ["image", "video", "audio", "file"];
      if (!isRecord(attachment) || !kinds.includes(String(attachment.type))) {
        throw invalid("Param message[attachment][type] must be one of {image, video, audio, file}.");
      }
      const payload = attachment.payload;
      if (!isRecord(payload) || (payload.url === undefined && payload.attachment_id === undefined)) {
        throw invalid("param message[attachment][payload][url] or [attachment_id] is required.");
      }
      if (payload.url !== undefined && !/^https?:\/\//.test(String(payload.url))) {
        throw invalid("Param message[attachment][payload][url] must be a valid URL.");
      }
      const type = attachment.type === "file" ? "document" : (attachment.type as MediaType);
      sentPart = { type, media: { type, ...(payload.url !== undefined ? { link: String(payload.url) } : {}) } };
    } else {
      if (!nonEmptyString(message.text)) throw invalid("Param message[text] must be a non-empty UTF-8 encoded string.");
      if (Array.from(message.text).length > rules.maxText) {
        throw invalid(`Length of param message[text] must be less than or equal to ${rules.maxText}`);
      }
      sentPart = { type: "text", text: message.text, ...this.quickReplies(message.quick_replies, invalid) };
    }
    const messagingType = body.messaging_type ?? rules.defaultType;
    if (messagingType === undefined) throw invalid("The parameter messaging_type is required.");
    if (messagingType !== "RESPONSE" && messagingType !== "UPDATE" && messagingType !== "MESSAGE_TAG") {
      throw invalid("Param messaging_type must be one of {RESPONSE, UPDATE, MESSAGE_TAG}.");
    }
    const tagged = messagingType === "MESSAGE_TAG";
    if (tagged && body.tag !== "HUMAN_AGENT") throw invalid(rules.tagError);

    const now = this.clock();
    const last = this.lastInbound[channel].get(windowKey(channel, from, recipient.id));
    const age = last === undefined ? Infinity : now - last;
    if (age >= rules.humanAgent || (age >= rules.window && !tagged)) {
      throw new SendRefused(400, { code: 10, subcode: 2018278, message: rules.windowError });
    }

    const id = newMid();
    this.sent.push({
      channel,
      id,
      from,
      to: recipient.id,
      ...sentPart,
      ...(tagged ? { tag: "HUMAN_AGENT" } : {}),
      at: now,
    });
    return { recipient_id: recipient.id, message_id: id };
  }

  // ---- Webhooks (the fake calls the hub) ------------------------------------------------------------------

  /**
   * Posts one WhatsApp webhook delivery holding any number of entries, changes, messages and statuses, the
   * way Meta batches them. Each message opens/refreshes its sender's window with that phone number (from
   * the message's own `at`, never moving it back) before the post. Returns the messages' wamids, in order.
   */
  async whatsappWebhook(entries: WhatsAppEntry[]): Promise<{ ids: string[]; status: number }> {
    const ids: string[] = [];
    const body = {
      object: "whatsapp_business_account",
      entry: entries.map((entry) => ({
        id: entry.wabaId ?? FAKE_WABA_ID,
        changes: entry.changes.map((change) => {
          const phoneNumberId = change.phoneNumberId ?? this.phoneNumberId;
          const messages = (change.messages ?? []).map((inbound) => {
            const message = this.whatsappMessage(phoneNumberId, inbound);
            ids.push(String(message.id));
            return message;
          });
          // One contact per person, with the first profile name given for them in this change and the ids
          // their messages carried (wa_id, user_id or both).
          const contacts = new Map<string, { profile: { name?: string }; wa_id?: string; user_id?: string }>();
          for (const m of change.messages ?? []) {
            const wa = m.from ? waId(m.from) : undefined;
            const key = wa ?? this.waIdOfBsuid.get(m.userId ?? "") ?? m.userId ?? "";
            const contact = contacts.get(key) ?? { profile: {} };
            contacts.set(key, contact);
            contact.profile.name ??= m.name;
            if (wa !== undefined) contact.wa_id = wa;
            if (m.userId !== undefined) contact.user_id = m.userId;
          }
          for (const contact of contacts.values()) contact.profile.name ??= "Test Person";
          return {
            value: {
              messaging_product: "whatsapp",
              metadata: {
                display_phone_number: this.displayPhoneNumber(phoneNumberId),
                phone_number_id: phoneNumberId,
              },
              ...(messages.length > 0 ? { contacts: [...contacts.values()], messages } : {}),
              ...(change.statuses
                ? { statuses: change.statuses.map((update) => this.whatsappStatusEntry(update)) }
                : {}),
            },
            field: "messages",
          };
        }),
      })),
    };
    const status = await this.postWebhook(body);
    return { ids, status };
  }

  /**
   * The person writes on WhatsApp (to the first phone number unless `phoneNumberId` says otherwise): opens
   * or refreshes their window from `at`, then posts the `messages` webhook. A button / interactive reply
   * quotes the last template / message sent to them from that number in `context`. The person is a phone
   * number, or `{waId?, userId?}`: a BSUID alone (no `from`, a contact with only user_id) or both ids.
   */
  async whatsappInbound(
    person: string | { waId?: string; userId?: string },
    text: string,
    options: Omit<WhatsAppInbound, "from" | "userId" | "text"> & { phoneNumberId?: string } = {},
  ): Promise<{ id: string; status: number }> {
    const { phoneNumberId, ...message } = options;
    const ids =
      typeof person === "string"
        ? { from: person }
        : {
            ...(person.waId !== undefined ? { from: person.waId } : {}),
            ...(person.userId !== undefined ? { userId: person.userId } : {}),
          };
    const { ids: wamids, status } = await this.whatsappWebhook([
      { changes: [{ ...(phoneNumberId ? { phoneNumberId } : {}), messages: [{ ...ids, text, ...message }] }] },
    ]);
    return { id: wamids[0]!, status };
  }

  /**
   * Meta's `message_template_status_update` for a template (and its status here from now on), as the
   * WhatsApp Business Account webhook sends it: `event`, the template's id, name and language, `reason`
   * ("NONE" when there is none) and its category; `at` is entry[].time.
   */
  async whatsappTemplateStatus(
    name: string,
    language: string,
    event: string,
    options: { reason?: string; category?: string; at?: Date; templateId?: number } = {},
  ): Promise<number> {
    this.templateStatus.set(name, event);
    return this.postWebhook({
      object: "whatsapp_business_account",
      entry: [
        {
          id: FAKE_WABA_ID,
          time: Math.floor((options.at?.getTime() ?? this.clock()) / 1000),
          changes: [
            {
              value: {
                event,
                message_template_id: options.templateId ?? templateIdOf(name),
                message_template_name: name,
                message_template_language: language,
                reason: options.reason ?? "NONE",
                ...(options.category ? { message_template_category: options.category } : {}),
              },
              field: "message_template_status_update",
            },
          ],
        },
      ],
    });
  }

  /** Meta's `template_category_update`: the template's new category (and the one before). */
  async whatsappTemplateCategory(
    name: string,
    language: string,
    category: string,
    options: { previous?: string; at?: Date } = {},
  ): Promise<number> {
    this.templateCategory.set(name, category);
    return this.postWebhook({
      object: "whatsapp_business_account",
      entry: [
        {
          id: FAKE_WABA_ID,
          time: Math.floor((options.at?.getTime() ?? this.clock()) / 1000),
          changes: [
            {
              value: {
                message_template_id: templateIdOf(name),
                message_template_name: name,
                message_template_language: language,
                ...(options.previous ? { previous_category: options.previous } : {}),
                new_category: category,
              },
              field: "template_category_update",
            },
          ],
        },
      ],
    });
  }

  /** Posts a WhatsApp `statuses` webhook for a wamid (from the phone number that sent it); `failed` carries `errors`. */
  async whatsappStatus(
    wamid: string,
    status: WhatsAppStatusUpdate["status"],
    options: Omit<WhatsAppStatusUpdate, "wamid" | "status"> = {},
  ): Promise<number> {
    const phoneNumberId = this.wamids.get(wamid)?.from ?? this.phoneNumberId;
    const { status: answer } = await this.whatsappWebhook([
      { changes: [{ phoneNumberId, statuses: [{ wamid, status, ...options }] }] },
    ]);
    return answer;
  }

  private whatsappMessage(phoneNumberId: string, inbound: WhatsAppInbound): Json {
    const at = inbound.at?.getTime() ?? this.clock();
    const wa = inbound.from ? waId(inbound.from) : undefined;
    const userId = inbound.userId;
    if (wa === undefined && userId === undefined) {
      throw new Error("A WhatsApp inbound message needs the person's phone number (from) or BSUID (userId).");
    }
    if (userId !== undefined && !isBsuid(userId)) throw new Error(`Not a business-scoped user id: ${userId}`);
    if (wa !== undefined && userId !== undefined) {
      this.waIdOfBsuid.set(userId, wa);
      this.bsuidOfWaId.set(wa, userId);
    }
    const person = wa ?? userId!;
    const id = inbound.id ?? newWamid(person);
    this.inboundWamids.set(id, phoneNumberId);
    // Window first: the hub may answer within the webhook request itself. A redelivered old message never
    // moves the window back. Each id the message carried gets it, so a send to either is inside.
    for (const known of [wa, userId]) {
      if (known === undefined) continue;
      const windowOf = windowKey("whatsapp", phoneNumberId, known);
      this.lastInbound.whatsapp.set(windowOf, Math.max(at, this.lastInbound.whatsapp.get(windowOf) ?? 0));
    }
    const key = windowKey("whatsapp", phoneNumberId, person);
    const kind = inbound.kind ?? "text";
    const text = inbound.text;
    // A person known only by BSUID has no `from`; the contact carries their user_id.
    const base = { ...(wa !== undefined ? { from: wa } : {}), id, timestamp: unixSeconds(at) };
    const contextOf = (quoted: string | undefined) =>
      quoted ? { context: { from: this.displayPhoneNumber(phoneNumberId), id: quoted } } : {};
    if (kind === "button") {
      return {
        ...contextOf(this.lastTemplateTo.get(key)),
        ...base,
        type: "button",
        button: { payload: slug(text), text },
      };
    }
    if (kind === "button_reply" || kind === "list_reply") {
      // The tapped choice's id is the one the business gave it in the last interactive message to this person.
      const offered = this.sent
        .filter((m) => m.channel === "whatsapp" && m.from === phoneNumberId && sameRecipient(m.to, person))
        .flatMap((m) => m.interactive?.choices ?? [])
        .filter((choice) => choice.title === text)
        .at(-1)?.id;
      const reply =
        kind === "button_reply"
          ? { button_reply: { id: offered ?? `btn-${slug(text)}`, title: text } }
          : {
              list_reply: { id: offered ?? `row-${slug(text)}`, title: text, description: `Choose "${text}"` },
            };
      return {
        ...contextOf(this.lastMessageTo.get(key)),
        ...base,
        type: "interactive",
        interactive: { type: kind, ...reply },
      };
    }
    if (kind === "image") {
      return {
        ...base,
        type: "image",
        image: {
          ...(text !== "" ? { caption: text } : {}),
          mime_type: "image/jpeg",
          sha256: randomBytes(32).toString("base64"),
          id: String(1_000_000_000_000_000 + Math.floor(Math.random() * 1e15)),
        },
      };
    }
    return { ...base, type: "text", text: { body: text } };
  }

  private whatsappStatusEntry(update: WhatsAppStatusUpdate): Json {
    const at = update.at?.getTime() ?? this.clock();
    const given = update.to !== undefined ? (isBsuid(update.to) ? update.to : waId(update.to)) : undefined;
    const recipient = given ?? this.wamids.get(update.wamid)?.to ?? "";
    const entry: Json = {
      id: update.wamid,
      status: update.status,
      timestamp: unixSeconds(at),
      // A message sent to a BSUID is reported by BSUID.
      ...(isBsuid(recipient) ? { recipient_user_id: recipient } : { recipient_id: recipient }),
    };
    if (update.status === "sent" || update.status === "delivered") {
      // Meta adds billing details to sent/delivered statuses; the hub must tolerate (ignore) them.
      const sent = this.sent.find((message) => message.id === update.wamid);
      const template = sent?.type === "template";
      const category = template
        ? (this.templateCategory.get(sent.template?.name ?? "") ?? "utility").toLowerCase()
        : "service";
      entry.conversation = {
        id: createHash("md5").update(`conversation:${recipient}`).digest("hex"),
        ...(update.status === "sent" ? { expiration_timestamp: unixSeconds(at + WHATSAPP_WINDOW_MS) } : {}),
        origin: { type: category },
      };
      // Per-message pricing (PMP): a template is billed by its category, a reply in the window is free.
      entry.pricing = template
        ? { billable: true, pricing_model: "PMP", category, type: "regular" }
        : { billable: false, pricing_model: "PMP", category: "service", type: "free_customer_service" };
    }
    if (update.errors) {
      entry.errors = update.errors.map((error) => ({
        code: error.code,
        title: error.title,
        message: error.message ?? error.title,
        error_data: { details: error.details ?? error.title },
        href: ERROR_CODES_URL,
      }));
    }
    return entry;
  }

  /**
   * Posts one Instagram webhook delivery holding any number of entries (one per account) and events.
   * Each person's message refreshes their window with that account (from `at`) before the post. Returns
   * the events' mids, in order.
   */
  async instagramWebhook(entries: InstagramEntry[]): Promise<{ ids: string[]; status: number }> {
    const ids: string[] = [];
    const now = this.clock();
    const body = {
      object: "instagram",
      entry: entries.map((entry) => {
        const account = entry.accountId ?? this.igAccountId;
        return {
          id: account,
          time: now,
          messaging: entry.messaging.map((event) => {
            const id = event.id ?? newMid();
            ids.push(id);
            if ("echoTo" in event) {
              return {
                sender: { id: account },
                recipient: { id: event.echoTo },
                timestamp: now,
                message: { mid: id, text: event.text, is_echo: true },
              };
            }
            const at = (event.at ?? new Date(now)).getTime();
            const key = windowKey("instagram", account, event.from);
            this.lastInbound.instagram.set(key, Math.max(at, this.lastInbound.instagram.get(key) ?? 0));
            return {
              sender: { id: event.from },
              recipient: { id: account },
              timestamp: at,
              message: {
                mid: id,
                text: event.text,
                ...(event.quickReplyPayload !== undefined ? { quick_reply: { payload: event.quickReplyPayload } } : {}),
              },
            };
          }),
        };
      }),
    };
    const status = await this.postWebhook(body);
    return { ids, status };
  }

  /**
   * The person taps the quick reply titled `title` of the last message the account sent them that offered
   * one: its text is the title, and the payload is the one the business gave it.
   */
  async instagramQuickReply(from: string, title: string): Promise<{ id: string; status: number }> {
    const offered = this.sent
      .filter((m) => m.channel === "instagram" && m.to === from)
      .flatMap((m) => m.quickReplies ?? [])
      .filter((reply) => reply.title === title)
      .at(-1);
    if (!offered) throw new Error(`no quick reply titled ${title} was offered to ${from}`);
    const { ids, status } = await this.instagramWebhook([
      { messaging: [{ from, text: title, quickReplyPayload: offered.payload }] },
    ]);
    return { id: ids[0]!, status };
  }

  /** The person writes on Instagram: refreshes their window (from `at`) and posts the messaging webhook. */
  async instagramInbound(
    from: string,
    text: string,
    options: { at?: Date; id?: string; accountId?: string } = {},
  ): Promise<{ id: string; status: number }> {
    const { accountId, ...event } = options;
    const { ids, status } = await this.instagramWebhook([
      { ...(accountId ? { accountId } : {}), messaging: [{ from, text, ...event }] },
    ]);
    return { id: ids[0]!, status };
  }

  /** An echo of a message the business account sent (from any app or the Instagram inbox). */
  async instagramEcho(
    to: string,
    text: string,
    options: { id?: string; accountId?: string } = {},
  ): Promise<{ id: string; status: number }> {
    const { accountId, ...event } = options;
    const { ids, status } = await this.instagramWebhook([
      { ...(accountId ? { accountId } : {}), messaging: [{ echoTo: to, text, ...event }] },
    ]);
    return { id: ids[0]!, status };
  }

  /**
   * Posts one Messenger webhook delivery (object "page") for any number of Pages and events. Meta puts one
   * event in each entry's `messaging` array, so each event becomes an entry of its own, in order. A
   * person's message or postback refreshes their window with that Page (from `at`) before the post. Returns
   * the events' mids, in order.
   */
  async messengerWebhook(entries: MessengerEntry[]): Promise<{ ids: string[]; status: number }> {
    const ids: string[] = [];
    const now = this.clock();
    const body = {
      object: "page",
      entry: entries.flatMap((entry) => {
        const page = entry.pageId ?? this.pageId;
        return entry.messaging.map((event) => {
          const id = event.id ?? newMid();
          ids.push(id);
          if ("echoTo" in event) {
            return {
              id: page,
              time: now,
              messaging: [
                {
                  sender: { id: page },
                  recipient: { id: event.echoTo },
                  timestamp: now,
                  message: {
                    mid: id,
                    text: event.text,
                    is_echo: true,
                    ...(event.appId !== undefined ? { app_id: event.appId } : {}),
                  },
                },
              ],
            };
          }
          // A postback opens the window just as a message does: both are the person acting.
          const at = (event.at ?? new Date(now)).getTime();
          const key = windowKey("messenger", page, event.from);
          this.lastInbound.messenger.set(key, Math.max(at, this.lastInbound.messenger.get(key) ?? 0));
          const content =
            "postback" in event
              ? {
                  postback: {
                    mid: id,
                    title: event.postback.title,
                    payload: event.postback.payload ?? slug(event.postback.title).toUpperCase(),
                  },
                }
              : {
                  message: {
                    mid: id,
                    text: event.text,
                    ...(event.quickReplyPayload !== undefined
                      ? { quick_reply: { payload: event.quickReplyPayload } }
                      : {}),
                  },
                };
          return {
            id: page,
            time: now,
            messaging: [{ sender: { id: event.from }, recipient: { id: page }, timestamp: at, ...content }],
          };
        });
      }),
    };
    const status = await this.postWebhook(body);
    return { ids, status };
  }

  /** The person writes to a Page on Messenger: refreshes their window (from `at`) and posts the webhook. */
  async messengerInbound(
    from: string,
    text: string,
    options: { at?: Date; id?: string; pageId?: string } = {},
  ): Promise<{ id: string; status: number }> {
    const { pageId, ...event } = options;
    const { ids, status } = await this.messengerWebhook([
      { ...(pageId ? { pageId } : {}), messaging: [{ from, text, ...event }] },
    ]);
    return { id: ids[0]!, status };
  }

  /**
   * The person taps the quick reply titled `title` of the last message the Page sent them that offered one:
   * its text is the title, and the payload is the one the business gave it.
   */
  async messengerQuickReply(from: string, title: string): Promise<{ id: string; status: number }> {
    const offered = this.sent
      .filter((m) => m.channel === "messenger" && m.to === from)
      .flatMap((m) => m.quickReplies ?? [])
      .filter((reply) => reply.title === title)
      .at(-1);
    if (!offered) throw new Error(`no quick reply titled ${title} was offered to ${from}`);
    const { ids, status } = await this.messengerWebhook([
      { messaging: [{ from, text: title, quickReplyPayload: offered.payload }] },
    ]);
    return { id: ids[0]!, status };
  }

  /** The person taps a postback button (`title`; `payload` as the button was built, by default from the title). */
  async messengerPostback(
    from: string,
    title: string,
    options: { payload?: string; at?: Date; id?: string; pageId?: string } = {},
  ): Promise<{ id: string; status: number }> {
    const { pageId, payload, ...event } = options;
    const { ids, status } = await this.messengerWebhook([
      {
        ...(pageId ? { pageId } : {}),
        messaging: [{ from, postback: { title, ...(payload !== undefined ? { payload } : {}) }, ...event }],
      },
    ]);
    return { id: ids[0]!, status };
  }

  /** An echo of a message the Page sent (from any app, `appId` when one did, or the Page inbox). */
  async messengerEcho(
    to: string,
    text: string,
    options: { id?: string; pageId?: string; appId?: number } = {},
  ): Promise<{ id: string; status: number }> {
    const { pageId, ...event } = options;
    const { ids, status } = await this.messengerWebhook([
      { ...(pageId ? { pageId } : {}), messaging: [{ echoTo: to, text, ...event }] },
    ]);
    return { id: ids[0]!, status };
  }

  /**
   * Posts a webhook body, serialised as Meta does and signed with the app secret; `signature` replaces the
   * X-Hub-Signature-256 value (pass "" to send none). Returns the hub's HTTP status.
   */
  async postWebhook(body: unknown, options: { signature?: string } = {}): Promise<number> {
    if (!this.hubWebhookUrl) {
      const error = new Error("FakeGraph.hubWebhookUrl is not set");
      this.webhooks.push({ body, status: 0, error: error.message });
      throw error;
    }
    const raw = metaJson(body);
    const headers: Record<string, string> = { "Content-Type": "application/json", "User-Agent": "facebookexternalua" };
    if (options.signature === undefined) {
      headers["X-Hub-Signature-256"] = signMetaBody(this.appSecret, raw);
      // Meta still sends the legacy SHA-1 header alongside.
      headers["X-Hub-Signature"] = `sha1=${createHmac("sha1", this.appSecret).update(raw).digest("hex")}`;
    } else if (options.signature !== "") {
      headers["X-Hub-Signature-256"] = options.signature;
    }
    try {
      const res = await fetch(this.hubWebhookUrl, { method: "POST", headers, body: raw });
      await res.arrayBuffer(); // drain, so the connection is released
      this.webhooks.push({ body, status: res.status });
      return res.status;
    } catch (error) {
      this.webhooks.push({ body, status: 0, error: String(error) });
      throw error;
    }
  }
}

/**
 * A window's key: one business account (phone number id / Instagram account id / Page id) and one id of a
 * person (on WhatsApp their wa_id or their BSUID; a person known by both has a key for each).
 */
function windowKey(channel: Channel, account: string, person: string): string {
  return `${account} ${channel === "whatsapp" && !isBsuid(person) ? waId(person) : person}`;
}

/** Whether two recipients are the same person: wa_ids compare by digits ("+1 555…" is "1555…"), others as given. */
function sameRecipient(a: string, b: string): boolean {
  if (a === b) return true;
  const digitsOnly = (value: string) => /^[\d\s+()-]+$/.test(value);
  return digitsOnly(a) && digitsOnly(b) && waId(a) === waId(b);
}

/** A developer-chosen id or payload for a label: "Ver resultados" → "ver_resultados". */
function slug(text: string): string {
  return (
    text
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "_")
      .replace(/^_|_$/g, "") || "option"
  );
}

function parseBody(raw: unknown): Json | undefined {
  if (!Buffer.isBuffer(raw) || raw.length === 0) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw.toString("utf8"));
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Best-effort recipient of a (possibly malformed) send request, for the `rejected` log. */
/** A template's id as Meta would number it (stable per name). */
function templateIdOf(name: string): number {
  return 1_000_000_000_000_000 + (parseInt(createHash("md5").update(name).digest("hex").slice(0, 12), 16) % 1e15);
}

function recipientOf(channel: Channel, body: Json | undefined): string {
  if (!body) return "";
  if (channel === "whatsapp") {
    return typeof body.to === "string" ? body.to : typeof body.recipient === "string" ? body.recipient : "";
  }
  const recipient = body.recipient;
  return isRecord(recipient) && typeof recipient.id === "string" ? recipient.id : "";
}

/**
 * The hub's Meta settings for a given fake: WhatsApp (its first number), Instagram (its first account) and
 * Messenger (its first Page) on, each with the token that node accepts, Graph API URLs at the fake.
 */
export function metaEnvFor(graph: FakeGraph, appSecret: string): Record<string, string> {
  return {
    META_APP_SECRET: appSecret,
    WA_PHONE_NUMBER_ID: graph.phoneNumberId,
    WA_ACCESS_TOKEN: graph.tokenFor(graph.phoneNumberId),
    IG_ACCOUNT_ID: graph.igAccountId,
    IG_ACCESS_TOKEN: graph.tokenFor(graph.igAccountId),
    FB_PAGE_ID: graph.pageId,
    FB_PAGE_ACCESS_TOKEN: graph.tokenFor(graph.pageId),
    GRAPH_API_URL: graph.url,
    IG_GRAPH_API_URL: graph.url,
    GRAPH_API_VERSION: graph.version,
  };
}
