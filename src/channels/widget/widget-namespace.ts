// The `/widget` socket.io namespace: token auth, history after lastMessageId, the person's messages
// (idempotent on clientId), read receipts. Thin: each handler calls one function.
import { z } from "zod";
import type { HubContext } from "../../context.js";
import { receiveUserMessage } from "../../conversations/inbound.js";
import { listMessages } from "../../conversations/timeline.js";
import type { Message } from "../../generated/prisma/client.js";
import type { WidgetNamespace } from "../../realtime.js";
import { roomOf, type SendAnswer } from "./events.js";
import { widgetMessage } from "./widget-channel.js";
import { verifyWidgetToken } from "./widget-token.js";

const sendSchema = z.object({ text: z.string().trim().min(1).max(4000), clientId: z.string().min(1).max(100) });
const readSchema = z.object({ upTo: z.uuid() });
const HISTORY_LIMIT = 200;
const PERSON_ROLES = ["user", "agent", "human"];

type WidgetSocket = Parameters<Parameters<WidgetNamespace["on"]>[1]>[0];

/** What the person may see: their messages and the replies, never items held for a human. */
export function visibleToPerson(message: Message): boolean {
  return PERSON_ROLES.includes(message.role) && message.status !== "held" && message.status !== "superseded";
}

function invalid(error: z.ZodError): SendAnswer {
  const fields = error.issues.map((issue) => issue.path.join(".")).join(", ");
  return { error: { code: "invalid_request", message: `invalid ${fields}` } };
}

export function attachWidgetNamespace(ctx: HubContext): void {
  const widget = ctx.realtime.widget;
  widget.use((socket, next) => {
    const conversationId = verifyWidgetToken(
      ctx.config.secrets.callbackSecret,
      (socket.handshake.auth as { token?: unknown }).token,
    );
    if (!conversationId) return next(new Error("unauthorized"));
    socket.data.conversationId = conversationId;
    next();
  });

  widget.on("connection", (socket) => {
    const { conversationId } = socket.data;
    // Handlers first: a client may send the moment it is connected, before its history is out.
    socket.on("send", async (payload, ack) => {
      const parsed = sendSchema.safeParse(payload);
      if (!parsed.success) return void ack?.(invalid(parsed.error));
      try {
        const { message, created } = await receiveUserMessage(ctx, { conversationId, ...parsed.data });
        ack?.({ id: message.id });
        // The person's other tabs and devices see it too.
        if (created) socket.to(roomOf(conversationId)).emit("message", widgetMessage(message), () => {});
      } catch (error) {
        ctx.log.error({ err: error, conversation_id: conversationId }, "widget message not stored");
        ack?.({ error: { code: "unavailable", message: "try again" } });
      }
    });

    socket.on("read", async (payload, ack) => {
      const parsed = readSchema.safeParse(payload);
      if (!parsed.success) return void ack?.({ ok: false });
      const upTo = await ctx.db.message.findFirst({
        where: { id: parsed.data.upTo, conversationId },
        select: { seq: true },
      });
      if (upTo) {
        await ctx.db.message.updateMany({
          where: {
            conversationId,
            seq: { lte: upTo.seq },
            role: { in: ["agent", "human"] },
            status: { in: ["live", "stored", "delivered"] },
          },
          data: { status: "read" },
        });
      }
      ack?.({ ok: Boolean(upTo) });
    });

    void sendHistory(ctx, socket).catch((error: unknown) =>
      ctx.log.warn({ err: error, conversation_id: conversationId }, "widget history not sent"),
    );
  });
}

async function sendHistory(ctx: HubContext, socket: WidgetSocket): Promise<void> {
  const { conversationId } = socket.data;
  await socket.join(roomOf(conversationId));
  if (socket.recovered) return; // the missed packets were replayed by connection-state recovery
  const after = (socket.handshake.auth as { lastMessageId?: unknown }).lastMessageId;
  const messages = (
    await listMessages(ctx.db, conversationId, {
      afterId: typeof after === "string" ? after : undefined,
      limit: HISTORY_LIMIT,
    })
  ).filter(visibleToPerson);
  socket.emit("history", { messages: messages.map(widgetMessage) });
  // The history reached a live client: what was stored for it is now delivered.
  const stored = messages
    .filter((message) => message.status === "stored" || message.status === "live")
    .map((m) => m.id);
  if (stored.length) {
    await ctx.db.message.updateMany({
      where: { id: { in: stored }, status: { in: ["stored", "live"] } },
      data: { status: "delivered" },
    });
  }
}
