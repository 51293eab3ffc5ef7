// Turns a tool's declared request into the HTTP request the hub sends: `$env.NAME` from the environment,
// `$job.id` by the job's id (placeholders.ts), `$person.*` by the conversation's verified person
// (person-placeholder.ts), and body keys with no value taken from the tool-call arguments.
import type { PersonIdentity } from "../conversations/person-identity.js";
import { headerSafe, personValue, requirePersonIdentifier } from "./person-placeholder.js";
import { fillPlaceholders, isPersonPlaceholder, placeholdersIn } from "./placeholders.js";
import type { ToolDefinition } from "./tool-definition.js";

export interface RenderedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

type EnvLookup = (name: string) => string | undefined;

/** What a start request is filled with besides the environment. */
export interface RenderOptions {
  /** The job's id, for an async tool (`$job.id`). */
  jobId?: string | undefined;
  /** The conversation's verified person (`$person.*`); required when the request uses it. */
  person?: PersonIdentity | undefined;
}

/** Where a value stands: the person's identity is URL-encoded in a URL, made header-safe in a header. */
type Place = "url" | "header" | "body";

function fill(text: string, env: EnvLookup, options: RenderOptions, place: Place): string {
  const { jobId, person } = options;
  return fillPlaceholders(text, (namespace, name) => {
    if (namespace === "env" && name !== undefined) return env(name) ?? "";
    if (namespace === "job" && name === "id" && jobId !== undefined) return encodeURIComponent(jobId);
    if (namespace === "person" && person) {
      const value = personValue(person, name);
      if (value === undefined) return undefined;
      return place === "url" ? encodeURIComponent(value) : place === "header" ? headerSafe(value) : value;
    }
    return undefined;
  });
}

/** `jobId` fills `$job.id`, URL-encoded (it is a UUID: the encoding changes nothing, wherever it stands). */
export function substitute(text: string, env: EnvLookup, jobId?: string): string {
  return fill(text, env, { jobId }, "url");
}

function substituteDeep(value: unknown, env: EnvLookup, options: RenderOptions): unknown {
  if (typeof value === "string") return fill(value, env, options, "body");
  if (Array.isArray(value)) return value.map((item) => substituteDeep(item, env, options));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substituteDeep(item, env, options)]));
  }
  return value;
}

/** Whether a text carries the person's identity. */
const carriesPerson = (text: string) =>
  placeholdersIn(text).some((placeholder) => isPersonPlaceholder(placeholder.namespace, placeholder.name));

/**
 * The request's headers for a cancel or a message request: those carrying the person's identity are left out
 * (those requests name the job by its id; the identity goes with the start request only).
 */
function jobHeaders(headers: Record<string, string>, env: EnvLookup, jobId?: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers)
      .filter(([, value]) => !carriesPerson(value))
      .map(([key, value]) => [key, substitute(value, env, jobId)]),
  );
}

function joinUrl(base: string, path: string): string {
  if (!path) return base;
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

/**
 * The request that starts (or, for a synchronous tool, answers) a tool call. The fourth argument is the job's id
 * (an async tool), or the options: the job's id and the person. A request using `$person.*` without a person
 * is refused (409 `person_not_identified`): it is never sent with the placeholder, or nothing, in its place.
 * Arguments never override what the file fills: a body key with a value, a query parameter the path sets.
 */
export function renderToolRequest(
  tool: Pick<ToolDefinition, "request" | "mcp">,
  args: Record<string, unknown>,
  env: EnvLookup,
  jobIdOrOptions?: string | RenderOptions,
): RenderedRequest {
  if (!tool.request) throw new Error("an MCP server's tool has no HTTP request");
  const given = typeof jobIdOrOptions === "string" ? { jobId: jobIdOrOptions } : (jobIdOrOptions ?? {});
  const options: RenderOptions = { jobId: given.jobId, person: requirePersonIdentifier(tool, given.person) };
  const { method, base_url, path, headers, body } = tool.request;
  const url = new URL(joinUrl(fill(base_url, env, options, "url"), fill(path, env, options, "url")));
  const renderedHeaders = Object.fromEntries(
    Object.entries(headers).map(([key, value]) => [key, fill(value, env, options, "header")]),
  );
  let payload: Record<string, unknown> | undefined;
  if (body) {
    payload = {};
    for (const [key, value] of Object.entries(body)) {
      if (value === null || value === undefined) {
        if (args[key] !== undefined) payload[key] = args[key];
      } else payload[key] = substituteDeep(value, env, options);
    }
  } else if (method === "GET" || method === "DELETE") {
    // No declared body: the arguments travel as the query string — after what the path sets, never over it.
    const declared = new Set(url.searchParams.keys());
    for (const [key, value] of Object.entries(args)) {
      if (declared.has(key)) continue;
      url.searchParams.set(key, typeof value === "string" ? value : JSON.stringify(value));
    }
  } else {
    payload = args;
  }
  if (payload !== undefined) renderedHeaders["Content-Type"] ??= "application/json";
  return {
    method,
    url: url.toString(),
    headers: renderedHeaders,
    body: payload === undefined ? undefined : JSON.stringify(payload),
  };
}

/**
 * The request that gives a running job a message, or undefined when the tool declares none. The text is data:
 * it goes in the JSON body only (`{"text": …}`, or each key of the declared body that has no value), never in
 * the URL or a header.
 */
export function renderMessageRequest(
  tool: Pick<ToolDefinition, "request" | "async">,
  jobId: string,
  text: string,
  env: EnvLookup,
): RenderedRequest | undefined {
  const message = tool.async?.message;
  if (!message || !tool.request) return undefined;
  const headers = jobHeaders(tool.request.headers, env);
  const url = joinUrl(substitute(tool.request.base_url, env), substitute(message.path, env, jobId));
  const payload: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(message.body ?? { text: null }))
    payload[key] = value === null || value === undefined ? text : substituteDeep(value, env, { jobId });
  return {
    method: message.method,
    url,
    headers: { ...headers, "Content-Type": "application/json", "X-Vatio-Job-Id": jobId },
    body: JSON.stringify(payload),
  };
}

/**
 * The request that calls a job off on the backend, or undefined when the tool declares none: the cancel
 * method and path, the request's base URL and headers (but those carrying `$person.*`), and `X-Vatio-Job-Id`.
 * No body.
 */
export function renderCancelRequest(
  tool: Pick<ToolDefinition, "request" | "async">,
  jobId: string,
  env: EnvLookup,
): RenderedRequest | undefined {
  const cancel = tool.async?.cancel;
  if (!cancel || !tool.request) return undefined;
  const headers = jobHeaders(tool.request.headers, env, jobId);
  const url = joinUrl(substitute(tool.request.base_url, env, jobId), substitute(cancel.path, env, jobId));
  return { method: cancel.method, url, headers: { ...headers, "X-Vatio-Job-Id": jobId }, body: undefined };
}
