// Where a push becomes owed: the delivery decision that leaves a result or failure stored (nobody has the chat
// open) writes one PushSend per registered device in its own statement (src/delivery/state/routing-outcomes.ts),
// so the decision and what it owes commit together; push-sends.ts sends each at most once.

/**
 * A CTE `owed` for that statement: `decided` names its CTE of the decided message (one row, the `Message`
 * columns), `at` the parameter of the time. Only a message that answers a result or a failure is owed pushes.
 */
export const owedPushes = (decided: string, at: string) => `owed AS (
           INSERT INTO "PushSend" (id, "messageId", "deviceId", "nextAttemptAt", "createdAt", "updatedAt")
           SELECT gen_random_uuid(), ${decided}.id, d.id, ${at}, ${at}, ${at}
           FROM ${decided} JOIN "PushDevice" d ON d."conversationId" = ${decided}."conversationId" AND d."droppedAt" IS NULL
           WHERE ${decided}.status = 'stored' AND EXISTS (
             SELECT 1 FROM "TurnInput" t WHERE t."replyId" = ${decided}.id AND t.kind IN ('tool_result', 'tool_failed'))
           ON CONFLICT ("messageId", "deviceId") DO NOTHING RETURNING id)`;
