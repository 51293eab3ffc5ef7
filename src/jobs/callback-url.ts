// The signed callback URL handed to a tool backend for one job.
import type { Config } from "../config.js";
import type { Job } from "../generated/prisma/client.js";
import { createCallbackToken, TOKEN_GRACE_MS } from "./callback-token.js";

export function callbackUrl(
  ctx: { config: Pick<Config, "secrets">; publicUrl: () => string },
  job: Pick<Job, "id" | "timeoutAt" | "tool">,
): string {
  return signedCallbackUrl(ctx.config.secrets.callbackSecret, ctx.publicUrl(), job);
}

/** The same URL from the secret and the public address alone (`hub chat show` prints it for a running job). */
export function signedCallbackUrl(
  secret: string,
  publicUrl: string,
  job: Pick<Job, "id" | "timeoutAt" | "tool">,
): string {
  const expiresAt = new Date(job.timeoutAt.getTime() + TOKEN_GRACE_MS);
  return `${publicUrl}/callbacks/${createCallbackToken(secret, job.id, expiresAt, job.tool)}`;
}
