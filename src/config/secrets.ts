// The hub's own secrets (API keys, the callback secret): from the environment, or in development generated
// once and kept in the data folder.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { writeSecretFile } from "../secret-file.js";
import type { Env, ParsedEnv } from "./env.js";

export interface Secrets {
  hubApiKey: string;
  consoleApiKey: string;
  callbackSecret: string;
}

export const secretEnv: Record<keyof Secrets, keyof Env> = {
  hubApiKey: "HUB_API_KEY",
  consoleApiKey: "CONSOLE_API_KEY",
  callbackSecret: "CALLBACK_SECRET",
};

/**
 * Secrets come from the environment; in development the missing ones are generated once and kept in
 * `<dataDir>/secrets.json` so they survive restarts. In production a missing secret is an error (found by
 * productionProblems before this runs).
 */
export function resolveSecrets(env: ParsedEnv, dataDir: string) {
  const file = path.join(dataDir, "secrets.json");
  const stored: Partial<Secrets> = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Partial<Secrets>) : {};
  const secrets = {} as Secrets;
  const generated: (keyof Secrets)[] = [];
  for (const [key, name] of Object.entries(secretEnv) as [keyof Secrets, keyof Env][]) {
    const fromEnv = env[name] as string | undefined;
    if (fromEnv) {
      secrets[key] = fromEnv;
    } else if (stored[key]) {
      secrets[key] = stored[key];
    } else {
      secrets[key] = randomBytes(24).toString("base64url");
      stored[key] = secrets[key];
      generated.push(key);
    }
  }
  if (generated.length > 0) {
    mkdirSync(dataDir, { recursive: true });
    writeSecretFile(file, JSON.stringify(stored, null, 2) + "\n");
  }
  return { secrets, generated };
}
