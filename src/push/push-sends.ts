// The one owner of push-send state. A PushSend row is recorded `pending` with the delivery decision that left
// its message stored (owed-pushes.ts, in recordDecision's statement). Sending it starts by claiming it
// (`sending`, one statement, so of several processes or retried queue jobs exactly one gets it) and ends in
// one final state. It goes back to `pending` only after an answer proving the service did not take it, a
// bounded number of times. A process that dies mid-send leaves it `sending`: it is never sent again (the
// sweep marks it failed), because not knowing whether the person was told is better than telling them twice.
import type { Sql } from "../db/sql.js";
import type { PushPlatform } from "./push-devices.js";

export type PushSendState = "pending" | "sending" | "sent" | "gone" | "failed" | "skipped";

/** A send this process now holds, with what it needs to go out. */
export interface ClaimedSend {
  id: string;
  /** Counting this one. */
  attempts: number;
  messageId: string;
  conversationId: string;
  /** The message's delivery status now: a push is for a message still `stored`. */
  messageStatus: string | null;
  deviceId: string;
  platform: PushPlatform;
  address: string;
  keys: { p256dh: string; auth: string } | null;
  url: string | null;
  deviceDropped: boolean;
  /** What the message answers (a result outranks a failure) and the tool that gave it. */
  kind: "tool_result" | "tool_failed" | null;
  tool: string | null;
}

export function pushSends(sql: Sql, now: () => Date) {
  /** Moves a send this process holds (`sending`) to where it ends. */
  const settle = async (id: string, state: Exclude<PushSendState, "pending" | "sending">, reason: string | null) => {
    await sql.query(
      `UPDATE "PushSend" SET state = $2, reason = $3, "updatedAt" = $4 WHERE id = $1::uuid AND state = 'sending'`,
      [id, state, reason, now()],
    );
  };

  return {
    /** Takes every send of the message that is due; another claimer (process, queue job) gets none of them. */
    async claim(messageId: string): Promise<ClaimedSend[]> {
      return sql.query<ClaimedSend>(
        `WITH claimed AS (
           UPDATE "PushSend" SET state = 'sending', attempts = attempts + 1, "updatedAt" = $2
           WHERE "messageId" = $1::uuid AND state = 'pending' AND "nextAttemptAt" <= $2 RETURNING *)
         SELECT c.id, c.attempts, c."messageId", m."conversationId", m.status AS "messageStatus", d.id AS "deviceId",
           d.platform, d.address, d.keys, d.url, d."droppedAt" IS NOT NULL AS "deviceDropped", r.kind, r.tool
         FROM claimed c
         JOIN "PushDevice" d ON d.id = c."deviceId"
         JOIN "Message" m ON m.id = c."messageId"
         LEFT JOIN LATERAL (
           SELECT t.kind, j.tool FROM "TurnInput" t LEFT JOIN "Job" j ON j.id = t."jobId"
           WHERE t."replyId" = m.id AND t.kind IN ('tool_result', 'tool_failed')
           ORDER BY t.kind = 'tool_result' DESC, t.seq LIMIT 1) r ON true`,
        [messageId, now()],
      );
    },

    sent: (id: string) => settle(id, "sent", null),
    failed: (id: string, reason: string) => settle(id, "failed", reason),
    /** Not sent, and not worth sending: the person saw the message meanwhile, the device is gone, the service is off. */
    skipped: (id: string, reason: string) => settle(id, "skipped", reason),

    /** The service said the device is gone: this send ends `gone`, the device is dropped, and so are its other sends. */
    async gone(send: Pick<ClaimedSend, "id" | "deviceId">, reason: string): Promise<void> {
      const at = now();
      await sql.query(
        `WITH s AS (UPDATE "PushSend" SET state = 'gone', reason = $3, "updatedAt" = $4
                    WHERE id = $1::uuid AND state = 'sending' RETURNING id),
         d AS (UPDATE "PushDevice" SET "droppedAt" = $4, "updatedAt" = $4 WHERE id = $2::uuid RETURNING id)
         UPDATE "PushSend" SET state = 'skipped', reason = 'device_gone', "updatedAt" = $4
         WHERE "deviceId" = $2::uuid AND state = 'pending'`,
        [send.id, send.deviceId, reason, at],
      );
    },

    /** The service did not take it (429, 5xx): pending again, due at `at`. */
    async retryAt(id: string, at: Date, reason: string): Promise<void> {
      await sql.query(
        `UPDATE "PushSend" SET state = 'pending', "nextAttemptAt" = $2, reason = $3, "updatedAt" = $4
         WHERE id = $1::uuid AND state = 'sending'`,
        [id, at, reason, now()],
      );
    },

    /** Messages with sends due since before `before` (their queue job was lost): for the sweep. */
    async overdue(before: Date, limit: number): Promise<string[]> {
      const rows = await sql.query<{ messageId: string }>(
        `SELECT DISTINCT "messageId" FROM "PushSend" WHERE state = 'pending' AND "nextAttemptAt" < $1 LIMIT $2`,
        [before, limit],
      );
      return rows.map((row) => row.messageId);
    },

    /** Sends a process claimed and never finished (it died): failed, never sent again. */
    async abandon(claimedBefore: Date): Promise<number> {
      const rows = await sql.query<{ id: string }>(
        `UPDATE "PushSend" SET state = 'failed', reason = 'interrupted', "updatedAt" = $2
         WHERE state = 'sending' AND "updatedAt" < $1 RETURNING id`,
        [claimedBefore, now()],
      );
      return rows.length;
    },
  };
}

export type PushSends = ReturnType<typeof pushSends>;
