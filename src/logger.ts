// Structured JSON logs. Secrets and callback tokens are redacted wherever they appear.
import { pino, type Logger } from "pino";

export type { Logger };

const redactPaths = [
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "*.headers['x-vatio-callback-url']",
  "headers['x-vatio-callback-url']",
  "callbackUrl",
  "*.callbackUrl",
  "token",
  "*.token",
  "secret",
  "*.secret",
  "accessToken",
  "*.accessToken",
  // An HTTP client's error carries the request it made, Graph API token included.
  "err.config.headers.Authorization",
  "err.config.headers.authorization",
];

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: "chat-delivery-hub" },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: redactPaths, censor: "[redacted]" },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination as pino.DestinationStream | undefined,
  );
}
