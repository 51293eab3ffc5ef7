// The `/console` namespace: a console authenticates with the console key and hears every conversation's
// changes, from any hub process. Changes come from the one place that makes them (src/delivery/changes.ts):
// messages are gathered for a short window (the latest state of each) and sent as one event.
import type { ConsoleMessageChange } from "../../console/console-events.js";
import { CONSOLE_ROOM, memberRoom } from "../../console/console-events.js";
import type { MemberRef } from "../../team/member-auth.js";
import { memberPresence } from "../../team/presence.js";
import { errorKey } from "../../log-throttle.js";
import type { HubContext } from "../../context.js";
import { messageView } from "../../conversations/timeline.js";
import { mediaLinks } from "../../media/media-links.js";
import { principalOf } from "../auth.js";
import { clientAddressOf } from "../client-address.js";

const BATCH_MS = 100;

/** A refused handshake past the limit: the client sees `connect_error` with this message and `data`. */
const tooManyWrongKeys = (retryAfterMs: number) =>
  Object.assign(new Error("too_many_failed_authentications"), {
    data: { code: "too_many_failed_authentications", retryAfterMs },
  });

export function attachConsoleNamespace(ctx: HubContext): () => void {
  const namespace = ctx.realtime.console;
  const addressOf = clientAddressOf(ctx.config.trustProxy);
  // The console's key is guessed here as on /v1: wrong keys count against the address (key-failures.ts).
  namespace.use((socket, next) => {
    const key = ((socket.handshake.auth ?? {}) as { key?: unknown }).key;
    const address = addressOf(socket.request);
    void (async () => {
      if (typeof key !== "string" || key === "") return next(new Error("unauthorized"));
      const blocked = await ctx.keyFailures.blocked(address);
      if (!blocked.ok) return next(tooManyWrongKeys(blocked.retryAfterMs));
      if (principalOf(`Bearer ${key}`, { human: ctx.config.secrets.consoleApiKey })) return next();
      // A member's own key: the connection acts as them (their room, their presence).
      const member = await ctx.members(key);
      if (member) {
        (socket.data as { member?: MemberRef }).member = member;
        return next();
      }
      const counted = await ctx.keyFailures.failed(address);
      next(counted.ok ? new Error("unauthorized") : tooManyWrongKeys(counted.retryAfterMs));
    })().catch(next);
  });
  // A member's connections keep them present (src/team/presence.ts); the shared key's are nobody's.
  const presenceFailed = (error: unknown) =>
    ctx.warnRepeated(`presence:${errorKey(error)}`, { err: error }, "a member's presence could not be recorded");
  const presence = memberPresence(ctx, presenceFailed);
  namespace.on("connection", (socket) => {
    const member = (socket.data as { member?: MemberRef }).member;
    void socket.join(member ? [CONSOLE_ROOM, memberRoom(member.id)] : CONSOLE_ROOM);
    if (!member) return;
    presence.connected(member.id).catch(presenceFailed);
    socket.on("disconnect", () => presence.disconnected(member.id).catch(presenceFailed));
  });
  const stopForwarding = forwardChanges(ctx);
  return () => {
    presence.stop();
    stopForwarding();
  };
}

/**
 * Closes every console connection of the member, on every process (the adapter carries it): their key was
 * rotated or they were disabled, and what was opened with the old key must not keep hearing conversations.
 */
export function disconnectMember(ctx: Pick<HubContext, "realtime">, memberId: string): void {
  ctx.realtime.console.in(memberRoom(memberId)).disconnectSockets(true);
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
    // The support team's changes go to every console as they are (their payloads are the console's types).
    if (
      change.type === "assignment" ||
      change.type === "presence" ||
      change.type === "clock" ||
      change.type === "note"
    ) {
      const { type, ...payload } = change;
      room.emit(type, payload as never);
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
