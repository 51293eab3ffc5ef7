// A local stand-in for Telegram's Bot API, the one outside service a Telegram test may fake. It answers
// `POST /bot<token>/<method>` (JSON, a form or the query string, as Telegram takes them) with Telegram's
// documented envelopes — `{ok: true, result}` and `{ok: false, error_code, description, parameters}` — and
// refuses what Telegram refuses: a token it does not know (401 Unauthorized), a chat that never wrote to the
// bot (400 chat not found), a chat where the person blocked the bot (403), an empty text or one over 4,096
// characters (400), a caption over 1,024, callback_data over 64 bytes (400 BUTTON_DATA_INVALID), a second
// message to one chat within a second and more than 30 a second from the bot (429 with retry_after), a
// webhook URL that is not https. It fetches the URLs of sendPhoto and sendDocument as Telegram does, serves
// getFile and `/file/bot<token>/<path>` downloads, records every call it accepted or refused, and posts
// Updates to the hub's webhook with the secret, as Telegram does.
//
// Deliberately independent of the hub's own code: nothing here is imported from src/.
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Request, type Response } from "express";

export const FAKE_BOT_ID = 7000000001;
export const FAKE_BOT_TOKEN = `${FAKE_BOT_ID}:AAH-fake-token-for-tests_0123456789ab`;

const MAX_TEXT = 4096;
const MAX_CAPTION = 1024;
const MAX_CALLBACK_DATA = 64;
const CHAT_INTERVAL_MS = 1000;
const BOT_PER_SECOND = 30;

export interface TelegramPerson {
  id: number;
  first_name: string;
  last_name?: string;
}

/** A message the fake accepted from the bot. */
export interface SentTelegramMessage {
  method: "sendMessage" | "sendPhoto" | "sendDocument";
  chatId: number;
  messageId: number;
  text?: string;
  caption?: string;
  /** sendPhoto / sendDocument: the URL the bot gave, and what the fake fetched from it. */
  url?: string;
  fetched?: { type: string; bytes: Buffer };
  inlineKeyboard?: { text: string; callback_data: string }[][];
  at: number;
}

/** Every call as it arrived, accepted or refused. */
export interface TelegramCall {
  method: string;
  chatId: number | undefined;
  status: number;
  description?: string;
  at: number;
}

interface StoredFile {
  bytes: Buffer;
  type: string;
  path: string;
}

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly description: string,
    readonly retryAfter?: number,
  ) {
    super(description);
  }
}

export class FakeTelegram {
  readonly sent: SentTelegramMessage[] = [];
  readonly calls: TelegramCall[] = [];
  readonly webhooks: { url: string; secret_token?: string; allowed_updates?: unknown }[] = [];
  readonly chatActions: { chatId: number; action: string }[] = [];
  readonly answeredCallbacks: string[] = [];
  /** Where Telegram posts updates, and the secret it sends with them (set by setWebhook, or by the test). */
  webhookUrl = "";
  webhookSecret = "";
  url = "";
  private readonly knownChats = new Map<number, TelegramPerson>();
  private readonly blocked = new Set<number>();
  private readonly floodUntil = new Map<number, number>();
  private readonly floodArmed = new Map<number, number>();
  private readonly lastSend = new Map<number, number>();
  private readonly botSends: number[] = [];
  private readonly nextMessageId = new Map<number, number>();
  private readonly files = new Map<string, StoredFile>();
  private updateId = 100_000;
  private callbackId = 0;
  private server: Server | undefined;

  constructor(readonly token = FAKE_BOT_TOKEN) {}

  async start(): Promise<this> {
    const app = express();
    app.use(express.json({ limit: "10mb" }));
    app.use(express.urlencoded({ extended: false }));
    app.get("/file/bot:token/*path", (req, res) => {
      if (req.params.token !== this.token) return void res.status(401).json(this.error(401, "Unauthorized"));
      const path = (req.params as { path: string[] }).path.join("/");
      const file = [...this.files.values()].find((candidate) => candidate.path === path);
      if (!file) return void res.status(404).json(this.error(404, "Not Found"));
      res.type(file.type).send(file.bytes);
    });
    app.all("/bot:token/:method", (req, res) => void this.handle(req, res));
    this.server = app.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The messages the bot got through to one chat, in order. */
  sentTo(chatId: number): SentTelegramMessage[] {
    return this.sent.filter((message) => message.chatId === chatId);
  }

  /** The calls for one chat, accepted or refused. */
  callsFor(chatId: number, method?: string): TelegramCall[] {
    return this.calls.filter((call) => call.chatId === chatId && (!method || call.method === method));
  }

  /** The person blocks the bot: every send to their chat is refused with 403 from now on. */
  block(chatId: number): void {
    this.blocked.add(chatId);
  }

  /** They unblock it (and so may write again). */
  unblock(chatId: number): void {
    this.blocked.delete(chatId);
  }

  /**
   * Flood control for one chat: the next message to it starts a wait of `seconds`, during which every message
   * to it is refused with 429 and the seconds left as retry_after.
   */
  floodWait(chatId: number, seconds: number): void {
    this.floodArmed.set(chatId, seconds);
  }

  /** A file the person sends: kept for getFile and downloads; its file_id. */
  addFile(bytes: Buffer, type: string, extension: string): string {
    const id = `AgAC${Math.random().toString(36).slice(2)}${this.files.size}`;
    this.files.set(id, { bytes, type, path: `documents/file_${this.files.size}.${extension}` });
    return id;
  }

  /** Posts an Update to the hub's webhook as Telegram does (the secret unless one is given). */
  async postUpdate(
    update: Record<string, unknown>,
    secret: string | null = this.webhookSecret,
  ): Promise<{ status: number; body: any }> {
    const res = await fetch(this.webhookUrl, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        ...(secret !== null ? { "X-Telegram-Bot-Api-Secret-Token": secret } : {}),
      },
      body: JSON.stringify(update),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  /** A new update_id (Telegram numbers them in order). */
  newUpdateId(): number {
    return ++this.updateId;
  }

  /** The Update for a message from a person in their private chat with the bot. */
  messageUpdate(person: TelegramPerson, content: Record<string, unknown>): Record<string, unknown> {
    this.knownChats.set(person.id, person);
    const chat = { id: person.id, type: "private", first_name: person.first_name, last_name: person.last_name };
    return {
      update_id: this.newUpdateId(),
      message: {
        message_id: this.messageIdFor(person.id),
        from: { id: person.id, is_bot: false, first_name: person.first_name, last_name: person.last_name },
        chat,
        date: Math.floor(Date.now() / 1000),
        ...content,
      },
    };
  }

  /** The person writes text. */
  write(person: TelegramPerson, text: string) {
    return this.postUpdate(this.messageUpdate(person, { text }));
  }

  /** The Update for a tap on a button of a message the bot sent. */
  tapUpdate(person: TelegramPerson, message: SentTelegramMessage, row: number): Record<string, unknown> {
    const button = message.inlineKeyboard?.[row]?.[0];
    if (!button) throw new Error(`message ${message.messageId} has no button ${row}`);
    return {
      update_id: this.newUpdateId(),
      callback_query: {
        id: `${FAKE_BOT_ID}${++this.callbackId}`,
        from: { id: person.id, is_bot: false, first_name: person.first_name, last_name: person.last_name },
        chat_instance: "-1234567890",
        message: {
          message_id: message.messageId,
          from: { id: FAKE_BOT_ID, is_bot: true, first_name: "Clinic bot" },
          chat: { id: person.id, type: "private", first_name: person.first_name },
          date: Math.floor(message.at / 1000),
          ...(message.text !== undefined ? { text: message.text } : {}),
          reply_markup: { inline_keyboard: message.inlineKeyboard },
        },
        data: button.callback_data,
      },
    };
  }

  private messageIdFor(chatId: number): number {
    const next = (this.nextMessageId.get(chatId) ?? 0) + 1;
    this.nextMessageId.set(chatId, next);
    return next;
  }

  private error(code: number, description: string, retryAfter?: number) {
    return {
      ok: false,
      error_code: code,
      description,
      ...(retryAfter !== undefined ? { parameters: { retry_after: retryAfter } } : {}),
    };
  }

  private async handle(req: Request, res: Response): Promise<void> {
    const method = req.params.method as string;
    const params = { ...(req.query as Record<string, unknown>), ...((req.body as Record<string, unknown>) ?? {}) };
    const chatId = params.chat_id !== undefined ? Number(params.chat_id) : undefined;
    const at = Date.now();
    try {
      if (req.params.token !== this.token) throw new Refusal(401, "Unauthorized");
      const result = await this.answer(method, params, chatId, at);
      this.calls.push({ method, chatId, status: 200, at });
      res.json({ ok: true, result });
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      this.calls.push({ method, chatId, status: error.status, description: error.description, at });
      res.status(error.status).json(this.error(error.status, error.description, error.retryAfter));
    }
  }

  private chatOf(chatId: number | undefined): number {
    if (chatId === undefined || Number.isNaN(chatId)) throw new Refusal(400, "Bad Request: chat_id is empty");
    if (!this.knownChats.has(chatId)) throw new Refusal(400, "Bad Request: chat not found");
    if (this.blocked.has(chatId)) throw new Refusal(403, "Forbidden: bot was blocked by the user");
    return chatId;
  }

  /** Telegram's flood control: one message a second to a chat, 30 a second from the bot. */
  private pace(chatId: number, at: number): void {
    const armed = this.floodArmed.get(chatId);
    if (armed !== undefined) {
      this.floodArmed.delete(chatId);
      this.floodUntil.set(chatId, at + armed * 1000);
    }
    const until = this.floodUntil.get(chatId) ?? 0;
    if (at < until) {
      const wait = Math.ceil((until - at) / 1000);
      throw new Refusal(429, `Too Many Requests: retry after ${wait}`, wait);
    }
    const last = this.lastSend.get(chatId);
    if (last !== undefined && at - last < CHAT_INTERVAL_MS)
      throw new Refusal(429, "Too Many Requests: retry after 1", 1);
    while (this.botSends.length > 0 && this.botSends[0]! <= at - 1000) this.botSends.shift();
    if (this.botSends.length >= BOT_PER_SECOND) throw new Refusal(429, "Too Many Requests: retry after 1", 1);
  }

  private keyboard(params: Record<string, unknown>): SentTelegramMessage["inlineKeyboard"] {
    let markup = params.reply_markup;
    if (markup === undefined) return undefined;
    if (typeof markup === "string") markup = JSON.parse(markup);
    const rows = (markup as { inline_keyboard?: unknown }).inline_keyboard;
    if (!Array.isArray(rows)) throw new Refusal(400, "Bad Request: can't parse reply keyboard markup JSON object");
    for (const row of rows)
      for (const button of row as { text?: unknown; callback_data?: unknown }[]) {
        if (typeof button.text !== "string" || !button.text)
          throw new Refusal(400, "Bad Request: text buttons are unallowed in the inline keyboard");
        const data = button.callback_data;
        if (typeof data !== "string" || data.length === 0 || Buffer.byteLength(data, "utf8") > MAX_CALLBACK_DATA)
          throw new Refusal(400, "Bad Request: BUTTON_DATA_INVALID");
      }
    return rows as SentTelegramMessage["inlineKeyboard"];
  }

  /** Fetches a file by URL, as Telegram does for sendPhoto and sendDocument. */
  private async fetchFile(url: unknown, photo: boolean): Promise<{ type: string; bytes: Buffer }> {
    if (typeof url !== "string" || !/^https?:\/\//.test(url))
      throw new Refusal(400, "Bad Request: wrong remote file identifier specified: Wrong string length");
    const response = await fetch(url, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    if (!response?.ok) throw new Refusal(400, "Bad Request: failed to get HTTP URL content");
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim();
    const bytes = Buffer.from(await response.arrayBuffer());
    if (photo && !type.startsWith("image/")) throw new Refusal(400, "Bad Request: wrong type of the web page content");
    return { type, bytes };
  }

  private async answer(
    method: string,
    params: Record<string, unknown>,
    chatId: number | undefined,
    at: number,
  ): Promise<unknown> {
    switch (method) {
      case "getMe":
        return { id: FAKE_BOT_ID, is_bot: true, first_name: "Clinic bot", username: "clinic_test_bot" };
      case "setWebhook": {
        const url = String(params.url ?? "");
        if (!url.startsWith("https://"))
          throw new Refusal(400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook");
        const secret = params.secret_token;
        if (secret !== undefined && (typeof secret !== "string" || !/^[A-Za-z0-9_-]{1,256}$/.test(secret)))
          throw new Refusal(400, "Bad Request: secret token contains unallowed characters");
        this.webhooks.push({
          url,
          ...(typeof secret === "string" ? { secret_token: secret } : {}),
          allowed_updates: params.allowed_updates,
        });
        return true;
      }
      case "sendChatAction": {
        const chat = this.chatOf(chatId);
        this.chatActions.push({ chatId: chat, action: String(params.action) });
        return true;
      }
      case "answerCallbackQuery": {
        const id = String(params.callback_query_id ?? "");
        if (!id || this.answeredCallbacks.includes(id))
          throw new Refusal(400, "Bad Request: query is too old and response timeout expired or query ID is invalid");
        this.answeredCallbacks.push(id);
        return true;
      }
      case "getFile": {
        const id = String(params.file_id ?? "");
        const file = this.files.get(id);
        if (!file) throw new Refusal(400, "Bad Request: invalid file_id");
        return { file_id: id, file_unique_id: `u${id}`, file_size: file.bytes.length, file_path: file.path };
      }
      case "sendMessage":
      case "sendPhoto":
      case "sendDocument": {
        const chat = this.chatOf(chatId);
        this.pace(chat, at);
        const inlineKeyboard = this.keyboard(params);
        const message: SentTelegramMessage = {
          method,
          chatId: chat,
          messageId: 0,
          at,
          ...(inlineKeyboard ? { inlineKeyboard } : {}),
        };
        if (method === "sendMessage") {
          const text = typeof params.text === "string" ? params.text : "";
          if (!text.trim()) throw new Refusal(400, "Bad Request: message text is empty");
          if (text.length > MAX_TEXT) throw new Refusal(400, "Bad Request: message is too long");
          message.text = text;
        } else {
          const caption = params.caption;
          if (typeof caption === "string" && caption.length > MAX_CAPTION)
            throw new Refusal(400, "Bad Request: message caption is too long");
          if (typeof caption === "string") message.caption = caption;
          const url = method === "sendPhoto" ? params.photo : params.document;
          message.url = String(url);
          message.fetched = await this.fetchFile(url, method === "sendPhoto");
        }
        // Counted once accepted: a refused call does not use up the chat's second.
        this.lastSend.set(chat, at);
        this.botSends.push(at);
        message.messageId = this.messageIdFor(chat);
        this.sent.push(message);
        const person = this.knownChats.get(chat)!;
        return {
          message_id: message.messageId,
          from: { id: FAKE_BOT_ID, is_bot: true, first_name: "Clinic bot" },
          chat: { id: chat, type: "private", first_name: person.first_name },
          date: Math.floor(at / 1000),
          ...(message.text !== undefined ? { text: message.text } : {}),
          ...(message.caption !== undefined ? { caption: message.caption } : {}),
        };
      }
      default:
        throw new Refusal(404, "Not Found");
    }
  }
}
