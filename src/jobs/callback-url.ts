// The signed callback URL handed to a tool backend for one job.
import type { HubContext } from "../context.js";
import type { Job } from "../generated/prisma/client.js";
import { createCallbackToken, TOKEN_GRACE_MS } from "./callback-token.js";

export function callbackUrl(ctx: HubContext, job: Pick<Job, "id" | "timeoutAt" | "tool">): string {
  const expiresAt = new Date(job.timeoutAt.getTime() + TOKEN_GRACE_MS);
  const token = createCallbackToken(ctx.config.secrets.callbackSecret, job.id, expiresAt, job.tool);
  return `${ctx.publicUrl()}/callbacks/${token}`;
}
