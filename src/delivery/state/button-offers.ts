// Which choice a tap answers (commitInbound): a payload is the person's only if a message of the agent or a
// human in this conversation offered a button answering with it (its payload, else its title) and that offer
// is still open — the message reached the person (not held, waiting for the window, superseded or expired)
// and was not answered yet, unless the button is `reusable`. The newest such offer is taken, locked, so two
// taps of one offer at once take it once.

/**
 * The offer a tap answers, as the CTE `offer` (id, answer, reusable) of the statement recording the person's
 * message: `tap` and `conversation` name its parameters. A channel's own form of an answer counts too: WhatsApp
 * takes ids of at most 200 characters, made unique in a message by a `n:` prefix (whatsapp-payloads.ts).
 */
export const offeredChoice = (tap: string, conversation: string) => `offer AS (
     SELECT o.id, c.answer, c.reusable FROM "Message" o
     CROSS JOIN LATERAL (
       SELECT coalesce(b.v->>'payload', b.v->>'title') AS answer, coalesce(b.v->>'reusable' = 'true', false) AS reusable
       FROM jsonb_array_elements(o.buttons) WITH ORDINALITY AS b(v, n)
       WHERE ${tap}::text IN (coalesce(b.v->>'payload', b.v->>'title'), left(coalesce(b.v->>'payload', b.v->>'title'), 200),
                              left(b.n || ':' || coalesce(b.v->>'payload', b.v->>'title'), 200))
       ORDER BY 2 DESC LIMIT 1) c
     WHERE ${tap}::text IS NOT NULL AND o."conversationId" = ${conversation}::uuid AND o.role IN ('agent', 'human')
       AND jsonb_typeof(o.buttons) = 'array'
       AND coalesce(o.status, '') NOT IN ('held', 'awaiting_reply', 'superseded', 'expired')
       AND (c.reusable OR o."answeredBy" IS NULL)
     ORDER BY o.seq DESC LIMIT 1
     FOR UPDATE OF o)`;

/** Marks the offer answered by the message `msg` inserted (a reusable button leaves it open). */
export const answerOffer = () => `answered AS (
     UPDATE "Message" SET "answeredBy" = (SELECT id FROM msg)
     WHERE id IN (SELECT id FROM offer WHERE NOT reusable) AND EXISTS (SELECT 1 FROM msg) RETURNING id)`;
