// GET /media/<token>: a file a person sent (for the agent, its tools and the console), or one the hub stored
// from a tool's result (for the person's channel and the console). The signed token is the
// only credential (media-token.ts); the bytes are streamed from where the channel keeps them (media-fetch.ts)
// with the file's type and name, never sniffed, and never run as a page of the hub's origin.
import { pipeline } from "node:stream/promises";
import { Router } from "express";
import type { HubContext } from "../../context.js";
import { HubError } from "../../errors.js";
import { errorKey } from "../../log-throttle.js";
import { openMedia } from "../../media/media-fetch.js";
import { verifyMediaToken } from "../../media/media-token.js";

/** Shown in the page: images, video and audio; anything else (a PDF, HTML, a script) is a download. */
const INLINE = /^(image\/(png|jpeg|gif|webp)|video\/[\w.+-]+|audio\/[\w.+-]+)$/;

/** `inline` or `attachment`, with the name as ASCII and as UTF-8 (RFC 6266). */
export function contentDisposition(type: "inline" | "attachment", name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `${type}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export function mediaRoutes(ctx: HubContext): Router {
  const router = Router();
  router.get("/:token", async (req, res) => {
    const claim = verifyMediaToken(ctx.config.secrets.callbackSecret, req.params.token, ctx.now());
    if (!claim) throw new HubError(404, "not_found", "unknown or expired media link");
    const aborted = new AbortController();
    res.on("close", () => aborted.abort());
    const answer = await openMedia(ctx, claim, aborted.signal);
    if (!answer.ok) throw new HubError(answer.status, answer.code, answer.message);
    const type = answer.mimeType.toLowerCase();
    const place = "uploadId" in claim ? 1 : claim.index + 1;
    const name =
      answer.name ??
      `${type.split("/")[0] ?? "file"}-${place}.${(type.split("/")[1] ?? "bin").replace(/[^\w.+-]/g, "")}`;
    res.set({
      "Content-Type": type,
      "Content-Disposition": contentDisposition(INLINE.test(type) ? "inline" : "attachment", name),
      "X-Content-Type-Options": "nosniff",
      "Content-Security-Policy": "default-src 'none'; sandbox",
      "Cache-Control": "private, max-age=300",
    });
    if (answer.size !== undefined) res.set("Content-Length", String(answer.size));
    try {
      await pipeline(answer.body, res);
    } catch (error) {
      // The person's client went away, or the host sent more than it may: the answer is cut off.
      if (!aborted.signal.aborted)
        ctx.warnRepeated(
          `media:${errorKey(error)}`,
          "uploadId" in claim ? { upload_id: claim.uploadId } : { message_id: claim.messageId },
          "media answer cut off",
        );
      res.destroy();
    }
  });
  return router;
}
