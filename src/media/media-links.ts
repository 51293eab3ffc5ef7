// The hub's `/media/<token>` URLs for a person's message, minted when they are handed out (a turn, the
// console), so each works for MEDIA_URL_TTL from then — not from when the person sent the file.
import type { Config } from "../config.js";
import type { InboundAttachment } from "../conversations/attachments.js";
import { inboundAttachments, storedAttachments } from "../conversations/inbound-attachments.js";
import { mediaUrl } from "./media-token.js";

export type MediaLinks = (messageId: string, stored: unknown) => InboundAttachment[];

/** What minting the URLs needs: the signing secret, their lifetime, the hub's address and a clock. */
export interface MediaLinkDeps {
  config: Pick<Config, "secrets" | "media">;
  publicUrl: () => string;
  now: () => Date;
}

export function mediaLinks(ctx: MediaLinkDeps): MediaLinks {
  return (messageId, stored) => {
    const now = ctx.now();
    return inboundAttachments(storedAttachments(stored), (index) =>
      mediaUrl(
        ctx.config.secrets.callbackSecret,
        ctx.publicUrl(),
        { messageId, index },
        now,
        ctx.config.media.urlTtlMs,
      ),
    );
  };
}
