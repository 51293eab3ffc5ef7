// A local stand-in for Twilio's Programmable Messaging API, the one outside service SMS tests may fake. It
// answers `POST /2010-04-01/Accounts/{Sid}/Messages.json` with Twilio's documented Message resource and error
// bodies ({code, message, more_info, status}), refusing what Twilio refuses: wrong credentials (401, 20003),
// no To (21604), neither From nor MessagingServiceSid (21603), a From the account does not own (21606), an
// invalid or non-mobile To (21211, 21614), no Body and no MediaUrl (21602), a Body over 1,600 characters
// (21617), more than 10 MediaUrl (21623), a person who opted out of that sender (21610). It posts signed
// status callbacks (queued → sent → delivered, or undelivered / failed with an ErrorCode) to the message's
// StatusCallback, posts signed inbound messages to the hub — keeping Advanced Opt-Out's list as Twilio does:
// STOP unsubscribes the person from that number, START subscribes them again — and serves MMS files behind
// the account's basic auth.
//
// Deliberately independent of the hub's own code: it signs and parses on its own, so a bug shared between the
// hub and a helper it exports cannot hide.
import { createHmac, randomBytes } from "node:crypto";
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Request, type Response } from "express";

export const TWILIO_ACCOUNT_SID = `AC${"0123456789abcdef".repeat(2)}`;
export const TWILIO_AUTH_TOKEN = "twilio-auth-token-for-tests";

export interface SentSms {
  sid: string;
  from: string;
  to: string;
  body: string;
  mediaUrls: string[];
  statusCallback: string | undefined;
  messagingServiceSid: string | undefined;
}

export interface RefusedSms {
  httpStatus: number;
  code: number;
  fields: Record<string, string[]>;
}

/** What happens to a message after Twilio took it: delivered, or not with a carrier's error code. */
export type Fate = { status: "delivered" } | { status: "undelivered" | "failed"; errorCode: number };

const OPT_OUT = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"];
const OPT_IN = ["START", "UNSTOP", "YES"];
const HELP = ["HELP", "INFO"];

const sid = (prefix: string) => `${prefix}${randomBytes(16).toString("hex")}`;

/** Twilio's signature: base64 HMAC-SHA1 of the URL followed by each field's name and value, by name. */
export function signTwilio(token: string, url: string, fields: [string, string][]): string {
  const sorted = [...fields].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHmac("sha1", token)
    .update(url + sorted.map(([name, value]) => name + value).join(""))
    .digest("base64");
}

export class FakeTwilio {
  readonly sent: SentSms[] = [];
  readonly refused: RefusedSms[] = [];
  /** Callbacks posted to the hub, with the hub's answer. */
  readonly callbacks: { sid: string; status: string; answer: number }[] = [];
  /** "from|to" pairs Twilio will not write to (the person sent STOP to that number). */
  readonly unsubscribed = new Set<string>();
  /** Numbers that are valid but not mobile (21614). */
  readonly landlines = new Set<string>();
  /** The fate of the next messages to a number (consumed in order); delivered otherwise. */
  readonly fates = new Map<string, Fate[]>();
  /** Answer the next sends with this HTTP status (429 or 5xx), without taking them. */
  failNext: { count: number; httpStatus: number } = { count: 0, httpStatus: 500 };
  /** The hub's public URL, where callbacks and inbound messages go. */
  hubUrl = "";
  url = "";
  private server: Server | undefined;
  private readonly media = new Map<string, { contentType: string; bytes: Buffer }>();
  /** Which of the account's numbers each person last wrote to (a Messaging Service's sticky sender). */
  private readonly sticky = new Map<string, string>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly numbers: string[],
    readonly options: { messagingServiceSid?: string; callbackDelayMs?: number } = {},
  ) {}

  async start(): Promise<this> {
    const app = express();
    app.use(express.raw({ type: "application/x-www-form-urlencoded", limit: "1mb" }));
    app.post("/2010-04-01/Accounts/:sid/Messages.json", (req, res) => this.create(req, res));
    app.get("/2010-04-01/Accounts/:sid/Messages/:message/Media/:media", (req, res) => {
      if (!this.authorised(req)) return void this.error(res, 401, 20003, "Authenticate");
      const file = this.media.get(String(req.params.media));
      if (!file) return void this.error(res, 404, 20404, "The requested resource was not found");
      res.type(file.contentType).send(file.bytes);
    });
    this.server = app.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private authorised(req: Request): boolean {
    const expected = `Basic ${Buffer.from(`${TWILIO_ACCOUNT_SID}:${TWILIO_AUTH_TOKEN}`).toString("base64")}`;
    return req.get("authorization") === expected && req.params.sid === TWILIO_ACCOUNT_SID;
  }

  private error(res: Response, status: number, code: number, message: string): void {
    res.status(status).json({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
  }

  private create(req: Request, res: Response): void {
    const form = new URLSearchParams(Buffer.isBuffer(req.body) ? req.body.toString("utf8") : "");
    const fields: Record<string, string[]> = {};
    for (const [name, value] of form) (fields[name] ??= []).push(value);
    const one = (name: string) => fields[name]?.[0];
    const refuse = (status: number, code: number, message: string) => {
      this.refused.push({ httpStatus: status, code, fields });
      this.error(res, status, code, message);
    };
    if (!this.authorised(req)) return refuse(401, 20003, "Authenticate");
    if (this.failNext.count > 0) {
      this.failNext.count -= 1;
      const status = this.failNext.httpStatus;
      return status === 429
        ? refuse(429, 20429, "Too Many Requests")
        : refuse(status, 20500, "An internal server error has occurred");
    }
    const to = one("To");
    const service = one("MessagingServiceSid");
    let from = one("From");
    const body = one("Body") ?? "";
    const mediaUrls = fields.MediaUrl ?? [];
    if (!to) return refuse(400, 21604, "'To' phone number is required to send a Message");
    if (!from && !service)
      return refuse(400, 21603, "A 'From' or 'MessagingServiceSid' parameter is required to send a message");
    if (service && service !== this.options.messagingServiceSid)
      return refuse(404, 20404, `The requested resource /Services/${service} was not found`);
    if (from && !this.numbers.includes(from))
      return refuse(
        400,
        21606,
        `The From phone number ${from} is not a valid, SMS-capable inbound phone number or short code for your account.`,
      );
    if (!/^\+[1-9]\d{6,14}$/.test(to)) return refuse(400, 21211, `The 'To' number ${to} is not a valid phone number.`);
    if (this.landlines.has(to)) return refuse(400, 21614, `'To' number ${to} is not a valid mobile number`);
    if (!body && mediaUrls.length === 0) return refuse(400, 21602, "Message body is required.");
    if (body.length > 1600)
      return refuse(400, 21617, "The concatenated message body exceeds the 1600 character limit.");
    if (mediaUrls.length > 10) return refuse(400, 21623, "Number of media files exceeds allowed limit.");
    from ??= this.sticky.get(to) ?? this.numbers[0]!;
    if (this.unsubscribed.has(`${from}|${to}`)) return refuse(400, 21610, "Attempt to send to unsubscribed recipient");
    const message: SentSms = {
      sid: sid(mediaUrls.length > 0 ? "MM" : "SM"),
      from,
      to,
      body,
      mediaUrls,
      statusCallback: one("StatusCallback"),
      messagingServiceSid: service,
    };
    this.sent.push(message);
    const now = new Date().toUTCString();
    res.status(201).json({
      account_sid: TWILIO_ACCOUNT_SID,
      api_version: "2010-04-01",
      body,
      date_created: now,
      date_sent: null,
      date_updated: now,
      direction: "outbound-api",
      error_code: null,
      error_message: null,
      from: service ? null : from,
      messaging_service_sid: service ?? null,
      num_media: String(mediaUrls.length),
      num_segments: String(Math.max(1, Math.ceil(body.length / 153))),
      price: null,
      price_unit: "USD",
      sid: message.sid,
      status: service ? "accepted" : "queued",
      subresource_uris: { media: `/2010-04-01/Accounts/${TWILIO_ACCOUNT_SID}/Messages/${message.sid}/Media.json` },
      to,
      uri: `/2010-04-01/Accounts/${TWILIO_ACCOUNT_SID}/Messages/${message.sid}.json`,
    });
    if (message.statusCallback) {
      const fate = this.fates.get(to)?.shift() ?? { status: "delivered" };
      const steps: [string, number | undefined][] =
        fate.status === "delivered"
          ? [
              ["queued", undefined],
              ["sent", undefined],
              ["delivered", undefined],
            ]
          : [
              ["queued", undefined],
              ["sent", undefined],
              [fate.status, fate.errorCode],
            ];
      // In order, one after the other, as Twilio's arrive.
      const delay = this.options.callbackDelayMs ?? 30;
      const post = (index: number) => {
        const step = steps[index];
        if (!step) return;
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          void this.postStatus(message, step[0], step[1]).then(() => post(index + 1));
        }, delay);
        this.timers.add(timer);
      };
      post(0);
    }
  }

  /** Posts one signed status callback for a message to its StatusCallback; the hub's HTTP status. */
  async postStatus(message: SentSms, status: string, errorCode?: number): Promise<number> {
    if (!message.statusCallback) throw new Error("the message asked for no status callbacks");
    const fields: [string, string][] = [
      ["AccountSid", TWILIO_ACCOUNT_SID],
      ["ApiVersion", "2010-04-01"],
      ["From", message.from],
      ["MessageSid", message.sid],
      ["MessageStatus", status],
      ["SmsSid", message.sid],
      ["SmsStatus", status],
      ["To", message.to],
      ...(message.messagingServiceSid
        ? [["MessagingServiceSid", message.messagingServiceSid] as [string, string]]
        : []),
      ...(errorCode !== undefined ? [["ErrorCode", String(errorCode)] as [string, string]] : []),
    ];
    const answer = await this.post(message.statusCallback, fields, TWILIO_AUTH_TOKEN).catch(() => 0);
    this.callbacks.push({ sid: message.sid, status, answer });
    return answer;
  }

  /**
   * The person sends a message to one of the account's numbers: posted to the hub signed (with `token`, the
   * account's by default). Advanced Opt-Out's keywords change the list of who may be written to, as at Twilio.
   */
  async inbound(
    person: string,
    to: string,
    body: string,
    options: { media?: { contentType: string; bytes: Buffer }[]; token?: string; messageSid?: string } = {},
  ): Promise<{ status: number; text: string; contentType: string | null; sid: string }> {
    const media = options.media ?? [];
    const messageSid = options.messageSid ?? sid(media.length > 0 ? "MM" : "SM");
    const word = body.trim().toUpperCase();
    const optOutType = OPT_OUT.includes(word)
      ? "STOP"
      : OPT_IN.includes(word)
        ? "START"
        : HELP.includes(word)
          ? "HELP"
          : undefined;
    if (optOutType === "STOP") this.unsubscribed.add(`${to}|${person}`);
    if (optOutType === "START") this.unsubscribed.delete(`${to}|${person}`);
    this.sticky.set(person, to);
    const fields: [string, string][] = [
      ["ToCountry", "CL"],
      ["SmsMessageSid", messageSid],
      ["NumMedia", String(media.length)],
      ["SmsSid", messageSid],
      ["SmsStatus", "received"],
      ["Body", body],
      ["To", to],
      ["NumSegments", "1"],
      ["MessageSid", messageSid],
      ["AccountSid", TWILIO_ACCOUNT_SID],
      ["From", person],
      ["ApiVersion", "2010-04-01"],
      ...(this.options.messagingServiceSid
        ? [["MessagingServiceSid", this.options.messagingServiceSid] as [string, string]]
        : []),
      ...(optOutType ? [["OptOutType", optOutType] as [string, string]] : []),
    ];
    media.forEach((file, index) => {
      const mediaSid = sid("ME");
      this.media.set(mediaSid, file);
      fields.push(
        ["MediaContentType" + index, file.contentType],
        [
          "MediaUrl" + index,
          `${this.url}/2010-04-01/Accounts/${TWILIO_ACCOUNT_SID}/Messages/${messageSid}/Media/${mediaSid}`,
        ],
      );
    });
    const url = `${this.hubUrl}/webhooks/twilio/sms`;
    const res = await fetch(url, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Twilio-Signature": signTwilio(options.token ?? TWILIO_AUTH_TOKEN, url, fields),
      },
      body: new URLSearchParams(fields).toString(),
    });
    return {
      status: res.status,
      text: await res.text(),
      contentType: res.headers.get("content-type"),
      sid: messageSid,
    };
  }

  private async post(url: string, fields: [string, string][], token: string): Promise<number> {
    const res = await fetch(url, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Twilio-Signature": signTwilio(token, url, fields),
      },
      body: new URLSearchParams(fields).toString(),
    });
    await res.text();
    return res.status;
  }
}
