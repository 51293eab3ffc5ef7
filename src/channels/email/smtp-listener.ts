// The hub's own SMTP listener (smtp-server): where people's e-mail arrives, straight from the sending MTA
// (an MX record pointing here) or forwarded by a mail provider. Only recipients at the hub's domain are taken
// (no relaying); an e-mail larger than EMAIL_MAX_BYTES is refused while it arrives. The sender is answered
// 250 only once the e-mail is committed (`commit`); a store that does not answer gets 451, so the sending
// MTA tries again later, as SMTP senders do.
import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerDataStream } from "smtp-server";
import type { Logger } from "../../logger.js";
import { StartUpError } from "../../start-up-errors.js";
import type { EmailConfig } from "./email-config.js";

export interface SmtpListener {
  port: number;
  stop(): Promise<void>;
}

export interface ListenerDeps {
  listen: NonNullable<EmailConfig["listen"]>;
  /** The hub's domain: recipients elsewhere are refused (550). */
  domain: string;
  commit(raw: Buffer): Promise<"accepted" | "duplicate">;
  counted(outcome: "accepted" | "duplicate" | "refused_recipient" | "too_large" | "not_committed"): void;
  log: Logger;
}

/** An SMTP answer: smtp-server sends the error's responseCode and message. */
const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

export async function startSmtpListener(deps: ListenerDeps): Promise<SmtpListener> {
  const { listen } = deps;
  const server = new SMTPServer({
    name: deps.domain,
    banner: "chat-delivery-hub",
    size: listen.maxBytes,
    authOptional: true,
    // No AUTH: this listener takes mail for the hub only, like an MX; without a certificate, no STARTTLS.
    disabledCommands: listen.tls ? ["AUTH"] : ["AUTH", "STARTTLS"],
    ...(listen.tls ? { key: listen.tls.key, cert: listen.tls.cert } : {}),
    logger: false,
    // Stopping waits this long for senders still connected.
    closeTimeout: 2000,
    onRcptTo(address, _session, callback) {
      const domain = address.address.toLowerCase().split("@").pop();
      if (domain !== deps.domain) {
        deps.counted("refused_recipient");
        return callback(
          smtpError(550, "5.1.1 no such recipient here (this server takes mail for its own domain only)"),
        );
      }
      callback();
    },
    onData(stream, _session, callback) {
      readAll(stream).then(
        async (raw) => {
          if (stream.sizeExceeded) {
            deps.counted("too_large");
            return callback(smtpError(552, `5.3.4 message larger than ${listen.maxBytes} bytes`));
          }
          try {
            const outcome = await deps.commit(raw);
            deps.counted(outcome);
            callback(null, "2.0.0 accepted");
          } catch (error) {
            deps.counted("not_committed");
            deps.log.warn({ err: error }, "e-mail not committed: the sender was told to try again (451)");
            callback(smtpError(451, "4.3.0 temporarily unable to accept the message, try again later"));
          }
        },
        (error: unknown) => callback(error as Error),
      );
    },
  });
  server.on("error", (error) => deps.log.warn({ err: error }, "SMTP listener error"));
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => reject(error);
    server.server.once("error", failed);
    server.listen(listen.port, listen.host, () => {
      server.server.off("error", failed);
      resolve();
    });
  });
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Why the listener could not start, said for EMAIL_SMTP_PORT. */
export function smtpListenError(host: string, port: number, error: unknown): StartUpError {
  const code = (error as { code?: unknown }).code;
  if (code === "EADDRINUSE")
    return new StartUpError(
      `the SMTP port ${port} is already in use (on ${host}).`,
      "set EMAIL_SMTP_PORT to a free port (2525, say, with the MX host's port 25 forwarded to it), or stop the other process",
      [],
      { cause: error },
    );
  if (code === "EACCES")
    return new StartUpError(
      `this process may not listen on the SMTP port ${port}.`,
      "ports below 1024 need privileges: set EMAIL_SMTP_PORT to 1024 or above (2525) and forward port 25 to it",
      [],
      { cause: error },
    );
  return new StartUpError(
    `the SMTP listener could not start on ${host}:${port}.`,
    "check EMAIL_SMTP_HOST and EMAIL_SMTP_PORT",
    [],
    {
      cause: error,
    },
  );
}
