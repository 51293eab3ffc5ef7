// Sending what a stored message owes: each device's send is claimed, checked (still stored? device still
// there? service on?), sent once, and settled by what the service answered. A 429 or 5xx is tried again with
// a doubling wait, at most `maxAttempts` times in all; a device the service says is gone is dropped.
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import type { ToolRegistry } from "../tools/load-tools.js";
import type { Push } from "./push.js";
import { notifyText } from "./notify-text.js";
import type { ClaimedSend } from "./push-sends.js";
import type { PushOutcome } from "./push-sender.js";

/** What sending pushes needs: the push services and send state, tool files (for the notification's text). */
export interface PushSendDeps {
  config: Pick<Config, "push">;
  push: Pick<Push, "sends" | "webPush" | "fcm" | "request">;
  tools: ToolRegistry;
  metrics: Pick<Metrics, "pushSends">;
  log: Logger;
  now: () => Date;
}

/** The longest a send waits for its next try, whatever the service asks. */
const MAX_RETRY_WAIT_MS = 10 * 60_000;

export async function sendPushes(ctx: PushSendDeps, messageId: string): Promise<void> {
  const claimed = await ctx.push.sends.claim(messageId);
  await Promise.all(claimed.map((send) => sendOne(ctx, send)));
}

async function sendOne(ctx: PushSendDeps, send: ClaimedSend): Promise<void> {
  const { sends } = ctx.push;
  const sender = send.platform === "web" ? ctx.push.webPush : ctx.push.fcm;
  const service = send.platform === "web" ? "web_push" : "fcm";
  const log = {
    conversation_id: send.conversationId,
    message_id: send.messageId,
    device_id: send.deviceId,
    platform: send.platform,
    attempt: send.attempts,
  };
  const skip = async (reason: string) => {
    await sends.skipped(send.id, reason);
    ctx.metrics.pushSends.inc({ service, outcome: "skipped" });
    ctx.log.info({ ...log, reason }, "push skipped");
  };
  if (send.deviceDropped) return skip("device_dropped");
  // Only a message still waiting unseen is worth a notification: the person may have opened the chat since.
  if (send.messageStatus !== "stored") return skip("seen");
  if (!sender) return skip(`${service}_off`);

  let outcome: PushOutcome;
  try {
    outcome = await sender.send(
      { address: send.address, keys: send.keys },
      {
        title: notifyText(ctx.tools, send),
        conversationId: send.conversationId,
        messageId: send.messageId,
        url: send.url,
      },
    );
  } catch (error) {
    // A bug or an unexpected answer: whether it reached the person is unknown, so it is not sent again.
    outcome = { kind: "failed", code: "error" };
    ctx.log.error({ ...log, err: { message: (error as Error).message } }, "push send threw");
  }
  // The last try of a retriable failure counts as failed: `retry` counts only tries that will be followed.
  const final = outcome.kind === "retry" && send.attempts >= ctx.config.push.maxAttempts;
  ctx.metrics.pushSends.inc({ service, outcome: final ? "failed" : outcome.kind });
  switch (outcome.kind) {
    case "sent":
      await sends.sent(send.id);
      ctx.log.info(log, "push sent");
      return;
    case "gone":
      await sends.gone(send, outcome.code);
      ctx.log.info({ ...log, code: outcome.code }, "push device gone; dropped");
      return;
    case "failed":
      await sends.failed(send.id, outcome.code);
      ctx.log.warn({ ...log, code: outcome.code }, "push failed");
      return;
    case "retry": {
      if (final) {
        await sends.failed(send.id, `${outcome.code} (after ${send.attempts} attempts)`);
        ctx.log.warn({ ...log, code: outcome.code }, "push failed; no attempts left");
        return;
      }
      const backoff = ctx.config.push.retryBaseMs * 2 ** (send.attempts - 1);
      const waitMs = Math.min(MAX_RETRY_WAIT_MS, Math.max(backoff, outcome.retryAfterMs ?? 0));
      await sends.retryAt(send.id, new Date(ctx.now().getTime() + waitMs), outcome.code);
      ctx.log.warn({ ...log, code: outcome.code, retry_in_ms: waitMs }, "push not taken; will retry");
      await ctx.push
        .request(send.messageId, waitMs)
        .catch((error: unknown) => ctx.log.warn({ ...log, err: error }, "push retry not queued; the sweep will"));
      return;
    }
  }
}

/** For the sweep: sends whose queue job was lost are asked for again; sends a dead process held are failed. */
export async function sweepPushes(ctx: PushSendDeps): Promise<number> {
  const at = ctx.now().getTime();
  await ctx.push.sends.abandon(new Date(at - 5 * 60_000));
  const overdue = await ctx.push.sends.overdue(new Date(at - 3_000), 500);
  for (const messageId of overdue) await ctx.push.request(messageId);
  return overdue.length;
}
