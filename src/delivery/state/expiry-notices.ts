// The `tool_expired` inputs that take the place of expired results (expireInputs, closeConversation).

/**
 * The notices, written by the statement that expires results (`expired` is its CTE of expired inputs, with
 * `was`, their state before): the job's identity, when the result arrived, what it was, and why it expired.
 * The arguments name the statement's parameters: the reason, the notice's state (null: the state the result
 * was in, so a held result's notice is held, a waiting one waits) and the time.
 */
export const expiryNotices = (reason: string, notice: string, at: string) => `notices AS (
     INSERT INTO "TurnInput" (id, "conversationId", key, kind, "jobId", "messageId", payload, state, "createdAt",
       "updatedAt")
     SELECT gen_random_uuid(), e."conversationId", 'expired:' || e.id, 'tool_expired', e."jobId", e."messageId",
       (e.payload - 'result' - 'reason' - 'message') || jsonb_build_object(
         'arrivedAt', to_char(e."createdAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
         'outcome', CASE e.kind WHEN 'tool_result' THEN 'succeeded' ELSE 'failed' END, 'reason', ${reason}::text),
       coalesce(${notice}::text, e.was), ${at}, ${at}
     FROM expired e ORDER BY e.seq ON CONFLICT (key) DO NOTHING RETURNING *)`;
