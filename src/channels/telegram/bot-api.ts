// A Telegram Bot API client: `POST {api}/bot<token>/<method>` with a JSON body, every answer read (never
// thrown) as Telegram's envelope — `{ok: true, result}` or `{ok: false, error_code, description, parameters}`
// — so the caller can tell "Telegram refused" from "Telegram never answered". The token is in the URL: no
// URL, request or raw error of this module is ever logged, and a redirect (which would carry it elsewhere)
// is not followed.

export type BotAnswer<T> = { ok: true; result: T } | { ok: false; error: BotError };

export interface BotError {
  /** Telegram's error_code (the HTTP status), or null when no answer came. */
  code: number | null;
  description: string;
  /** `parameters.retry_after` of a 429: seconds to wait before the next request. */
  retryAfterSeconds: number | null;
}

export interface BotApi {
  call<T>(method: string, params: Record<string, unknown>): Promise<BotAnswer<T>>;
}

const TIMEOUT_MS = 15_000;

export function botApi(apiUrl: string, token: string): BotApi {
  return {
    async call<T>(method: string, params: Record<string, unknown>): Promise<BotAnswer<T>> {
      let response: Response;
      try {
        response = await fetch(`${apiUrl}/bot${token}/${method}`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(params),
          redirect: "manual",
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
      } catch (error) {
        // Named by its kind only: the error's own text may quote the URL, and with it the token.
        return {
          ok: false,
          error: { code: null, description: `no answer (${(error as Error).name})`, retryAfterSeconds: null },
        };
      }
      const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
      if (response.ok && body?.ok === true) return { ok: true, result: body.result as T };
      return { ok: false, error: botError(response.status, body) };
    },
  };
}

/** Telegram's error envelope, or what the HTTP answer says when it is not one. */
export function botError(status: number, body: Record<string, unknown> | undefined): BotError {
  const parameters = body?.parameters as { retry_after?: unknown } | undefined;
  const retryAfter = Number(parameters?.retry_after);
  const description =
    typeof body?.description === "string" && body.description
      ? body.description
      : status >= 300 && status < 400
        ? `HTTP ${status}: the Bot API redirected, which is not followed`
        : `HTTP ${status}`;
  return {
    code: typeof body?.error_code === "number" ? body.error_code : status,
    description: description.slice(0, 500),
    retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null,
  };
}
