// The person's files for the LLM agent's transcript: each as a readable line with the hub's `/media/<token>`
// URL (which the model can hand to a tool), and — for a model that reads images (model-images.ts) — the newest
// images as bytes, read through the hub's own fetch path (media-fetch.ts): the model's provider cannot reach
// a hub on a private address, so a URL would not do. A file that cannot be read stays a line. A tool result's
// images are shown too when the hub stored them itself (an MCP tool's: `/media` links naming an upload); a
// backend's own links are never fetched by the hub, so those stay names.
import { quotedData } from "../../data-text.js";
import type { Logger } from "../../logger.js";
import { attachmentKind, attachmentType, type Attachment } from "../../conversations/attachments.js";
import type { StoredAttachment } from "../../conversations/inbound-attachments.js";
import { openMedia, openSource, readMedia, type MediaCtx } from "../../media/media-fetch.js";
import { verifyMediaToken } from "../../media/media-token.js";
import { mediaLinks, type MediaLinkDeps } from "../../media/media-links.js";

/** What giving the model the person's files needs: their URLs, their bytes, a log. */
export type TranscriptFileDeps = MediaLinkDeps & MediaCtx & { log: Logger };
import type { TimelineEntry } from "./timeline-entries.js";
import type { TranscriptEntry, TranscriptFile, TranscriptImage } from "./transcript.js";

/** The newest images that go as images; older ones are lines (each costs the model, every turn). */
export const MAX_IMAGES = 4;
/** The largest image sent as bytes (Anthropic's limit for one image). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

export async function withFiles(
  ctx: TranscriptFileDeps,
  conversation: { channel: string; account: string },
  entries: TimelineEntry[],
  seesImages: boolean,
): Promise<TranscriptEntry[]> {
  const links = mediaLinks(ctx);
  let imagesLeft = seesImages ? MAX_IMAGES : 0;
  const out: TranscriptEntry[] = [];
  // Newest first, so the images that go as bytes are the latest ones.
  for (let i = entries.length - 1; i >= 0; i--) {
    const { media, resultFiles, ...entry } = entries[i]!;
    if (resultFiles && (entry.kind === "call" || entry.kind === "outcome")) {
      const images: TranscriptImage[] = [];
      for (const file of resultFiles) {
        if (imagesLeft === 0) break;
        const image = await readResultImage(ctx, file);
        if (!image) continue;
        imagesLeft--;
        images.push(image);
      }
      out.push(images.length > 0 ? { ...entry, images } : entry);
      continue;
    }
    if (!media || entry.kind !== "user") {
      out.push(entry);
      continue;
    }
    const urls = links(media.messageId, media.files);
    const files: TranscriptFile[] = [];
    for (const [index, stored] of media.files.entries()) {
      const kind = attachmentKind({ url: "", mimeType: stored.mimeType });
      // The file's name is the sender's data: quoted, it cannot start a line or pass for the hub's words.
      const named = stored.name ? `, named ${quotedData(stored.name)}` : "";
      const line = `[${kind} the person sent${named} (${stored.mimeType}): ${urls[index]!.url}]`;
      let image: TranscriptFile["image"];
      if (imagesLeft > 0 && IMAGE_TYPES.has(stored.mimeType) && (stored.size ?? 0) <= MAX_IMAGE_BYTES) {
        imagesLeft--;
        image = await readImage(ctx, conversation, stored);
      }
      files.push(image ? { line, image } : { line });
    }
    out.push({ ...entry, files });
  }
  return out.reverse();
}

/** A result's image the hub stored itself (its `/media` link names an upload), or undefined. */
async function readResultImage(ctx: TranscriptFileDeps, file: Attachment): Promise<TranscriptImage | undefined> {
  const prefix = `${ctx.publicUrl()}/media/`;
  if (!IMAGE_TYPES.has(attachmentType(file)) || !file.url.startsWith(prefix)) return undefined;
  const claim = verifyMediaToken(ctx.config.secrets.callbackSecret, file.url.slice(prefix.length), ctx.now());
  if (!claim || !("uploadId" in claim)) return undefined;
  try {
    const read = await readMedia(await openMedia(limitedTo(ctx, MAX_IMAGE_BYTES), claim));
    if ("ok" in read) return undefined;
    return IMAGE_TYPES.has(read.mimeType) ? { bytes: read.bytes, mediaType: read.mimeType } : undefined;
  } catch (error) {
    ctx.log.info({ err: error }, "an image of a tool's result is given to the model as its name only");
    return undefined;
  }
}

/** The same reads, refusing a file larger than `max`. */
function limitedTo<T extends Omit<TranscriptFileDeps, "publicUrl" | "now">>(ctx: T, max: number): T {
  return {
    ...ctx,
    config: { ...ctx.config, media: { ...ctx.config.media, maxBytes: Math.min(ctx.config.media.maxBytes, max) } },
  };
}

async function readImage(
  ctx: Omit<TranscriptFileDeps, "publicUrl" | "now">,
  conversation: { channel: string; account: string },
  stored: StoredAttachment,
): Promise<TranscriptFile["image"]> {
  const limited = limitedTo(ctx, MAX_IMAGE_BYTES);
  try {
    const read = await readMedia(await openSource(limited, conversation, stored));
    if ("ok" in read) {
      ctx.log.info({ code: read.code }, "an image the person sent is given to the model as text only");
      return undefined;
    }
    // The type the source serves it as (Graph's own), if it is one the model takes.
    const mediaType = IMAGE_TYPES.has(read.mimeType) ? read.mimeType : stored.mimeType;
    return { bytes: read.bytes, mediaType };
  } catch (error) {
    ctx.log.info({ err: error }, "an image the person sent is given to the model as text only");
    return undefined;
  }
}
