// After Redis comes back from an outage or a failover, some pushes from other processes never reached this
// process's sockets (the socket.io adapter's stream entries and its pub/sub acks do not survive one): those
// messages end `stored` although their widget is still connected here, and nothing would bring them until
// it reconnects. So for a while after Redis returns, this process looks for conversations of its own
// sockets with replies stored since Redis was lost (pushed and left unconfirmed, or stored because the
// process deciding could not see this one's sockets), and closes those sockets'
// transports: the clients reconnect by themselves, as after any network drop, and the history of the new
// connection brings those replies, even ones older than the client's cursor (widget-history.ts), which
// the client then confirms. A message is decided stored only after its ack timeout, so the
// look lasts well past that; a client that confirmed its history has nothing stored and is left alone.
import type { HubContext } from "../../context.js";
import { errorKey } from "../../log-throttle.js";

/** How long after Redis returns, and how often, this process looks. */
export const CATCH_UP_WINDOW_MS = 30_000;
export const CATCH_UP_EVERY_MS = 2_000;

export function catchUpAfterRedisReturns(ctx: Pick<HubContext, "realtime" | "sql" | "warnRepeated">): () => void {
  const timers = new Set<NodeJS.Timeout>();
  const look = async (since: Date) => {
    const sockets = [...ctx.realtime.widget.sockets.values()];
    const conversations = [...new Set(sockets.map((socket) => socket.data.conversationId))];
    if (conversations.length === 0) return;
    const rows = await ctx.sql.query<{ conversationId: string }>(
      `SELECT DISTINCT "conversationId" FROM "Message"
       WHERE "conversationId" = ANY($1::uuid[]) AND role IN ('agent', 'human') AND status = 'stored'
         AND "updatedAt" >= $2`,
      [conversations, since],
    );
    const behind = new Set(rows.map((row) => row.conversationId));
    for (const socket of sockets) if (behind.has(socket.data.conversationId)) socket.conn.close();
    if (behind.size > 0)
      ctx.warnRepeated(
        "widget-catch-up",
        { conversations: behind.size },
        "widgets reconnected to bring messages missed while Redis was away",
      );
  };
  const stop = ctx.realtime.onRedisReturn((lostAt) => {
    const until = Date.now() + CATCH_UP_WINDOW_MS;
    const tick = () => {
      look(lostAt)
        .catch((error: unknown) =>
          ctx.warnRepeated(`widget-catch-up:${errorKey(error)}`, { err: error }, "widget catch-up failed"),
        )
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
