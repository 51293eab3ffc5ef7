// The `/widget` socket.io namespace: token auth, history after lastMessageId, the person's messages
// (idempotent on clientId), read receipts. Thin: each handler calls one function.
import { z } from "zod";
import type { HubContext } from "../../context.js";
import { receiveUserMessage } from "../../conversations/inbound.js";
import { isUuid } from "../../conversations/conversations.js";
import type { Message } from "../../generated/prisma/client.js";
import type { WidgetNamespace } from "../../realtime.js";
import { roomOf, type SendAnswer } from "./events.js";
import { widgetMessage } from "./widget-channel.js";
import { verifyWidgetToken } from "./widget-token.js";

const noNul = (value: string) => !value.includes("\u0000");
const sendSchema = z.object({
  text: z.string().trim().min(1).max(4000).refine(noNul, "contains a NUL character"),
  clientId: z.string().min(1).max(100).refine(noNul, "contains a NUL character"),
});
const readSchema = z.object({ upTo: z.uuid() });
const HISTORY_LIMIT = 200;
const PERSON_ROLES = ["user", "agent", "human"];
const HIDDEN = ["held", "superseded"];

type WidgetSocket = Parameters<Parameters<WidgetNamespace["on"]>[1]>[0];

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
      try {
        ack?.({ ok: await markRead(ctx, conversationId, parsed.data.upTo) });
      } catch (error) {
        ctx.log.warn({ err: error, conversation_id: conversationId }, "read receipt not recorded");
        ack?.({ ok: false });
      }
    });

    void sendHistory(ctx, socket).catch((error: unknown) =>
      ctx.log.warn({ err: error, conversation_id: conversationId }, "widget history not sent"),
    );
  });
}

async function markRead(ctx: HubContext, conversationId: string, upToId: string): Promise<boolean> {
  const upTo = await ctx.db.message.findFirst({ where: { id: upToId, conversationId }, select: { seq: true } });
  if (!upTo) return false;
  await ctx.db.message.updateMany({
    where: {
      conversationId,
      seq: { lte: upTo.seq },
      role: { in: ["agent", "human"] },
      status: { in: ["live", "stored", "delivered"] },
    },
    data: { status: "read" },
  });
  return true;
}

/** The person's view after `lastMessageId`, or (a new device) the newest part of the conversation. */
async function visibleHistory(ctx: HubContext, conversationId: string, after: unknown): Promise<Message[]> {
  const visible = { conversationId, role: { in: PERSON_ROLES }, OR: [{ status: null }, { status: { notIn: HIDDEN } }] };
  if (typeof after === "string" && isUuid(after)) {
    const anchor = await ctx.db.message.findFirst({ where: { id: after, conversationId }, select: { seq: true } });
    if (anchor) {
      return ctx.db.message.findMany({
        where: { ...visible, seq: { gt: anchor.seq } },
        orderBy: { seq: "asc" },
        take: HISTORY_LIMIT,
      });
    }
  }
  const newest = await ctx.db.message.findMany({ where: visible, orderBy: { seq: "desc" }, take: HISTORY_LIMIT });
  return newest.reverse();
}

async function sendHistory(ctx: HubContext, socket: WidgetSocket): Promise<void> {
  const { conversationId } = socket.data;
  await socket.join(roomOf(conversationId));
  if (socket.recovered) return; // the missed packets were replayed by connection-state recovery
  const messages = await visibleHistory(
    ctx,
    conversationId,
    (socket.handshake.auth as { lastMessageId?: unknown }).lastMessageId,
  );
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
