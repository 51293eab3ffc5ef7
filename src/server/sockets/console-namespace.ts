// The `/console` namespace: a console authenticates with the console key and hears every conversation's
// changes, from any hub process. Changes come from the one place that makes them (src/delivery/changes.ts):
// messages are gathered for a short window (the latest state of each) and sent as one event.
import type { ConsoleMessageChange } from "../../console/console-events.js";
import { CONSOLE_ROOM } from "../../console/console-events.js";
import type { HubContext } from "../../context.js";
import { messageView } from "../../conversations/timeline.js";
import { mediaLinks } from "../../media/media-links.js";
import { principalOf } from "../auth.js";

const BATCH_MS = 100;

export function attachConsoleNamespace(ctx: HubContext): () => void {
  const namespace = ctx.realtime.console;
  namespace.use((socket, next) => {
    const key = ((socket.handshake.auth ?? {}) as { key?: unknown }).key;
    const ok = typeof key === "string" && principalOf(`Bearer ${key}`, { human: ctx.config.secrets.consoleApiKey });
    next(ok ? undefined : new Error("unauthorized"));
  });
  namespace.on("connection", (socket) => {
    void socket.join(CONSOLE_ROOM);
  });
  return forwardChanges(ctx);
}

/** Every process forwards the changes it makes to every console, through the adapter; returns the unsubscribe. */
function forwardChanges(ctx: HubContext): () => void {
  const room = ctx.realtime.console.to(CONSOLE_ROOM);
  let pending = new Map<string, ConsoleMessageChange>();
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    const changes = [...pending.values()];
    pending = new Map();
    if (changes.length > 0) room.emit("messages", { changes });
  };
  const links = mediaLinks(ctx);
  const unsubscribe = ctx.changes.subscribe((change) => {
    if (change.type === "control") {
      const { conversation } = change;
      room.emit("control", {
        conversationId: conversation.id,
        control: conversation.control === "human" ? "human" : "agent",
        humanAgent: conversation.humanAgent ?? null,
      });
      return;
    }
    if (change.type !== "messages") return;
    for (const message of change.messages) {
      pending.set(message.id, { conversationId: change.conversationId, message: messageView(message, links) });
    }
    timer ??= setTimeout(flush, BATCH_MS);
  });
  return () => {
    unsubscribe();
    if (timer) clearTimeout(timer);
    flush();
  };
}
