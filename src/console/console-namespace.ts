// The `/console` socket.io namespace: a console authenticates with the console key and hears every
// conversation's changes (emitted by any hub process through the adapter).
import type { HubContext } from "../context.js";
import { principalOf } from "../server/auth.js";
import { CONSOLE_ROOM } from "./console-events.js";

export function attachConsoleNamespace(ctx: HubContext): void {
  const namespace = ctx.realtime.console;
  namespace.use((socket, next) => {
    const key = (socket.handshake.auth as { key?: unknown }).key;
    const ok = typeof key === "string" && principalOf(`Bearer ${key}`, { human: ctx.config.secrets.consoleApiKey });
    next(ok ? undefined : new Error("unauthorized"));
  });
  namespace.on("connection", (socket) => {
    void socket.join(CONSOLE_ROOM);
  });
}
