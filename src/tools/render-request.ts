// Turns a tool's declared request into the HTTP request the hub sends: `$env.NAME` from the environment,
// `$job.id` in paths, and body keys with no value taken from the tool-call arguments.
import type { Tool } from "./tool-file.js";

export interface RenderedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

type EnvLookup = (name: string) => string | undefined;

export function substitute(text: string, env: EnvLookup, jobId?: string): string {
  return text
    .replace(/\$env\.([A-Za-z_][A-Za-z0-9_]*)/g, (_m, name: string) => env(name) ?? "")
    .replace(/\$job\.id/g, () => (jobId === undefined ? "$job.id" : encodeURIComponent(jobId)));
}

function substituteDeep(value: unknown, env: EnvLookup): unknown {
  if (typeof value === "string") return substitute(value, env);
  if (Array.isArray(value)) return value.map((item) => substituteDeep(item, env));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substituteDeep(item, env)]));
  }
  return value;
}

function joinUrl(base: string, path: string): string {
  if (!path) return base;
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

/** The request that starts (or, for a synchronous tool, answers) a tool call. */
export function renderToolRequest(tool: Tool, args: Record<string, unknown>, env: EnvLookup): RenderedRequest {
  const { method, base_url, path, headers, body } = tool.request;
  const url = new URL(joinUrl(substitute(base_url, env), substitute(path, env)));
  const renderedHeaders = Object.fromEntries(
    Object.entries(headers).map(([key, value]) => [key, substitute(value, env)]),
  );
  let payload: Record<string, unknown> | undefined;
  if (body) {
    payload = {};
    for (const [key, value] of Object.entries(body)) {
      if (value === null || value === undefined) {
        if (args[key] !== undefined) payload[key] = args[key];
      } else payload[key] = substituteDeep(value, env);
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
  tool: Tool,
  jobId: string,
  text: string,
  env: EnvLookup,
): RenderedRequest | undefined {
  const message = tool.async?.message;
  if (!message) return undefined;
  const headers = Object.fromEntries(
    Object.entries(tool.request.headers).map(([key, value]) => [key, substitute(value, env)]),
  );
  const url = joinUrl(substitute(tool.request.base_url, env), substitute(message.path, env, jobId));
  const payload: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(message.body ?? { text: null }))
    payload[key] = value === null || value === undefined ? text : substituteDeep(value, env);
  return {
    method: message.method,
    url,
    headers: { ...headers, "Content-Type": "application/json", "X-Vatio-Job-Id": jobId },
    body: JSON.stringify(payload),
  };
}

/** The request that calls a job off on the backend, or undefined when the tool declares none. */
export function renderCancelRequest(tool: Tool, jobId: string, env: EnvLookup): RenderedRequest | undefined {
  const cancel = tool.async?.cancel;
  if (!cancel) return undefined;
  const headers = Object.fromEntries(
    Object.entries(tool.request.headers).map(([key, value]) => [key, substitute(value, env)]),
  );
  const url = joinUrl(substitute(tool.request.base_url, env), substitute(cancel.path, env, jobId));
  return { method: cancel.method, url, headers: { ...headers, "X-Vatio-Job-Id": jobId }, body: undefined };
}
