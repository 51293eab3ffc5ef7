// The person's own messages, from any channel: recorded once (idempotent on the client's or the channel's
// id), the window refreshed, and a turn owed — which also brings every item waiting for their reply.
import { randomUUID } from "node:crypto";
import type { HubContext } from "../context.js";
import { asJson } from "../db/json.js";
import { enqueueOutboxItems, recordOutboxItem } from "../delivery/outbox.js";
import type { Message } from "../generated/prisma/client.js";

export interface InboundMessage {
  conversationId: string;
  text: string;
  /** The client's idempotency key (widget) … */
  clientId?: string;
  /** … or the channel's message id (Meta). */
  externalId?: string;
  /** When the person sent it, as the channel says; refreshes the messaging window. */
  sentAt?: Date;
  data?: unknown;
}

export async function receiveUserMessage(
  ctx: HubContext,
  inbound: InboundMessage,
): Promise<{ message: Message; created: boolean }> {
  const outcome = await ctx.db.$transaction(async (tx) => {
    // Serialised with routing decisions that depend on the window (see deliverMessage).
    await tx.$queryRaw`SELECT id FROM "Conversation" WHERE id = ${inbound.conversationId}::uuid FOR UPDATE`;
    const id = randomUUID();
    const { count } = await tx.message.createMany({
      data: [
        {
          id,
          conversationId: inbound.conversationId,
          role: "user",
          text: inbound.text,
          clientId: inbound.clientId ?? null,
          externalId: inbound.externalId ?? null,
          ...(inbound.data === undefined ? {} : { data: asJson(inbound.data) }),
          createdAt: inbound.sentAt,
        },
      ],
      skipDuplicates: true,
    });
    if (count === 0) {
      const existing = await tx.message.findFirstOrThrow({
        where: inbound.clientId
          ? { conversationId: inbound.conversationId, clientId: inbound.clientId }
          : { externalId: inbound.externalId ?? "" },
      });
      return { message: existing, created: false, itemId: undefined };
    }
    const message = await tx.message.findUniqueOrThrow({ where: { id } });
    if (inbound.sentAt) {
      // Never moves backwards: a redelivered old message does not reopen a window a newer one set.
      await tx.conversation.updateMany({
        where: { id: inbound.conversationId, OR: [{ lastInboundAt: null }, { lastInboundAt: { lt: inbound.sentAt } }] },
        // A new waiting period starts: Meta's earlier "closed" and the template sent for it no longer apply.
        data: { lastInboundAt: inbound.sentAt, windowClosedAt: null, templateSentAt: null },
      });
    }
    // Whatever waited for the person to write comes back with this message's turn.
    await tx.outboxItem.updateMany({
      where: { conversationId: inbound.conversationId, state: "awaiting_reply" },
      data: { state: "pending" },
    });
    // A turn's reply that waited is composed again with this message; a direct message is sent as it is.
    await tx.message.updateMany({
      where: { conversationId: inbound.conversationId, status: "awaiting_reply", turnId: { not: null } },
      data: { status: "superseded", statusReason: "answered in the reply to the person's message" },
    });
    await tx.message.updateMany({
      where: {
        conversationId: inbound.conversationId,
        status: "awaiting_reply",
        turnId: null,
        role: { in: ["agent", "human"] },
      },
      data: { status: "pending" },
    });
    const itemId = await recordOutboxItem(tx, {
      conversationId: inbound.conversationId,
      key: `user:${id}`,
      kind: "user_message",
      messageId: id,
      payload: { text: inbound.text },
    });
    return { message, created: true, itemId };
  });
  await enqueueOutboxItems(ctx, [outcome.itemId]);
  if (outcome.created) ctx.realtime.consoleMessage(outcome.message);
  return { message: outcome.message, created: outcome.created };
}
