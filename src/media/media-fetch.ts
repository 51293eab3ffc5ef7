// Where a person's file is read from when `/media/<token>` (or the LLM agent) asks for it — on demand, not
// when the webhook is processed: a WhatsApp media id stays valid about 30 days though the download URL Graph
// gives for it lasts minutes, so it is looked up afresh each time; Instagram and Messenger files are read
// from the CDN link the webhook carried; widget uploads from the database. Nothing is copied into the hub's
// store on the way in. Neither the account's token nor Graph's download URL leaves this module: not in an
// answer, not in a log line.
import { Readable } from "node:stream";
import type { ReadableStream as WebStream } from "node:stream/web";
import type { Config } from "../config.js";
import type { Sql } from "../db/sql.js";
import { storedAttachments, type MediaSource, type StoredAttachment } from "../conversations/inbound-attachments.js";
import { uploadBytes } from "../conversations/widget-uploads.js";
import { refusedRedirect } from "../redirect-refusal.js";
import { MediaHostRefused, mediaGet, type MediaHosts } from "./media-hosts.js";
import { basicAuth } from "../channels/sms/twilio-client.js";
import type { MediaClaim } from "./media-token.js";

const HEADERS_TIMEOUT_MS = 15_000;
/** Redirects of a CDN link followed, each to a host on the list; a WhatsApp download (with a token) gets none. */
const MAX_CDN_REDIRECTS = 3;

export interface OpenedMedia {
  ok: true;
  mimeType: string;
  name: string | undefined;
  /** Bytes, when known before reading (a declared length, or a stored upload's size). */
  size: number | undefined;
  body: Readable;
}
export interface MediaRefusal {
  ok: false;
  status: 404 | 413 | 502;
  code: string;
  message: string;
}
export type MediaAnswer = OpenedMedia | MediaRefusal;

const notFound: MediaRefusal = { ok: false, status: 404, code: "not_found", message: "unknown or expired media link" };
const tooLarge = (max: number): MediaRefusal => ({
  ok: false,
  status: 413,
  code: "media_too_large",
  message: `the file is larger than MEDIA_MAX_BYTES (${max} bytes)`,
});
const unavailable = (what: string): MediaRefusal => ({
  ok: false,
  status: 502,
  code: "media_unavailable",
  message: what,
});

/** What reading a file needs: the media, Meta, Telegram and SMS settings, and the store (widget uploads). */
export type MediaCtx = { config: Pick<Config, "media" | "meta" | "telegram" | "sms">; sql: Sql };

/**
 * The file one token names: the person's message (not withdrawn), its attachment at that place, its bytes; or
 * a file the hub stored from a tool's result, while it is kept (erasure and retention delete it).
 */
export async function openMedia(ctx: MediaCtx, claim: MediaClaim, signal?: AbortSignal): Promise<MediaAnswer> {
  if ("uploadId" in claim) {
    const [upload] = await ctx.sql.query<{ mimeType: string; name: string | null; size: number }>(
      `SELECT "mimeType", name, size FROM "Upload" WHERE id = $1::uuid AND "storedAt" IS NOT NULL`,
      [claim.uploadId],
    );
    if (!upload) return notFound;
    const stored: StoredAttachment = {
      mimeType: upload.mimeType,
      ...(upload.name ? { name: upload.name } : {}),
      size: upload.size,
      source: { kind: "upload", uploadId: claim.uploadId },
    };
    // An upload's bytes come from the database: the conversation's channel plays no part.
    return openSource(ctx, { channel: "", account: "" }, stored, signal);
  }
  const [row] = await ctx.sql.query<{ attachments: unknown; channel: string; account: string }>(
    `SELECT m.attachments, c.channel, c.account FROM "Message" m JOIN "Conversation" c ON c.id = m."conversationId"
     WHERE m.id = $1::uuid AND m.role = 'user' AND m."deletedAt" IS NULL`,
    [claim.messageId],
  );
  const attachment = row ? storedAttachments(row.attachments)[claim.index] : undefined;
  if (!row || !attachment) return notFound;
  return openSource(ctx, { channel: row.channel, account: row.account }, attachment, signal);
}

export async function openSource(
  ctx: MediaCtx,
  conversation: { channel: string; account: string },
  attachment: StoredAttachment,
  signal?: AbortSignal,
): Promise<MediaAnswer> {
  const max = ctx.config.media.maxBytes;
  const source: MediaSource = attachment.source;
  if (source.kind === "upload") {
    const [upload] = await ctx.sql.query<{ size: number; mimeType: string; name: string | null }>(
      `SELECT size, "mimeType", name FROM "Upload" WHERE id = $1::uuid AND "storedAt" IS NOT NULL`,
      [source.uploadId],
    );
    if (!upload) return notFound;
    if (upload.size > max) return tooLarge(max);
    return {
      ok: true,
      mimeType: upload.mimeType,
      name: upload.name ?? attachment.name,
      size: upload.size,
      // A piece at a time, as it was stored.
      body: Readable.from(uploadBytes(ctx.sql, source.uploadId), { objectMode: false }),
    };
  }
  const hosts = mediaHosts(ctx.config);
  if (source.kind === "link") {
    // A CDN link carries no credential: a redirect to another host on the list is followed.
    const answer = await get(hosts, source.url, {}, "follow", signal);
    if ("refusal" in answer) return answer.refusal;
    return opened(answer.response, attachment, max, "the channel's CDN");
  }
  if (source.kind === "telegram") return openTelegramFile(ctx, conversation, attachment, source.fileId, signal);
  if (source.kind === "twilio") {
    const sms = ctx.config.sms;
    if (conversation.channel !== "sms" || !sms || new URL(source.url).origin !== new URL(sms.apiUrl).origin)
      return unavailable("this hub no longer reads files from that Twilio account");
    // The account's credentials go to Twilio's API only; the short-lived link it may redirect to carries none.
    const first = await get(hosts, source.url, { Authorization: basicAuth(sms) }, "redirect", signal);
    if ("refusal" in first) return first.refusal;
    const location = first.response.headers.get("location");
    if (first.response.status < 300 || first.response.status > 399 || !location)
      return opened(first.response, attachment, max, "Twilio");
    await first.response.body?.cancel();
    const stored = await get(hosts, new URL(location, source.url).href, {}, "follow", signal);
    if ("refusal" in stored) return stored.refusal;
    return opened(stored.response, attachment, max, "Twilio's file host");
  }
  const account = ctx.config.meta.accounts.find((a) => a.channel === "whatsapp" && a.id === conversation.account);
  if (conversation.channel !== "whatsapp" || !account)
    return unavailable("this hub no longer answers for the account the file was sent to");
  const auth = { Authorization: `Bearer ${account.accessToken}` };
  const { graphApiUrl, graphApiVersion } = ctx.config.meta;
  const lookup = await get(
    hosts,
    `${graphApiUrl}/${graphApiVersion}/${encodeURIComponent(source.mediaId)}?phone_number_id=${encodeURIComponent(account.id)}`,
    auth,
    "manual",
    signal,
  );
  if ("refusal" in lookup) return lookup.refusal;
  if (!lookup.response.ok) {
    await lookup.response.body?.cancel();
    return unavailable(`WhatsApp did not give the file (HTTP ${lookup.response.status})`);
  }
  const media = (await lookup.response.json().catch(() => ({}))) as {
    url?: unknown;
    file_size?: unknown;
    mime_type?: unknown;
  };
  if (typeof media.url !== "string" || !/^https?:\/\//.test(media.url))
    return unavailable("WhatsApp answered without a download link");
  if (Number(media.file_size) > max) return tooLarge(max);
  // The download needs the token too; a redirect would carry it elsewhere, so none is followed.
  const download = await get(hosts, media.url, auth, "manual", signal);
  if ("refusal" in download) return download.refusal;
  const mimeType = typeof media.mime_type === "string" && media.mime_type ? media.mime_type : attachment.mimeType;
  return opened(download.response, { ...attachment, mimeType }, max, "WhatsApp");
}

/**
 * A Telegram file: getFile gives its path (for an hour), then `{api}/file/bot<token>/<path>` its bytes. Both
 * URLs hold the bot's token: only the Bot API's own origin is asked, no redirect is followed, and neither
 * URL appears in an answer or a log line.
 */
async function openTelegramFile(
  ctx: MediaCtx,
  conversation: { channel: string; account: string },
  attachment: StoredAttachment,
  fileId: string,
  signal: AbortSignal | undefined,
): Promise<MediaAnswer> {
  const telegram = ctx.config.telegram;
  if (conversation.channel !== "telegram" || !telegram || telegram.botId !== conversation.account)
    return unavailable("this hub no longer answers for the bot the file was sent to");
  const max = ctx.config.media.maxBytes;
  const hosts: MediaHosts = { hosts: [], origins: [new URL(telegram.apiUrl).origin] };
  const lookup = await get(
    hosts,
    `${telegram.apiUrl}/bot${telegram.token}/getFile?file_id=${encodeURIComponent(fileId)}`,
    {},
    "manual",
    signal,
  );
  if ("refusal" in lookup) return lookup.refusal;
  const file = (await lookup.response.json().catch(() => ({}))) as {
    ok?: unknown;
    description?: unknown;
    result?: { file_path?: unknown; file_size?: unknown };
  };
  if (!lookup.response.ok || file.ok !== true) {
    // "file is too big": the Bot API serves files up to 20 MB.
    const why = typeof file.description === "string" ? `: ${file.description.slice(0, 200)}` : "";
    return unavailable(`Telegram did not give the file (HTTP ${lookup.response.status}${why})`);
  }
  const filePath = file.result?.file_path;
  if (typeof filePath !== "string" || !filePath) return unavailable("Telegram answered without the file's path");
  if (Number(file.result?.file_size) > max) return tooLarge(max);
  const download = await get(hosts, `${telegram.apiUrl}/file/bot${telegram.token}/${filePath}`, {}, "manual", signal);
  if ("refusal" in download) return download.refusal;
  return opened(download.response, attachment, max, "Telegram");
}

/**
 * The hosts the files are read from: MEDIA_HOSTS and the Graph API's origin; with SMS, Twilio's API and the
 * host its MMS files are served from (twiliocdn.com).
 */
export function mediaHosts(config: MediaCtx["config"]): MediaHosts {
  const origins = [new URL(config.meta.graphApiUrl).origin];
  if (!config.sms) return { hosts: config.media.hosts, origins };
  return { hosts: [...config.media.hosts, "twiliocdn.com"], origins: [...origins, new URL(config.sms.apiUrl).origin] };
}

async function get(
  hosts: MediaHosts,
  url: string,
  headers: Record<string, string>,
  /** `redirect`: a redirect's answer is returned as it is, for the caller to follow without credentials. */
  redirect: "follow" | "manual" | "redirect",
  signal: AbortSignal | undefined,
): Promise<{ response: Response } | { refusal: MediaRefusal }> {
  const timeout = AbortSignal.timeout(HEADERS_TIMEOUT_MS);
  const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let target = url;
  try {
    for (let hop = 0; ; hop += 1) {
      const response = await mediaGet(hosts, target, headers, both);
      const location = response.headers.get("location");
      const isRedirect = response.status >= 300 && response.status <= 399;
      if (isRedirect && redirect === "follow" && location && hop < MAX_CDN_REDIRECTS) {
        await response.body?.cancel();
        target = new URL(location, target).href;
        continue;
      }
      if (isRedirect && redirect === "redirect") return { response };
      const redirected = refusedRedirect("the file's host", target, response);
      if (redirected) {
        await response.body?.cancel();
        return { refusal: unavailable(redirected) };
      }
      return { response };
    }
  } catch (error) {
    if (error instanceof MediaHostRefused || (error as { code?: unknown }).code === "EMEDIAHOST")
      return {
        refusal: unavailable(target === url ? (error as Error).message : `redirected: ${(error as Error).message}`),
      };
    return { refusal: unavailable(`the file's host did not answer (${(error as Error).name})`) };
  }
}

function opened(response: Response, attachment: StoredAttachment, max: number, who: string): MediaAnswer {
  if (!response.ok || !response.body) {
    void response.body?.cancel();
    return unavailable(`${who} did not give the file (HTTP ${response.status})`);
  }
  const declared = Number(response.headers.get("content-length") ?? NaN);
  if (declared > max) {
    void response.body.cancel();
    return tooLarge(max);
  }
  return {
    ok: true,
    mimeType: attachment.mimeType,
    name: attachment.name,
    size: Number.isFinite(declared) ? declared : undefined,
    body: capped(Readable.fromWeb(response.body as WebStream<Uint8Array>), max),
  };
}

/** The bytes, cut off with an error past `max` (a host that declared no length, or a wrong one). */
function capped(body: Readable, max: number): Readable {
  async function* limited() {
    let seen = 0;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      seen += chunk.length;
      if (seen > max) {
        body.destroy();
        throw new Error(`the file is larger than MEDIA_MAX_BYTES (${max} bytes)`);
      }
      yield chunk;
    }
  }
  return Readable.from(limited(), { objectMode: false });
}

/** All of a file's bytes in memory (the LLM agent's images), or why not. */
export async function readMedia(answer: MediaAnswer): Promise<{ bytes: Buffer; mimeType: string } | MediaRefusal> {
  if (!answer.ok) return answer;
  const chunks: Buffer[] = [];
  for await (const chunk of answer.body) chunks.push(Buffer.from(chunk as Uint8Array));
  return { bytes: Buffer.concat(chunks), mimeType: answer.mimeType };
}
