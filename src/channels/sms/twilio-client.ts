// Twilio's REST API for one account: form-encoded requests with the account's basic auth, every answer read
// (never thrown) so the caller can tell "Twilio refused" from "Twilio never answered". A redirect is never
// followed: it would carry the credentials to whatever host it names.
import { redirectRefusal } from "../../redirect-refusal.js";
import type { SmsConfig } from "./sms-config.js";
import { parseTwilioError, type TwilioError } from "./twilio-error.js";

const TIMEOUT_MS = 15_000;

/** The fields of Twilio's Message resource the hub reads. */
export interface TwilioMessage {
  sid: string;
  status: string;
  error_code: number | null;
}

export type TwilioAnswer<T> = { ok: true; data: T } | { ok: false; error: TwilioError };

export interface TwilioClient {
  /** POST /2010-04-01/Accounts/{Sid}/Messages.json with these fields (a repeated field once per value). */
  createMessage(fields: [string, string][]): Promise<TwilioAnswer<TwilioMessage>>;
}

/** Basic auth with the account's SID and token: for the API and for the person's MMS files. */
export const basicAuth = (config: Pick<SmsConfig, "accountSid" | "authToken">) =>
  `Basic ${Buffer.from(`${config.accountSid}:${config.authToken}`).toString("base64")}`;

export function twilioClient(config: SmsConfig): TwilioClient {
  const url = `${config.apiUrl}/2010-04-01/Accounts/${encodeURIComponent(config.accountSid)}/Messages.json`;
  return {
    async createMessage(fields) {
      try {
        const response = await fetch(url, {
          method: "POST",
          headers: {
            Authorization: basicAuth(config),
            "Content-Type": "application/x-www-form-urlencoded",
            Accept: "application/json",
          },
          body: new URLSearchParams(fields).toString(),
          redirect: "manual",
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        const body: unknown = await response.json().catch(() => undefined);
        if (response.ok) {
          const message = body as Partial<TwilioMessage> | undefined;
          if (typeof message?.sid === "string")
            return {
              ok: true,
              data: { sid: message.sid, status: String(message.status ?? ""), error_code: message.error_code ?? null },
            };
          return { ok: false, error: parseTwilioError(response.status, undefined, "answered without a message sid") };
        }
        const redirect = redirectRefusal("the Twilio API", url, response.status, response.headers.get("location"));
        if (redirect) return { ok: false, error: parseTwilioError(response.status, undefined, redirect) };
        return { ok: false, error: parseTwilioError(response.status, body) };
      } catch (error) {
        // No answer at all: connection refused, reset, or timed out.
        return { ok: false, error: parseTwilioError(null, undefined, (error as Error).name) };
      }
    },
  };
}
