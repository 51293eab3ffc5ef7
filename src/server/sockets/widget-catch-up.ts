// After Redis comes back from an outage or a failover, some pushes from other processes never reached this
// process's sockets (the socket.io adapter's stream entries and its pub/sub acks do not survive one), and a
// process that could not see the sockets of another recorded its replies `stored`: those replies wait for
// the next connection's history although their widget is still connected here. So for a while after Redis
// returns, this process looks for replies stored since Redis was lost in the conversations of its own
// sockets and pushes them again, to its own sockets only (no Redis on the way); a client's ack confirms them
// as a history's `received` does. A client that had one already skips it by id (docs/widget-protocol.md §6).
import { widgetMessage } from "../../channels/widget/widget-channel.js";
import { MESSAGE_ACK_TIMEOUT_MS } from "../../channels/widget/events.js";
import type { HubContext } from "../../context.js";
import type { MessageRow } from "../../delivery/rows.js";
import { errorKey } from "../../log-throttle.js";

/** How long after Redis returns, and how often, this process looks (a push is stored only after its ack timeout). */
export const CATCH_UP_WINDOW_MS = 30_000;
export const CATCH_UP_EVERY_MS = 2_000;

type CatchUpContext = Pick<HubContext, "realtime" | "sql" | "delivery" | "warnRepeated">;

export function catchUpAfterRedisReturns(ctx: CatchUpContext): () => void {
  const timers = new Set<NodeJS.Timeout>();
  const warn = (error: unknown) =>
    ctx.warnRepeated(`widget-catch-up:${errorKey(error)}`, { err: error }, "widget catch-up failed");
  const stop = ctx.realtime.onRedisReturn((lostAt) => {
    const until = Date.now() + CATCH_UP_WINDOW_MS;
    const tick = () => {
      pushStoredAgain(ctx, lostAt)
        .catch(warn)
        .finally(() => {
          if (Date.now() >= until) return;
          const timer = setTimeout(() => {
            timers.delete(timer);
            tick();
          }, CATCH_UP_EVERY_MS);
          timer.unref();
          timers.add(timer);
        });
    };
    tick();
  });
  return () => {
    stop();
    for (const timer of timers) clearTimeout(timer);
  };
}

async function pushStoredAgain(ctx: CatchUpContext, since: Date): Promise<void> {
  const sockets = [...ctx.realtime.widget.sockets.values()];
  const conversations = [...new Set(sockets.map((socket) => socket.data.conversationId))];
  if (conversations.length === 0) return;
  const rows = await ctx.sql.query<MessageRow>(
    `SELECT * FROM "Message"
     WHERE "conversationId" = ANY($1::uuid[]) AND role IN ('agent', 'human') AND status = 'stored'
       AND "updatedAt" >= $2
     ORDER BY seq`,
    [conversations, since],
  );
  if (rows.length === 0) return;
  ctx.warnRepeated("widget-catch-up", { messages: rows.length }, "pushing again replies stored while Redis was away");
  await Promise.all(
    sockets.map(async (socket) => {
      for (const row of rows) {
        if (row.conversationId !== socket.data.conversationId || !socket.connected) continue;
        // Any ack counts, an empty one too (a handler that returns nothing), as for every push.
        const acked = await socket
          .timeout(MESSAGE_ACK_TIMEOUT_MS)
          .emitWithAck("message", widgetMessage(row))
          .then(
            () => true,
            () => false,
          );
        if (acked) await ctx.delivery.markReceived(row.conversationId, [row.id], row.id);
      }
    }),
  );
}
