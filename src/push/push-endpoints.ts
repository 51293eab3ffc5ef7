// Which Web Push endpoints the hub posts to. A subscription names its own endpoint, so the hub only sends
// to the push services it was told about (an origin, or `https://*.example.com` for its subdomains); any
// other URL would let a visitor make the hub post wherever they like.

export interface EndpointPattern {
  protocol: "https:" | "http:";
  /** Exact host (with its port, if any), or the suffix after `*.`. */
  host: string;
  wildcard: boolean;
}

/** Comma-separated origins (`https://push.example`, `https://*.example`, `http://127.0.0.1:9000`). */
export function parseEndpointPatterns(text: string): EndpointPattern[] {
  return text
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const match = /^(https?:)\/\/(\*\.)?([a-z0-9.-]+(?::\d{1,5})?|\[[0-9a-f:]+\](?::\d{1,5})?)\/?$/i.exec(part);
      if (!match) throw new Error(`"${part}" is not an origin like https://push.example or https://*.example`);
      return { protocol: match[1] as "https:" | "http:", host: match[3]!.toLowerCase(), wildcard: Boolean(match[2]) };
    });
}

export function endpointAllowed(patterns: readonly EndpointPattern[], endpoint: string): boolean {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return false;
  }
  if (url.username || url.password) return false;
  const host = url.host.toLowerCase();
  return patterns.some(
    (pattern) =>
      url.protocol === pattern.protocol &&
      (pattern.wildcard ? host.endsWith(`.${pattern.host}`) : host === pattern.host),
  );
}
