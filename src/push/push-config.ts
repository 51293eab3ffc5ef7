// Push notifications' settings. VAPID keys come from the environment, else (outside production) they are
// generated once and kept in `<dataDir>/secrets.json` beside the hub's other secrets, so subscriptions made
// against the public key keep working across restarts. FCM sends with a service account's key.
import { createPrivateKey } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import webpush from "web-push";
import { z } from "zod";
import { writeSecretFile } from "../secret-file.js";
import { parseEndpointPatterns, type EndpointPattern } from "./push-endpoints.js";

const optional = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

/** The push variables, merged into the environment's schema by src/config.ts. */
export const pushEnvShape = {
  VAPID_PUBLIC_KEY: optional,
  VAPID_PRIVATE_KEY: optional,
  VAPID_SUBJECT: optional,
  // Where Web Push may send: push services' origins, `*.` for any subdomain (a subscription names its own
  // endpoint, so without this list a visitor could make the hub post anywhere).
  WEB_PUSH_ENDPOINTS: optional,
  FCM_SERVICE_ACCOUNT: optional,
  GOOGLE_APPLICATION_CREDENTIALS: optional,
  FCM_BASE_URL: z.url().default("https://fcm.googleapis.com"),
  PUSH_RETRY_BASE_MS: z.coerce.number().int().positive().default(5000),
  PUSH_MAX_ATTEMPTS: z.coerce.number().int().positive().max(20).default(5),
};

export type PushEnv = z.output<z.ZodObject<typeof pushEnvShape>>;

/** The push services browsers subscribe with today: Chrome/Edge (FCM), Firefox, Safari, legacy Edge. */
export const DEFAULT_WEB_PUSH_ENDPOINTS =
  "https://fcm.googleapis.com,https://updates.push.services.mozilla.com,https://web.push.apple.com," +
  "https://*.push.apple.com,https://*.notify.windows.com";

export interface WebPushConfig {
  publicKey: string;
  privateKey: string;
  /** `mailto:` or `https:`: how a push service reaches the hub's operator. */
  subject: string;
  /** Whether the keys were generated on this start (kept in secrets.json). */
  generated: boolean;
  endpoints: EndpointPattern[];
}

export interface ServiceAccount {
  projectId: string;
  clientEmail: string;
  privateKey: string;
  privateKeyId: string | undefined;
  tokenUri: string;
}

export interface PushConfig {
  /** Off when no keys are set in production. */
  webPush: WebPushConfig | undefined;
  /** Off without a service account. */
  fcm: { baseUrl: string; account: ServiceAccount } | undefined;
  /** First wait after a 429/5xx; doubles each attempt. */
  retryBaseMs: number;
  /** Sends per notification at most, the first one included. */
  maxAttempts: number;
}

export class PushConfigError extends Error {}

export function pushConfig(
  env: PushEnv,
  options: { dataDir: string; production: boolean; publicUrl: string },
): PushConfig {
  return {
    webPush: webPushConfig(env, options),
    fcm: fcmConfig(env),
    retryBaseMs: env.PUSH_RETRY_BASE_MS,
    maxAttempts: env.PUSH_MAX_ATTEMPTS,
  };
}

function webPushConfig(
  env: PushEnv,
  options: { dataDir: string; production: boolean; publicUrl: string },
): WebPushConfig | undefined {
  let endpoints: EndpointPattern[];
  try {
    endpoints = parseEndpointPatterns(env.WEB_PUSH_ENDPOINTS ?? DEFAULT_WEB_PUSH_ENDPOINTS);
  } catch (error) {
    throw new PushConfigError(`WEB_PUSH_ENDPOINTS: ${(error as Error).message}`);
  }
  const subject =
    env.VAPID_SUBJECT ?? (options.publicUrl.startsWith("https:") ? options.publicUrl : "mailto:push@localhost");
  if (!/^(mailto:|https:)/.test(subject)) throw new PushConfigError("VAPID_SUBJECT: must be a mailto: or https: URL");
  if (env.VAPID_PUBLIC_KEY || env.VAPID_PRIVATE_KEY) {
    if (!env.VAPID_PUBLIC_KEY || !env.VAPID_PRIVATE_KEY)
      throw new PushConfigError("VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY: set both, or neither");
    checkKeys(env.VAPID_PUBLIC_KEY, env.VAPID_PRIVATE_KEY);
    return { publicKey: env.VAPID_PUBLIC_KEY, privateKey: env.VAPID_PRIVATE_KEY, subject, generated: false, endpoints };
  }
  // In production every process must sign with the same keys: they are the operator's to set.
  if (options.production) return undefined;
  const { keys, generated } = storedVapidKeys(options.dataDir);
  return { ...keys, subject, generated, endpoints };
}

/** The VAPID pair kept in secrets.json, generated and added to it the first time. */
function storedVapidKeys(dataDir: string): { keys: { publicKey: string; privateKey: string }; generated: boolean } {
  const file = path.join(dataDir, "secrets.json");
  const stored = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>) : {};
  const { vapidPublicKey, vapidPrivateKey } = stored;
  if (typeof vapidPublicKey === "string" && typeof vapidPrivateKey === "string") {
    checkKeys(vapidPublicKey, vapidPrivateKey);
    return { keys: { publicKey: vapidPublicKey, privateKey: vapidPrivateKey }, generated: false };
  }
  const keys = webpush.generateVAPIDKeys();
  mkdirSync(dataDir, { recursive: true });
  writeSecretFile(
    file,
    JSON.stringify({ ...stored, vapidPublicKey: keys.publicKey, vapidPrivateKey: keys.privateKey }, null, 2) + "\n",
  );
  return { keys, generated: true };
}

function checkKeys(publicKey: string, privateKey: string): void {
  const pub = Buffer.from(publicKey, "base64url");
  if (pub.length !== 65 || pub[0] !== 4)
    throw new PushConfigError("VAPID_PUBLIC_KEY: must be an uncompressed P-256 point, base64url (65 bytes)");
  if (Buffer.from(privateKey, "base64url").length !== 32)
    throw new PushConfigError("VAPID_PRIVATE_KEY: must be a P-256 private key, base64url (32 bytes)");
}

const serviceAccountSchema = z.object({
  type: z.literal("service_account").optional(),
  project_id: z.string().min(1),
  client_email: z.string().min(1),
  private_key: z.string().min(1),
  private_key_id: z.string().optional(),
  token_uri: z.url().default("https://oauth2.googleapis.com/token"),
});

function fcmConfig(env: PushEnv): PushConfig["fcm"] {
  let text: string | undefined;
  let source: string;
  if (env.FCM_SERVICE_ACCOUNT) {
    text = env.FCM_SERVICE_ACCOUNT;
    source = "FCM_SERVICE_ACCOUNT";
  } else if (env.GOOGLE_APPLICATION_CREDENTIALS) {
    source = "GOOGLE_APPLICATION_CREDENTIALS";
    try {
      text = readFileSync(env.GOOGLE_APPLICATION_CREDENTIALS, "utf8");
    } catch (error) {
      throw new PushConfigError(
        `${source}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? "error"})`,
      );
    }
  } else {
    return undefined;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new PushConfigError(`${source}: not valid JSON`);
  }
  const parsed = serviceAccountSchema.safeParse(json);
  if (!parsed.success) {
    // Names the fields only: the values include a private key.
    const fields = parsed.error.issues.map((issue) => issue.path.join(".")).join(", ");
    throw new PushConfigError(`${source}: not a service account key (missing or invalid: ${fields})`);
  }
  try {
    createPrivateKey(parsed.data.private_key);
  } catch {
    throw new PushConfigError(`${source}: private_key is not a PEM private key`);
  }
  return {
    baseUrl: env.FCM_BASE_URL.replace(/\/+$/, ""),
    account: {
      projectId: parsed.data.project_id,
      clientEmail: parsed.data.client_email,
      privateKey: parsed.data.private_key,
      privateKeyId: parsed.data.private_key_id,
      tokenUri: parsed.data.token_uri,
    },
  };
}
