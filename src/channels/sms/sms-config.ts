// SMS through Twilio's Messages API (docs/channels/sms.md): the account, its auth token (which also signs
// Twilio's webhooks), and where SMS is sent from — one or more of the account's numbers (a conversation keeps
// the number the person wrote to) or a Messaging Service. Off unless the account is set. Merged into the
// environment's schema by src/config/env.ts; read into Config by src/config.ts.
import { z } from "zod";

const optional = z
  .string()
  .optional()
  .transform((value) => (value?.trim() ? value.trim() : undefined));

/** The SMS variables. */
export const smsEnvShape = {
  TWILIO_ACCOUNT_SID: optional,
  TWILIO_AUTH_TOKEN: optional,
  // The account's numbers SMS is sent from, E.164, comma-separated…
  TWILIO_FROM: optional,
  // …or a Messaging Service that picks the sender itself.
  TWILIO_MESSAGING_SERVICE_SID: optional,
  // Images as MMS attachments (MediaUrl) rather than links; only where the senders can send MMS.
  TWILIO_MMS: z.enum(["true", "false"]).default("false"),
  TWILIO_API_URL: z.url().default("https://api.twilio.com"),
};

export interface SmsConfig {
  accountSid: string;
  authToken: string;
  /** The numbers this hub answers for and sends from; empty with a Messaging Service that has its own. */
  from: string[];
  messagingServiceSid: string | undefined;
  mms: boolean;
  apiUrl: string;
}

type SmsEnv = {
  [K in keyof typeof smsEnvShape]: z.output<(typeof smsEnvShape)[K]>;
};

const E164 = /^\+[1-9]\d{6,14}$/;
const ACCOUNT_SID = /^AC[0-9a-fA-F]{32}$/;
const SERVICE_SID = /^MG[0-9a-fA-F]{32}$/;

/** The SMS channel's settings: undefined when none is set, every problem at once when some are wrong. */
export function smsConfig(env: SmsEnv): { sms: SmsConfig | undefined } | { problems: string[] } {
  const { TWILIO_ACCOUNT_SID: sid, TWILIO_AUTH_TOKEN: token, TWILIO_FROM: fromText } = env;
  const service = env.TWILIO_MESSAGING_SERVICE_SID;
  if (!sid && !token && !fromText && !service) return { sms: undefined };
  const problems: string[] = [];
  if (!sid) problems.push("TWILIO_ACCOUNT_SID: required for SMS (the Account SID on the Twilio console, AC…)");
  else if (!ACCOUNT_SID.test(sid)) problems.push("TWILIO_ACCOUNT_SID: expected AC followed by 32 hex digits");
  if (!token)
    problems.push("TWILIO_AUTH_TOKEN: required for SMS (the account's Auth Token; it signs Twilio's webhooks)");
  const from = (fromText ?? "")
    .split(",")
    .map((number) => number.trim().replace(/[\s()-]/g, ""))
    .filter(Boolean);
  for (const number of from)
    if (!E164.test(number)) problems.push(`TWILIO_FROM: ${number} is not an E.164 number (+ and the country code)`);
  if (service !== undefined && !SERVICE_SID.test(service))
    problems.push("TWILIO_MESSAGING_SERVICE_SID: expected MG followed by 32 hex digits");
  if (from.length === 0 && !service)
    problems.push(
      "TWILIO_FROM: set the number(s) SMS is sent from (E.164, comma-separated), or TWILIO_MESSAGING_SERVICE_SID",
    );
  if (problems.length > 0) return { problems };
  return {
    sms: {
      accountSid: sid!,
      authToken: token!,
      from: [...new Set(from)],
      messagingServiceSid: service,
      mms: env.TWILIO_MMS === "true",
      apiUrl: env.TWILIO_API_URL.replace(/\/+$/, ""),
    },
  };
}
