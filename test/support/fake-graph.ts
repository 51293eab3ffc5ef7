// A local stand-in for Meta's Graph API, the one outside service the project may fake. It answers the
// WhatsApp Cloud API and Instagram messaging send endpoints with Meta's documented success and error
// bodies, enforces the rules the hub has to live with (24-hour windows, the Instagram HUMAN_AGENT tag,
// 80 messages/second per phone number, approved template names, OAuth tokens), and emits Meta's webhooks
// to the hub signed the way Meta signs them. Tests steer it (injected failures, window state) and read
// back what it accepted or refused.
//
// Deliberately independent of the hub's own code: it signs, serialises and validates on its own, so a
// bug shared between the hub and a helper it exports cannot hide.
import { createHash, createHmac, randomBytes } from "node:crypto";
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Request, type Response } from "express";

export interface FakeGraphOptions {
  version?: string;
  phoneNumberId?: string;
  waToken?: string;
  igAccountId?: string;
  igToken?: string;
  /** Signs webhooks: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>. */
  appSecret?: string;
  /** Where to POST webhooks; can be set later via the property. */
  hubWebhookUrl?: string;
  /** Messages per second allowed per phone number (Cloud API default: 80). */
  mps?: number;
  /** Approved WhatsApp template names. */
  templates?: string[];
}

export type Channel = "whatsapp" | "instagram";

export interface SentMessage {
  channel: Channel;
  /** wamid ("wamid.<base64>") or Instagram mid ("m_..."). */
  id: string;
  /** WhatsApp `to` as the hub sent it / Instagram recipient.id. */
  to: string;
  type: "text" | "template";
  text?: string;
  template?: { name: string; language: string; components?: unknown[] };
  /** Instagram: the tag, when messaging_type = MESSAGE_TAG. */
  tag?: string;
  /** Date.now() when accepted. */
  at: number;
}

export interface RejectedSend {
  channel: Channel;
  code: number;
  to: string;
  at: number;
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

/** The WhatsApp Business Account id the webhooks carry in entry[].id. */
export const FAKE_WABA_ID = "2222222222222222";
/** metadata.display_phone_number in WhatsApp webhooks. */
export const FAKE_DISPLAY_PHONE_NUMBER = "15550000000";

const HOUR_MS = 3_600_000;
const WHATSAPP_WINDOW_MS = 24 * HOUR_MS;
const INSTAGRAM_WINDOW_MS = 24 * HOUR_MS;
const INSTAGRAM_HUMAN_AGENT_MS = 7 * 24 * HOUR_MS;
const THROUGHPUT_WINDOW_MS = 1000;
/** Delay before the `failed` status webhook in windowErrorMode "async" (Meta sends it shortly after the 200). */
const ASYNC_FAILURE_DELAY_MS = 50;
const MAX_TEXT_BODY = 4096;
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
  131056: {
    title: "(Business Account, Consumer Account) pair rate limit hit",
    details:
      "Message failed to send because there were too many messages sent from this phone number to the same phone " +
      "number in a short period of time.",
  },
  132000: {
    title: "Number of parameters does not match the expected number of params",
    details: "The number of variable parameter values does not match the number of variables the template defines.",
  },
  132001: {
    title: "Template name does not exist in the translation",
    details: "The template does not exist in the specified language or it has not been approved.",
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

type InjectedFailure = { kind: "5xx" | "429" } | { kind: "code"; code: number; httpStatus: number };

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
  readonly rejected: RejectedSend[] = [];
  /** Every webhook posted to the hub, in order, with the hub's answer. */
  readonly webhooks: PostedWebhook[] = [];
  /**
   * How 131047 (outside the 24-hour window) is reported for WhatsApp. "sync": a 400 error response.
   * "async": accepted with a wamid (recorded in `rejected`, not `sent`), then a `failed` status webhook
   * carrying errors[{code: 131047}] ~50 ms later — which is how Cloud API itself reports it.
   */
  windowErrorMode: "sync" | "async" = "sync";

  readonly version: string;
  readonly phoneNumberId: string;
  readonly waToken: string;
  readonly igAccountId: string;
  readonly igToken: string;
  readonly appSecret: string;
  readonly mps: number;
  readonly templates: readonly string[];

  private server: Server | undefined;
  private requestCount = 0;
  private throughputRejectionCount = 0;
  private readonly injected: InjectedFailure[] = [];
  /** Accepted WhatsApp sends (Date.now()), oldest first, for the sliding one-second throughput window. */
  private readonly acceptedAt: number[] = [];
  /** Last inbound message time (ms) per person: WhatsApp keyed by wa_id, Instagram by IGSID. */
  private readonly lastInbound = { whatsapp: new Map<string, number>(), instagram: new Map<string, number>() };
  /** wamid → recipient, so status webhooks can carry recipient_id. */
  private readonly wamidRecipients = new Map<string, string>();
  /** Last template wamid per wa_id: a quick-reply button webhook quotes it in `context`. */
  private readonly lastTemplateTo = new Map<string, string>();
  private readonly lastMessageTo = new Map<string, string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly pending = new Set<Promise<unknown>>();

  constructor(options: FakeGraphOptions = {}) {
    this.version = options.version ?? "v21.0";
    this.phoneNumberId = options.phoneNumberId ?? "1111111111";
    this.waToken = options.waToken ?? "wa-token-for-tests";
    this.igAccountId = options.igAccountId ?? "17841400000000001";
    this.igToken = options.igToken ?? "ig-token-for-tests";
    this.appSecret = options.appSecret ?? "app-secret-for-tests";
    this.hubWebhookUrl = options.hubWebhookUrl ?? "";
    this.mps = options.mps ?? 80;
    this.templates = options.templates ?? ["results_ready", "hub_default"];
  }

  /** Count of send requests received on either channel, accepted or not. */
  get requests(): number {
    return this.requestCount;
  }

  /** Count of 130429 answers given (the fake's own throughput limit, plus any injected 130429). */
  get throughputRejections(): number {
    return this.throughputRejectionCount;
  }

  /** Answer the next n send requests (either channel) with HTTP 500 / HTTP 429 and Meta's error body. */
  failNext(n: number, kind: "5xx" | "429"): void {
    for (let i = 0; i < n; i++) this.injected.push({ kind });
  }

  /** Answer the next n WhatsApp sends with the given Meta error code and HTTP status (400 by default). */
  errorNext(n: number, code: number, httpStatus = 400): void {
    for (let i = 0; i < n; i++) this.injected.push({ kind: "code", code, httpStatus });
  }

  /** Sets a person's window (their last inbound message time) without posting a webhook. */
  setLastInbound(channel: Channel, who: string, at: Date): void {
    this.lastInbound[channel].set(channel === "whatsapp" ? waId(who) : who, at.getTime());
  }

  async start(): Promise<this> {
    const app = express();
    app.disable("x-powered-by");
    // Raw bytes, parsed by the handlers themselves, so a body that is not JSON is still counted as a send
    // request and answered with Meta's code 100 rather than Express's HTML error page.
    app.use(express.raw({ type: () => true, limit: "5mb" }));
    app.post("/:version/:node/messages", (req, res) => this.handleSend(req, res));
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
    const node = String(req.params.node);
    const token = this.tokenOf(req);
    // Which product the request is for: by node id, else by token (an unknown node is still refused with
    // the right channel recorded).
    const channel: Channel =
      node === this.phoneNumberId
        ? "whatsapp"
        : node === this.igAccountId
          ? "instagram"
          : token === this.igToken
            ? "instagram"
            : "whatsapp";
    const body = parseBody(req.body);
    const to = recipientOf(channel, body);
    try {
      if (token !== (channel === "whatsapp" ? this.waToken : this.igToken)) throw new SendRefused(401, INVALID_TOKEN);
      this.applyInjectedFailure(channel);
      const nodeOk = channel === "whatsapp" ? node === this.phoneNumberId : node === this.igAccountId || node === "me";
      if (String(req.params.version) !== this.version || !nodeOk) {
        throw new SendRefused(400, {
          code: 100,
          type: "GraphMethodException",
          subcode: 33,
          message: `Unsupported post request. Object with ID '${node}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        });
      }
      const result = channel === "whatsapp" ? this.sendWhatsapp(body) : this.sendInstagram(body);
      res.status(200).json(result);
    } catch (error) {
      if (!(error instanceof SendRefused)) throw error;
      this.refuse(channel, to, error.graphError.code);
      res.status(error.httpStatus).json(errorBody(error.graphError));
    }
  }

  private tokenOf(req: Request): string | undefined {
    const header = req.get("authorization");
    if (header?.startsWith("Bearer ")) return header.slice("Bearer ".length);
    // Graph also takes the token as a query parameter.
    const query: unknown = req.query.access_token;
    return typeof query === "string" ? query : undefined;
  }

  private refuse(channel: Channel, to: string, code: number): void {
    if (code === 130429) this.throughputRejectionCount++;
    this.rejected.push({ channel, code, to, at: Date.now() });
  }

  /** failNext / errorNext answers come before any validation (after auth), in the order they were queued. */
  private applyInjectedFailure(channel: Channel): void {
    // errorNext is WhatsApp-only: on Instagram, skip over queued WhatsApp codes to the first failNext entry.
    const index = this.injected.findIndex((failure) => channel === "whatsapp" || failure.kind !== "code");
    if (index < 0) return;
    const [failure] = this.injected.splice(index, 1);
    if (!failure) return;
    if (failure.kind === "code") throw new SendRefused(failure.httpStatus, this.injectedError(failure.code));
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
    // 429: Cloud API's throughput error (Meta's table gives it HTTP 429); Graph's app-level limit on Instagram.
    throw new SendRefused(
      429,
      channel === "whatsapp"
        ? whatsappError(130429)
        : { code: 4, message: "(#4) Application request limit reached", isTransient: true },
    );
  }

  private injectedError(code: number): GraphError {
    if (code === 190) return INVALID_TOKEN;
    if (code === 131047) return whatsappError(131047, WINDOW_DETAILS);
    return whatsappError(code);
  }

  private sendWhatsapp(body: Json | undefined): Json {
    const invalid = (details: string) => new SendRefused(400, whatsappError(100, details));
    if (!body) throw invalid("The request body is not valid JSON.");
    if (body.messaging_product !== "whatsapp") throw invalid("The parameter messaging_product is required.");
    if (!nonEmptyString(body.to) || waId(body.to) === "") throw invalid("The parameter to is required.");
    if (body.recipient_type !== undefined && body.recipient_type !== "individual") {
      throw invalid("Param recipient_type must be one of {INDIVIDUAL, GROUP}.");
    }
    const to = body.to;
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
      message = { channel: "whatsapp", to, type: "text", text: text.body };
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
      if (!this.templates.includes(template.name)) {
        throw new SendRefused(
          400,
          whatsappError(132001, `template name (${template.name}) does not exist in ${language.code}`, 2494073),
        );
      }
      message = {
        channel: "whatsapp",
        to,
        type: "template",
        template: {
          name: template.name,
          language: language.code,
          ...(template.components !== undefined ? { components: template.components as unknown[] } : {}),
        },
      };
    } else {
      throw invalid(
        typeof body.type === "string"
          ? `Message type ${body.type} is not supported by this fake (only text and template).`
          : "The parameter type is required.",
      );
    }

    // Throughput: at most `mps` accepted sends per phone number in any sliding second.
    const now = Date.now();
    while (this.acceptedAt.length > 0 && (this.acceptedAt[0] ?? 0) <= now - THROUGHPUT_WINDOW_MS)
      this.acceptedAt.shift();
    if (this.acceptedAt.length >= this.mps) throw new SendRefused(400, whatsappError(130429));

    // The customer service window: free-form messages only within 24 hours of the person's last message.
    const last = this.lastInbound.whatsapp.get(waId(to));
    const outsideWindow = message.type !== "template" && (last === undefined || now - last >= WHATSAPP_WINDOW_MS);
    if (outsideWindow && this.windowErrorMode === "sync") {
      throw new SendRefused(400, whatsappError(131047, WINDOW_DETAILS));
    }

    const id = newWamid(to);
    this.acceptedAt.push(now);
    this.wamidRecipients.set(id, waId(to));
    if (outsideWindow) {
      // Accepted by the API, then failed by WhatsApp: refused, not sent.
      this.refuse("whatsapp", to, 131047);
      this.scheduleWindowFailure(id);
    } else {
      this.sent.push({ ...message, id, at: now });
      this.lastMessageTo.set(waId(to), id);
      if (message.type === "template") this.lastTemplateTo.set(waId(to), id);
    }
    return { messaging_product: "whatsapp", contacts: [{ input: to, wa_id: waId(to) }], messages: [{ id }] };
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

  private sendInstagram(body: Json | undefined): Json {
    const invalid = (details: string) => new SendRefused(400, { code: 100, message: `(#100) ${details}` });
    if (!body) throw invalid("The request body is not valid JSON.");
    const recipient = body.recipient;
    if (!isRecord(recipient) || !nonEmptyString(recipient.id)) throw invalid("param recipient must be non-empty.");
    const message = body.message;
    if (!isRecord(message)) throw invalid("param message must be non-empty.");
    if (!nonEmptyString(message.text)) throw invalid("Param message[text] must be a non-empty UTF-8 encoded string.");
    const messagingType = body.messaging_type ?? "RESPONSE";
    if (messagingType !== "RESPONSE" && messagingType !== "UPDATE" && messagingType !== "MESSAGE_TAG") {
      throw invalid("Param messaging_type must be one of {RESPONSE, UPDATE, MESSAGE_TAG}.");
    }
    const tagged = messagingType === "MESSAGE_TAG";
    if (tagged && body.tag !== "HUMAN_AGENT") {
      throw invalid("Param tag must be HUMAN_AGENT: it is the only message tag Instagram messaging supports.");
    }

    // Within 24h of the person's last message anything goes; up to 7 days only with the HUMAN_AGENT tag.
    const now = Date.now();
    const last = this.lastInbound.instagram.get(recipient.id);
    const age = last === undefined ? Infinity : now - last;
    if (age >= INSTAGRAM_HUMAN_AGENT_MS || (age >= INSTAGRAM_WINDOW_MS && !tagged)) {
      throw new SendRefused(400, {
        code: 10,
        subcode: 2018278,
        message: "(#10) This message is sent outside of allowed window.",
      });
    }

    const id = newMid();
    this.sent.push({
      channel: "instagram",
      id,
      to: recipient.id,
      type: "text",
      text: message.text,
      ...(tagged ? { tag: "HUMAN_AGENT" } : {}),
      at: now,
    });
    return { recipient_id: recipient.id, message_id: id };
  }

  // ---- Webhooks (the fake calls the hub) ------------------------------------------------------------------

  /**
   * The person writes on WhatsApp: opens/refreshes their 24-hour window (from `at`), then posts the
   * `messages` webhook. A button/interactive reply quotes the last template/message sent to them in `context`.
   */
  async whatsappInbound(
    from: string,
    text: string,
    options: { at?: Date; kind?: "text" | "button" | "interactive" | "image"; name?: string; id?: string } = {},
  ): Promise<{ id: string; status: number }> {
    const at = (options.at ?? new Date()).getTime();
    const wa = waId(from);
    const id = options.id ?? newWamid(wa);
    // Window first: the hub may answer within the webhook request itself.
    this.lastInbound.whatsapp.set(wa, at);
    const kind = options.kind ?? "text";
    const base = { from: wa, id, timestamp: unixSeconds(at) };
    const contextOf = (quoted: string | undefined) =>
      quoted ? { context: { from: FAKE_DISPLAY_PHONE_NUMBER, id: quoted } } : {};
    let message: Json;
    if (kind === "button") {
      message = { ...contextOf(this.lastTemplateTo.get(wa)), ...base, type: "button", button: { payload: text, text } };
    } else if (kind === "interactive") {
      message = {
        ...contextOf(this.lastMessageTo.get(wa)),
        ...base,
        type: "interactive",
        interactive: { type: "button_reply", button_reply: { id: text, title: text } },
      };
    } else if (kind === "image") {
      message = {
        ...base,
        type: "image",
        image: {
          ...(text !== "" ? { caption: text } : {}),
          mime_type: "image/jpeg",
          sha256: randomBytes(32).toString("base64"),
          id: String(1_000_000_000_000_000 + Math.floor(Math.random() * 1e15)),
        },
      };
    } else {
      message = { ...base, type: "text", text: { body: text } };
    }
    const status = await this.postWebhook(
      this.whatsappEnvelope({
        contacts: [{ profile: { name: options.name ?? "Test Person" }, wa_id: wa }],
        messages: [message],
      }),
    );
    return { id, status };
  }

  /** Posts a WhatsApp `statuses` webhook for a wamid; `failed` carries `errors`. */
  async whatsappStatus(
    wamid: string,
    status: "sent" | "delivered" | "read" | "failed",
    options: { errors?: StatusError[]; at?: Date; to?: string } = {},
  ): Promise<number> {
    const at = (options.at ?? new Date()).getTime();
    const recipient = options.to !== undefined ? waId(options.to) : (this.wamidRecipients.get(wamid) ?? "");
    const entry: Json = { id: wamid, status, timestamp: unixSeconds(at), recipient_id: recipient };
    if (status === "sent" || status === "delivered") {
      // Meta adds billing details to sent/delivered statuses; the hub must tolerate (ignore) them.
      const template = this.sent.find((message) => message.id === wamid)?.type === "template";
      entry.conversation = {
        id: createHash("md5").update(`conversation:${recipient}`).digest("hex"),
        ...(status === "sent" ? { expiration_timestamp: unixSeconds(at + WHATSAPP_WINDOW_MS) } : {}),
        origin: { type: template ? "utility" : "service" },
      };
      entry.pricing = { billable: true, pricing_model: "CBP", category: template ? "utility" : "service" };
    }
    if (options.errors) {
      entry.errors = options.errors.map((error) => ({
        code: error.code,
        title: error.title,
        message: error.message ?? error.title,
        error_data: { details: error.details ?? error.title },
        href: ERROR_CODES_URL,
      }));
    }
    return this.postWebhook(this.whatsappEnvelope({ statuses: [entry] }));
  }

  /** The person writes on Instagram: refreshes their window (from `at`) and posts the messaging webhook. */
  async instagramInbound(
    from: string,
    text: string,
    options: { at?: Date; id?: string } = {},
  ): Promise<{ id: string; status: number }> {
    const at = (options.at ?? new Date()).getTime();
    const id = options.id ?? newMid();
    this.lastInbound.instagram.set(from, at);
    const status = await this.postWebhook(
      this.instagramEnvelope(at, {
        sender: { id: from },
        recipient: { id: this.igAccountId },
        timestamp: at,
        message: { mid: id, text },
      }),
    );
    return { id, status };
  }

  /** An echo of a message the business account sent (from any app or the Instagram inbox). */
  async instagramEcho(
    to: string,
    text: string,
    options: { id?: string } = {},
  ): Promise<{ id: string; status: number }> {
    const at = Date.now();
    const id = options.id ?? newMid();
    const status = await this.postWebhook(
      this.instagramEnvelope(at, {
        sender: { id: this.igAccountId },
        recipient: { id: to },
        timestamp: at,
        message: { mid: id, text, is_echo: true },
      }),
    );
    return { id, status };
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

  private whatsappEnvelope(value: Json): Json {
    return {
      object: "whatsapp_business_account",
      entry: [
        {
          id: FAKE_WABA_ID,
          changes: [
            {
              value: {
                messaging_product: "whatsapp",
                metadata: { display_phone_number: FAKE_DISPLAY_PHONE_NUMBER, phone_number_id: this.phoneNumberId },
                ...value,
              },
              field: "messages",
            },
          ],
        },
      ],
    };
  }

  private instagramEnvelope(at: number, messaging: Json): Json {
    return { object: "instagram", entry: [{ id: this.igAccountId, time: at, messaging: [messaging] }] };
  }
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
function recipientOf(channel: Channel, body: Json | undefined): string {
  if (!body) return "";
  if (channel === "whatsapp") return typeof body.to === "string" ? body.to : "";
  const recipient = body.recipient;
  return isRecord(recipient) && typeof recipient.id === "string" ? recipient.id : "";
}

/** The hub's Meta settings for a given fake: WhatsApp and Instagram on, Graph API URLs at the fake. */
export function metaEnvFor(graph: FakeGraph, appSecret: string): Record<string, string> {
  return {
    META_APP_SECRET: appSecret,
    WA_PHONE_NUMBER_ID: "1111111111",
    WA_ACCESS_TOKEN: "wa-token-for-tests",
    IG_ACCOUNT_ID: "17841400000000001",
    IG_ACCESS_TOKEN: "ig-token-for-tests",
    GRAPH_API_URL: graph.url,
    IG_GRAPH_API_URL: graph.url,
    GRAPH_API_VERSION: "v21.0",
  };
}
