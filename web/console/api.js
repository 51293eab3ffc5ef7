// The console API client: Bearer key, JSON in and out, and the hub's JSON errors as ApiError (shown in the
// status line). `optional` asks an endpoint that may not exist on this hub: a 404 answers null instead.
import { state } from "./state.js";
import { setStatus } from "./status.js";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let onUnauthorized = () => {};
/** What a refused key does (sign out): set by the session module. */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export async function api(method, path, body) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: {
        Authorization: `Bearer ${state.key}`,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, "network", "the hub cannot be reached");
  }
  const text = await res.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const error = (parsed && parsed.error) || {};
    const details = Array.isArray(error.details)
      ? ` (${error.details.map((d) => `${d.field}: ${d.message}`).join("; ")})`
      : "";
    const failure = new ApiError(
      res.status,
      error.code || `http_${res.status}`,
      `${error.message || res.statusText}${details}`,
    );
    failure.details = error.details;
    /** The whole error object: a 409 may name who has the conversation. */
    failure.body = error;
    throw failure;
  }
  return parsed;
}

/** The hub has no such route (a feature another version of the hub has): the page hides that feature. */
export const isMissingRoute = (error) => error instanceof ApiError && error.status === 404;

/** An endpoint this hub may not have: its answer, or null when it answers 404. Other errors throw. */
export async function optional(method, path, body) {
  try {
    return await api(method, path, body);
  } catch (error) {
    if (isMissingRoute(error)) return null;
    throw error;
  }
}

/** The body that names who acts: the shared key says who with `agent`; a member key is the member already. */
export const asAgent = (body) => (state.member ? { ...body } : { ...body, agent: state.agent });

export function showError(action, error) {
  if (error instanceof ApiError && error.status === 401) {
    onUnauthorized(`${action}: the console key was refused`);
    return;
  }
  const code = error instanceof ApiError && error.status ? ` [${error.status} ${error.code}]` : "";
  setStatus(`${action} failed: ${error.message}${code}`, "error");
}
