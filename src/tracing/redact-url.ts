// What an HTTP span may say of a URL: its path with the secret segments replaced, its query's names without
// their values. The hub's own URLs carry tokens in the path (callbacks, media, uploads) and sessions in the
// query (the widget's socket); a third party's may carry keys in either.

/** A segment that could be a credential: long, or a signed token (dots, base64url), and not a UUID or a word. */
function secretLike(segment: string): boolean {
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(segment)) return false;
  // A version, or a word of the route (`socket.io`, `widget.js`): no digits, no capitals.
  if (/^v\d+(\.\d+)?$/.test(segment) || /^[a-z][a-z.-]{0,31}$/.test(segment)) return false;
  return segment.length >= 16 || /[.~%]/.test(segment);
}

export function redactPath(path: string): string {
  return path
    .split("/")
    .map((segment) => (secretLike(segment) ? "REDACTED" : segment))
    .join("/");
}

/** `a=1&b=2` → `a=REDACTED&b=REDACTED` (the names say what was asked; the values may be keys). */
export function redactQuery(query: string): string {
  return [...new URLSearchParams(query).keys()].map((name) => `${name}=REDACTED`).join("&");
}

/** A path with its query (`req.url`), redacted: [path, query or undefined]. */
export function redactTarget(target: string): [string, string | undefined] {
  const at = target.indexOf("?");
  if (at < 0) return [redactPath(target), undefined];
  return [redactPath(target.slice(0, at)), redactQuery(target.slice(at + 1))];
}

/** A full URL, redacted, without user or password. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const query = parsed.search ? `?${redactQuery(parsed.search.slice(1))}` : "";
    return `${parsed.protocol}//${parsed.host}${redactPath(parsed.pathname)}${query}`;
  } catch {
    return "REDACTED";
  }
}
