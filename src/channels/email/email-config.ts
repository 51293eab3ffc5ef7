// E-mail's settings: where the hub sends (SMTP_URL, a relay or the provider's submission server), who it
// writes as (EMAIL_FROM), and its own SMTP listener for what people write (EMAIL_SMTP_*). The channel is on
// when SMTP_URL and EMAIL_FROM are both set; one without the other is a start-up error. Merged into the
// environment's schema by src/config/env.ts.
import { readFileSync } from "node:fs";
import { z } from "zod";

const MIB = 1024 * 1024;

const optional = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

/** The e-mail variables. */
export const emailEnvShape = {
  // smtp://user:pass@host:587 (STARTTLS when the server offers it) or smtps://user:pass@host:465.
  SMTP_URL: optional,
  // support@example.com, or "Example Support <support@example.com>".
  EMAIL_FROM: optional,
  // The hub's own SMTP listener for people's e-mail (off without a port).
  EMAIL_SMTP_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  EMAIL_SMTP_HOST: optional,
  // Largest e-mail accepted, attachments included (announced with EHLO SIZE, refused past it).
  EMAIL_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(25 * MIB),
  // PEM files offered with STARTTLS by the listener (both, or neither: then it takes plain SMTP only).
  EMAIL_SMTP_TLS_KEY: optional,
  EMAIL_SMTP_TLS_CERT: optional,
};

export interface EmailAddress {
  address: string;
  name: string | undefined;
}

export interface EmailConfig {
  /** The SMTP server the hub sends through; its password is never logged (smtpLabel). */
  smtpUrl: string;
  from: EmailAddress;
  /** The hub's SMTP listener, when EMAIL_SMTP_PORT is set. */
  listen: { host: string; port: number; maxBytes: number; tls: { key: Buffer; cert: Buffer } | undefined } | undefined;
}

type EmailEnv = {
  SMTP_URL?: string | undefined;
  EMAIL_FROM?: string | undefined;
  EMAIL_SMTP_PORT?: number | undefined;
  EMAIL_SMTP_HOST?: string | undefined;
  EMAIL_MAX_BYTES: number;
  EMAIL_SMTP_TLS_KEY?: string | undefined;
  EMAIL_SMTP_TLS_CERT?: string | undefined;
  HOST: string;
};

const addressSchema = z.email();

/** `name <address>` or a bare address; undefined when it is neither. */
export function parseEmailFrom(text: string): EmailAddress | undefined {
  const named = /^\s*(?:"([^"]*)"|([^<"]*?))\s*<([^<>\s]+)>\s*$/.exec(text);
  const address = (named ? named[3]! : text.trim()).toLowerCase();
  if (!addressSchema.safeParse(address).success) return undefined;
  const name = named ? (named[1] ?? named[2] ?? "").trim() : "";
  return { address, name: name || undefined };
}

/** The hub's domain, from EMAIL_FROM: its Message-IDs and the listener's recipients. */
export const domainOf = (address: string) => address.split("@").pop()!.toLowerCase();

/** The SMTP URL without its password, for the start-up banner and logs. */
export function smtpLabel(smtpUrl: string): string {
  const url = new URL(smtpUrl);
  return `${url.protocol}//${url.username ? `${decodeURIComponent(url.username)}@` : ""}${url.host}`;
}

export function emailConfig(env: EmailEnv): { email: EmailConfig | undefined } | { problems: string[] } {
  const problems: string[] = [];
  const { SMTP_URL: smtpUrl, EMAIL_FROM: fromText } = env;
  if (!smtpUrl && !fromText) {
    if (env.EMAIL_SMTP_PORT !== undefined) problems.push("EMAIL_SMTP_PORT: set SMTP_URL and EMAIL_FROM too");
    return problems.length ? { problems } : { email: undefined };
  }
  if (!smtpUrl) problems.push("SMTP_URL: required with EMAIL_FROM (smtp://user:pass@host:587 or smtps://…:465)");
  if (!fromText) problems.push('EMAIL_FROM: required with SMTP_URL ("Example Support <support@example.com>")');
  if (smtpUrl) {
    let url: URL | undefined;
    try {
      url = new URL(smtpUrl);
    } catch {
      problems.push("SMTP_URL: not a URL (expected smtp://user:pass@host:587 or smtps://user:pass@host:465)");
    }
    if (url && url.protocol !== "smtp:" && url.protocol !== "smtps:")
      problems.push(`SMTP_URL: expected smtp:// or smtps://, not ${url.protocol}//`);
    else if (url && !url.hostname) problems.push("SMTP_URL: no host");
  }
  const from = fromText ? parseEmailFrom(fromText) : undefined;
  if (fromText && !from)
    problems.push(
      'EMAIL_FROM: expected an address, or a name and an address ("Example Support <support@example.com>")',
    );
  const { EMAIL_SMTP_TLS_KEY: keyFile, EMAIL_SMTP_TLS_CERT: certFile } = env;
  let tls: { key: Buffer; cert: Buffer } | undefined;
  if (Boolean(keyFile) !== Boolean(certFile))
    problems.push("EMAIL_SMTP_TLS_KEY, EMAIL_SMTP_TLS_CERT: set both (PEM files) or neither");
  else if (keyFile && certFile) {
    try {
      tls = { key: readFileSync(keyFile), cert: readFileSync(certFile) };
    } catch (error) {
      problems.push(
        `EMAIL_SMTP_TLS_KEY, EMAIL_SMTP_TLS_CERT: cannot be read (${(error as NodeJS.ErrnoException).code})`,
      );
    }
  }
  if (problems.length > 0) return { problems };
  return {
    email: {
      smtpUrl: smtpUrl!,
      from: from!,
      listen:
        env.EMAIL_SMTP_PORT === undefined
          ? undefined
          : { host: env.EMAIL_SMTP_HOST ?? env.HOST, port: env.EMAIL_SMTP_PORT, maxBytes: env.EMAIL_MAX_BYTES, tls },
    },
  };
}
