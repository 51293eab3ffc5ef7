// One HTTP call to a tool backend, bounded in time and size and never redirected. Answers are read as JSON
// when they are JSON.
import { refusedRedirect } from "../redirect-refusal.js";
import type { RenderedRequest } from "../tools/render-request.js";

/**
 * The largest answer read from a backend, as the largest result it may post to its callback URL: one result,
 * whichever way it comes. A larger answer is a failure, never read to its end.
 */
export const RESULT_MAX_BYTES = 1024 * 1024;
const tooLarge = `the backend's answer is larger than 1 MiB (${RESULT_MAX_BYTES} bytes), which is not read`;

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
  const text = await boundedText(response);
  if (text === undefined) return { ok: false, reason: tooLarge, status: response.status };
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { ok: true, status: response.status, body };
}

/** The answer's text, or undefined past RESULT_MAX_BYTES (declared or counted); a broken body reads as "". */
async function boundedText(response: Response): Promise<string | undefined> {
  if (Number(response.headers.get("content-length") ?? 0) > RESULT_MAX_BYTES) {
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let seen = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      seen += value.length;
      if (seen > RESULT_MAX_BYTES) {
        await reader.cancel().catch(() => undefined);
        return undefined;
      }
      chunks.push(value);
    }
  } catch {
    return "";
  }
  return Buffer.concat(chunks).toString("utf8");
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}
