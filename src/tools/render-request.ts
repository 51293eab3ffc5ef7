// Turns a tool's declared request into the HTTP request the hub sends: `$env.NAME` from the environment,
// `$job.id` by the job's id (placeholders.ts), and body keys with no value taken from the tool-call arguments.
import { fillPlaceholders } from "./placeholders.js";
import type { ToolDefinition } from "./tool-definition.js";

export interface RenderedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

type EnvLookup = (name: string) => string | undefined;

/** `jobId` fills `$job.id`, URL-encoded (it is a UUID: the encoding changes nothing, wherever it stands). */
export function substitute(text: string, env: EnvLookup, jobId?: string): string {
  return fillPlaceholders(text, (namespace, name) => {
    if (namespace === "env" && name !== undefined) return env(name) ?? "";
    if (namespace === "job" && name === "id" && jobId !== undefined) return encodeURIComponent(jobId);
    return undefined;
  });
}

function substituteDeep(value: unknown, env: EnvLookup, jobId: string | undefined): unknown {
  if (typeof value === "string") return substitute(value, env, jobId);
  if (Array.isArray(value)) return value.map((item) => substituteDeep(item, env, jobId));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substituteDeep(item, env, jobId)]));
  }
  return value;
}

function joinUrl(base: string, path: string): string {
  if (!path) return base;
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

/**
 * The request that starts (or, for a synchronous tool, answers) a tool call; `jobId` is the job's, for an
 * async tool.
 */
export function renderToolRequest(
  tool: Pick<ToolDefinition, "request">,
  args: Record<string, unknown>,
  env: EnvLookup,
  jobId?: string,
): RenderedRequest {
  if (!tool.request) throw new Error("an MCP server's tool has no HTTP request");
  const { method, base_url, path, headers, body } = tool.request;
  const url = new URL(joinUrl(substitute(base_url, env, jobId), substitute(path, env, jobId)));
  const renderedHeaders = Object.fromEntries(
    Object.entries(headers).map(([key, value]) => [key, substitute(value, env, jobId)]),
  );
  let payload: Record<string, unknown> | undefined;
  if (body) {
    payload = {};
    for (const [key, value] of Object.entries(body)) {
      if (value === null || value === undefined) {
        if (args[key] !== undefined) payload[key] = args[key];
      } else payload[key] = substituteDeep(value, env, jobId);
    }
  } else if (method === "GET" || method === "DELETE") {
    // No declared body: the arguments travel as the query string.
    for (const [key, value] of Object.entries(args)) {
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
  const headers = Object.fromEntries(
    Object.entries(tool.request.headers).map(([key, value]) => [key, substitute(value, env)]),
  );
  const url = joinUrl(substitute(tool.request.base_url, env), substitute(message.path, env, jobId));
  const payload: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(message.body ?? { text: null }))
    payload[key] = value === null || value === undefined ? text : substituteDeep(value, env, jobId);
  return {
    method: message.method,
    url,
    headers: { ...headers, "Content-Type": "application/json", "X-Vatio-Job-Id": jobId },
    body: JSON.stringify(payload),
  };
}

/**
 * The request that calls a job off on the backend, or undefined when the tool declares none: the cancel
 * method and path, the request's base URL and headers, and `X-Vatio-Job-Id`. No body.
 */
export function renderCancelRequest(
  tool: Pick<ToolDefinition, "request" | "async">,
  jobId: string,
  env: EnvLookup,
): RenderedRequest | undefined {
  const cancel = tool.async?.cancel;
  if (!cancel || !tool.request) return undefined;
  const headers = Object.fromEntries(
    Object.entries(tool.request.headers).map(([key, value]) => [key, substitute(value, env, jobId)]),
  );
  const url = joinUrl(substitute(tool.request.base_url, env, jobId), substitute(cancel.path, env, jobId));
  return { method: cancel.method, url, headers: { ...headers, "X-Vatio-Job-Id": jobId }, body: undefined };
}
