// One HTTP call to a tool backend, bounded in time and never redirected. Answers are read as JSON when they
// are JSON.
import { refusedRedirect } from "../redirect-refusal.js";
import type { RenderedRequest } from "../tools/render-request.js";

export type BackendAnswer =
  { ok: true; status: number; body: unknown } | { ok: false; reason: string; status?: number; body?: unknown };

export async function callBackend(
  request: RenderedRequest,
  extraHeaders: Record<string, string>,
  timeoutMs: number,
): Promise<BackendAnswer> {
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: request.method,
      headers: { Accept: "application/json", ...request.headers, ...extraHeaders },
      body: request.body,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const name = (error as Error).name;
    const reason =
      name === "TimeoutError"
        ? `the backend did not answer within ${timeoutMs / 1000} s`
        : `the backend could not be reached (${describe(error)})`;
    return { ok: false, reason };
  }
  const redirect = refusedRedirect("the backend", request.url, response);
  if (redirect) {
    await response.body?.cancel().catch(() => undefined);
    return { ok: false, reason: redirect, status: response.status };
  }
  const text = await response.text().catch(() => "");
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { ok: true, status: response.status, body };
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}
