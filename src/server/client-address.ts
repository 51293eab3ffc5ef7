// The client's address as the configured proxies report it (X-Forwarded-For), the way express computes
// `req.ip`: socket.io's handshakes need it too, for the per-address limits.
import type { IncomingMessage } from "node:http";
import proxyAddr from "proxy-addr";
import type { Config } from "../config.js";

export function clientAddressOf(trust: Config["trustProxy"]): (request: IncomingMessage) => string {
  const trusted =
    typeof trust === "boolean"
      ? () => trust
      : typeof trust === "number"
        ? (_address: string, hop: number) => hop < trust
        : proxyAddr.compile(trust);
  return (request) => proxyAddr(request, trusted);
}
