// OAuth 2.0 access tokens for FCM's HTTP v1 API from a service account (RFC 7523): a JWT signed RS256 with
// the account's private key is exchanged at its token_uri. One token serves every send until shortly before
// it expires; concurrent sends wait for the same exchange.
import { createPrivateKey, sign, type KeyObject } from "node:crypto";
import type { ServiceAccount } from "./push-config.js";
import { PUSH_REQUEST_TIMEOUT_MS, retryAfterMs } from "./push-sender.js";

export const FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging";
/** Google issues tokens for an hour at most; the assertion asks for that. */
const ASSERTION_LIFETIME_S = 3600;
/** A token this close to its expiry is replaced rather than used. */
const REFRESH_MARGIN_MS = 5 * 60_000;

/** The token exchange failed; `retriable` when the server did not refuse the account itself. */
export class FcmAuthError extends Error {
  constructor(
    readonly code: string,
    readonly retriable: boolean,
    readonly waitMs?: number,
  ) {
    super(`FCM access token: ${code}`);
  }
}

export interface FcmAccessTokens {
  get(): Promise<string>;
  /** FCM refused the token (401): the next send exchanges a new one. */
  invalidate(token: string): void;
}

const base64url = (value: string | Buffer) => Buffer.from(value).toString("base64url");

export function serviceAccountAssertion(account: ServiceAccount, key: KeyObject, nowMs: number): string {
  const iat = Math.floor(nowMs / 1000);
  const header = { alg: "RS256", typ: "JWT", ...(account.privateKeyId ? { kid: account.privateKeyId } : {}) };
  const claims = {
    iss: account.clientEmail,
    scope: FCM_SCOPE,
    aud: account.tokenUri,
    iat,
    exp: iat + ASSERTION_LIFETIME_S,
  };
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  return `${input}.${base64url(sign("sha256", Buffer.from(input), key))}`;
}

export function fcmAccessTokens(account: ServiceAccount, now: () => number = Date.now): FcmAccessTokens {
  const key = createPrivateKey(account.privateKey);
  let cached: { token: string; refreshAt: number } | undefined;
  let exchanging: Promise<string> | undefined;

  async function exchange(): Promise<string> {
    let res: Response;
    try {
      res = await fetch(account.tokenUri, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
          assertion: serviceAccountAssertion(account, key, now()),
        }),
        redirect: "manual",
        signal: AbortSignal.timeout(PUSH_REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new FcmAuthError((error as Error).name === "TimeoutError" ? "timeout" : "network", true);
    }
    const body = (await res.json().catch(() => undefined)) as
      { access_token?: unknown; expires_in?: unknown; error?: unknown } | undefined;
    if (!res.ok || typeof body?.access_token !== "string") {
      const reason = typeof body?.error === "string" ? body.error : `http_${res.status}`;
      const retriable = res.status === 429 || res.status >= 500;
      throw new FcmAuthError(reason, retriable, retryAfterMs(res.headers.get("retry-after")));
    }
    const lifetimeMs = (typeof body.expires_in === "number" ? body.expires_in : ASSERTION_LIFETIME_S) * 1000;
    cached = {
      token: body.access_token,
      refreshAt: now() + lifetimeMs - Math.min(REFRESH_MARGIN_MS, lifetimeMs / 2),
    };
    return body.access_token;
  }

  return {
    async get() {
      if (cached && now() < cached.refreshAt) return cached.token;
      exchanging ??= exchange().finally(() => (exchanging = undefined));
      return exchanging;
    },
    invalidate(token) {
      if (cached?.token === token) cached = undefined;
    },
  };
}
