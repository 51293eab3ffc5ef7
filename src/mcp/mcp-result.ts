// An MCP tool's `CallToolResult` as the body a tool backend's result callback posts (src/jobs/callbacks.ts):
// its text blocks are the message (cut past MESSAGE_LIMIT, whole in `data`), `structuredContent` is the data
// (else a JSON form of the blocks, without their base64), `isError` makes it a failure. Images, audio and
// embedded blobs are stored as files of the conversation (Upload, like a widget upload) and linked with the
// hub's signed `/media/<token>` URL; an http(s) resource link is linked as it is; an embedded text resource is
// quoted in the message when short. All of it is the server's data, never instructions: control and bidi
// characters are taken out (data-text.ts) and names and URIs are quoted where the message mentions them.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Secrets } from "../config/secrets.js";
import { attachmentUrl, MAX_ATTACHMENTS, type Attachment } from "../conversations/attachments.js";
import { storeUpload } from "../conversations/widget-uploads.js";
import { plainLines, plainText, quotedData } from "../data-text.js";
import type { SqlQuery } from "../db/sql.js";
import type { MediaConfig } from "../media/media-config.js";
import { mediaUrl } from "../media/media-token.js";
import type { RetentionConfig } from "../retention/retention-config.js";

/** The longest message a result callback may post. */
export const MESSAGE_LIMIT = 10_000;
/** An embedded text resource at most this long is quoted in the message; a longer one is only in `data`. */
export const INLINE_RESOURCE_CHARS = 2_000;
/** How long a stored file's link works when uploads are kept for ever (RETAIN_UPLOADS=off). */
const KEPT_FOR_EVER_TTL_MS = 365 * 24 * 3600 * 1000;

/** What turning a result into a callback's body needs: the store, the media signing secret and limits, a clock. */
export interface McpResultDeps {
  sql: SqlQuery;
  config: {
    production: boolean;
    secrets: Pick<Secrets, "callbackSecret">;
    media: Pick<MediaConfig, "maxBytes">;
    retention: Pick<RetentionConfig, "uploadsMs">;
  };
  publicUrl: () => string;
  now: () => Date;
}

/** The body of a result callback (callbacks.ts, `resultBody`). */
export interface McpResultBody {
  result: "ok" | "error";
  message?: string;
  data?: unknown;
  attachments?: Attachment[];
}

type Block = CallToolResult["content"][number];
type EmbeddedResource = Extract<Block, { type: "resource" }>["resource"];

const MIME_TYPE = /^[\w.+-]+\/[\w.+-]+$/;

/** A type the server gave, if it is one (`image/png`); else a file's generic type. */
const typeOf = (given: string | undefined): string => {
  const type = plainText(given ?? "").toLowerCase();
  return MIME_TYPE.test(type) ? type : "application/octet-stream";
};

/** A file's name: the last segment of its URI, else `<kind>-<n>.<subtype>`; cleaned, at most 255 characters. */
function fileName(uri: string | undefined, kind: string, n: number, mimeType: string): string {
  let last = "";
  if (uri) {
    try {
      last = decodeURIComponent(new URL(uri).pathname.split("/").filter(Boolean).pop() ?? "");
    } catch {
      last = uri.split("/").filter(Boolean).pop() ?? "";
    }
  }
  const name = plainText(last).slice(0, 255).trim();
  if (name) return name;
  const extension = (mimeType.split("/")[1] ?? "bin").replace(/[^\w.+-]/g, "").slice(0, 20);
  return `${kind}-${n}.${extension}`;
}

/** The message, cut past MESSAGE_LIMIT with a note saying how much was left out. */
export function cutMessage(text: string): { message: string; cut: boolean } {
  if (text.length <= MESSAGE_LIMIT) return { message: text, cut: false };
  // The note's length depends on the count it states: sized for the largest count it could state.
  const noteFor = (left: number) => `\n\n…(cut: ${left} more characters; the whole text is in the result's data)`;
  let keep = MESSAGE_LIMIT - noteFor(text.length).length;
  // Never between the two halves of a surrogate pair.
  if (/[\uD800-\uDBFF]/.test(text[keep - 1] ?? "")) keep -= 1;
  return { message: text.slice(0, keep) + noteFor(text.length - keep), cut: true };
}

/** One file to store: its bytes, type and name, and where its block stands in `content`. */
interface PendingFile {
  bytes: Buffer;
  mimeType: string;
  name: string;
  entry: Record<string, unknown>;
  /** Where the message mentions it when it cannot be linked. */
  label: string;
}

export async function resultOfMcp(
  ctx: McpResultDeps,
  conversationId: string,
  result: CallToolResult,
): Promise<McpResultBody> {
  const failed = result.isError === true;
  const parts: string[] = [];
  const content: Record<string, unknown>[] = [];
  const files: PendingFile[] = [];
  const links: Attachment[] = [];
  const counts = new Map<string, number>();
  const nextOf = (kind: string) => {
    const n = (counts.get(kind) ?? 0) + 1;
    counts.set(kind, n);
    return n;
  };
  const linkable = (uri: string) => attachmentUrl(ctx.config.production).safeParse(uri).success;

  for (const block of result.content ?? []) {
    switch (block.type) {
      case "text": {
        const text = plainLines(block.text);
        if (text.trim()) parts.push(text);
        content.push({ type: "text", text });
        break;
      }
      case "image":
      case "audio": {
        const mimeType = typeOf(block.mimeType);
        const entry: Record<string, unknown> = { type: block.type, mimeType };
        content.push(entry);
        const name = fileName(undefined, block.type, nextOf(block.type), mimeType);
        files.push({ bytes: Buffer.from(block.data, "base64"), mimeType, name, entry, label: `${block.type} ${name}` });
        break;
      }
      case "resource":
        embedded(block.resource);
        break;
      case "resource_link": {
        const uri = plainText(block.uri);
        const name = plainText(block.name) || uri;
        const mimeType = block.mimeType ? typeOf(block.mimeType) : undefined;
        const entry: Record<string, unknown> = {
          type: "resource_link",
          uri,
          name,
          ...(mimeType ? { mimeType } : {}),
          ...(block.description ? { description: plainLines(block.description) } : {}),
        };
        content.push(entry);
        if (linkable(block.uri) && links.length + files.length < MAX_ATTACHMENTS) {
          entry.attachment = true;
          links.push({ url: block.uri, name: name.slice(0, 255), ...(mimeType ? { mimeType } : {}) });
        } else parts.push(`[resource link ${quotedData(name)}: ${quotedData(uri)}]`);
        break;
      }
      default: {
        // A block of a later protocol version: kept as data, without anything base64.
        const { data: _data, blob: _blob, ...rest } = block as Record<string, unknown>;
        content.push(rest);
      }
    }
  }

  function embedded(resource: EmbeddedResource) {
    const uri = plainText(resource.uri);
    const mimeType = resource.mimeType ? typeOf(resource.mimeType) : undefined;
    if ("text" in resource && typeof resource.text === "string") {
      const text = plainLines(resource.text);
      content.push({ type: "resource", uri, ...(mimeType ? { mimeType } : {}), text });
      parts.push(
        text.length <= INLINE_RESOURCE_CHARS
          ? `[resource ${quotedData(uri)}]\n${text}`
          : `[resource ${quotedData(uri)}: ${text.length} characters, in the result's data]`,
      );
      return;
    }
    const blob = "blob" in resource && typeof resource.blob === "string" ? resource.blob : "";
    const type = mimeType ?? "application/octet-stream";
    const entry: Record<string, unknown> = { type: "resource", uri, mimeType: type };
    content.push(entry);
    const name = fileName(resource.uri, "file", nextOf("file"), type);
    files.push({ bytes: Buffer.from(blob, "base64"), mimeType: type, name, entry, label: `file ${name}` });
  }

  const attachments: Attachment[] = [...links];
  for (const file of files) {
    file.entry.name = file.name;
    file.entry.bytes = file.bytes.length;
    // A failure's files never reach the person (callbacks.ts): they are not stored.
    const left = failed
      ? "not kept: the call failed"
      : file.bytes.length === 0
        ? "empty"
        : file.bytes.length > ctx.config.media.maxBytes
          ? `larger than the ${ctx.config.media.maxBytes} bytes a file may be`
          : attachments.length >= MAX_ATTACHMENTS
            ? `more than ${MAX_ATTACHMENTS} files`
            : undefined;
    if (left) {
      file.entry.leftOut = left;
      if (!failed) parts.push(`[${file.label} left out: ${left}]`);
      continue;
    }
    const url = await storeFile(ctx, conversationId, file);
    if (!url) {
      file.entry.leftOut = "too large";
      parts.push(`[${file.label} left out: too large]`);
      continue;
    }
    file.entry.attachment = true;
    attachments.push({ url, name: file.name, mimeType: file.mimeType });
  }

  const { message } = cutMessage(parts.join("\n\n"));
  const data = result.structuredContent !== undefined ? result.structuredContent : { content };
  return {
    result: failed ? "error" : "ok",
    ...(message ? { message } : {}),
    data,
    ...(attachments.length > 0 && !failed ? { attachments } : {}),
  };
}

/**
 * Stores one file with the conversation, as a widget upload is, and gives its `/media` link. It is marked as
 * named (attachedAt) at once: the result's link names it, so only RETAIN_UPLOADS deletes it, and the link
 * works as long as the file is kept.
 */
async function storeFile(ctx: McpResultDeps, conversationId: string, file: PendingFile): Promise<string | undefined> {
  const at = ctx.now();
  const stored = await storeUpload(
    ctx.sql,
    { conversationId, mimeType: file.mimeType, name: file.name, at },
    (async function* () {
      yield file.bytes;
    })(),
    ctx.config.media.maxBytes,
    ctx.now,
  );
  if (!stored.ok) return undefined;
  await ctx.sql.query(`UPDATE "Upload" SET "attachedAt" = $2 WHERE id = $1::uuid`, [stored.upload.id, at]);
  const ttl = ctx.config.retention.uploadsMs ?? KEPT_FOR_EVER_TTL_MS;
  return mediaUrl(ctx.config.secrets.callbackSecret, ctx.publicUrl(), { uploadId: stored.upload.id }, at, ttl);
}
