// Where outgoing events go: one endpoint (EVENTS_URL + EVENTS_SECRET) or several (EVENTS_ENDPOINTS, a JSON
// list, each with its own secret and event filter). Checked here once, every problem naming its setting
// (`EVENTS_ENDPOINTS.1.url`), so a typo stops the start instead of losing events later.
import { createHash } from "node:crypto";
import { z } from "zod";
import { EVENT_TYPES } from "./event-types.js";

export interface EventEndpoint {
  /** Its position in the settings (EVENTS_URL is 0): the metrics' and logs' name for it. */
  index: number;
  /** A stable key (a hash of the URL, never the secret): its deliveries' `endpoint`. */
  key: string;
  url: string;
  secret: string;
  /** Event type patterns ("message.*", "job.ended", "*"); undefined: every type. */
  events: string[] | undefined;
}

/** The settings this module reads. */
export interface EventEndpointEnv {
  EVENTS_URL?: string | undefined;
  EVENTS_SECRET?: string | undefined;
  EVENTS_ENDPOINTS?: string | undefined;
}

/** Whether a pattern names a type, or a family of types ("message.*"), that exists. */
export function knownPattern(pattern: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith(".*")) return EVENT_TYPES.some((type) => type.startsWith(pattern.slice(0, -1)));
  return (EVENT_TYPES as readonly string[]).includes(pattern);
}

/** The same rule as the database's hub_event_wanted(): whether an endpoint takes an event type. */
export function wants(events: readonly string[] | undefined, type: string): boolean {
  if (!events) return true;
  return events.some(
    (pattern) =>
      pattern === type || pattern === "*" || (pattern.endsWith(".*") && type.startsWith(pattern.slice(0, -1))),
  );
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

const endpointUrl = z.string().trim().refine(isHttpUrl, "must be an http(s) URL");

const endpointSchema = z.strictObject({
  url: endpointUrl,
  secret: z.string().trim().min(1, "must be set"),
  events: z
    .array(
      z.string().refine(knownPattern, { message: `must be an event type (${EVENT_TYPES.join(", ")}) or "<prefix>.*"` }),
    )
    .min(1, "must name at least one event type (leave it out for all)")
    .optional(),
});

/** The key deliveries name an endpoint by: changing its secret or filter keeps what it is owed. */
export function endpointKey(url: string): string {
  return createHash("sha256").update(url).digest("hex").slice(0, 16);
}

/** The URL without credentials, query or path: what logs may say of an endpoint. */
export function endpointLabel(endpoint: Pick<EventEndpoint, "index" | "url">): string {
  try {
    const url = new URL(endpoint.url);
    return `#${endpoint.index} ${url.protocol}//${url.host}`;
  } catch {
    return `#${endpoint.index}`;
  }
}

export function eventEndpoints(
  env: EventEndpointEnv,
  options: { production: boolean; minSecretLength: number },
): { endpoints: EventEndpoint[] } | { problems: string[] } {
  const problems: string[] = [];
  const found: Omit<EventEndpoint, "index" | "key">[] = [];
  const names: string[] = [];
  if (env.EVENTS_URL && env.EVENTS_ENDPOINTS)
    problems.push("EVENTS_ENDPOINTS: set either EVENTS_URL (one endpoint) or EVENTS_ENDPOINTS (several), not both");
  else if (env.EVENTS_URL) {
    const url = endpointUrl.safeParse(env.EVENTS_URL);
    if (!url.success) problems.push(`EVENTS_URL: ${url.error.issues[0]!.message}`);
    if (!env.EVENTS_SECRET)
      problems.push("EVENTS_SECRET: must be set when EVENTS_URL is (each event is signed with it)");
    if (url.success && env.EVENTS_SECRET) {
      found.push({ url: url.data, secret: env.EVENTS_SECRET, events: undefined });
      names.push("EVENTS_URL");
    }
  } else if (env.EVENTS_SECRET) problems.push("EVENTS_URL: must be set when EVENTS_SECRET is");
  else if (env.EVENTS_ENDPOINTS) {
    let list: unknown;
    try {
      list = JSON.parse(env.EVENTS_ENDPOINTS);
    } catch {
      problems.push("EVENTS_ENDPOINTS: not valid JSON (a list of {url, secret, events?})");
    }
    if (list !== undefined) {
      const parsed = z.array(endpointSchema).min(1, "must list at least one endpoint").safeParse(list);
      if (!parsed.success)
        for (const issue of parsed.error.issues)
          problems.push(["EVENTS_ENDPOINTS", ...issue.path].join(".") + `: ${issue.message}`);
      else
        parsed.data.forEach((endpoint, index) => {
          found.push({ url: endpoint.url, secret: endpoint.secret, events: endpoint.events });
          names.push(`EVENTS_ENDPOINTS.${index}`);
        });
    }
  }
  const seen = new Set<string>();
  found.forEach((endpoint, index) => {
    const name = names[index]!;
    const field = name === "EVENTS_URL" ? "EVENTS_URL" : `${name}.url`;
    const secretField = name === "EVENTS_URL" ? "EVENTS_SECRET" : `${name}.secret`;
    if (seen.has(endpoint.url)) problems.push(`${field}: this URL is listed twice`);
    seen.add(endpoint.url);
    if (options.production && !endpoint.url.toLowerCase().startsWith("https://"))
      problems.push(`${field}: must be an https URL when NODE_ENV=production (events carry the conversation)`);
    if (options.production && endpoint.secret.length < options.minSecretLength)
      problems.push(
        `${secretField}: is ${endpoint.secret.length} character(s) long; in production a secret must be at least ` +
          `${options.minSecretLength}`,
      );
  });
  if (problems.length > 0) return { problems };
  return { endpoints: found.map((endpoint, index) => ({ ...endpoint, index, key: endpointKey(endpoint.url) })) };
}
