// How the hub is reached: the host in its default public URL, and which proxies may name a client's address.

/** The host in the default PUBLIC_URL: the one the hub listens on, or localhost when it listens on all. */
export function publicHost(host: string): string {
  if (host === "0.0.0.0" || host === "::" || host === "") return "localhost";
  return host.includes(":") ? `[${host}]` : host;
}

export function parseTrustProxy(value: string): boolean | number | string[] {
  const text = value.trim();
  if (text === "true" || text === "false") return text === "true";
  if (/^\d+$/.test(text)) return Number(text);
  return text
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);
}
