// E-mail over SMTP (nodemailer): each message the router sends is one e-mail to the conversation's contact,
// from EMAIL_FROM, in the person's thread (email-thread.ts) — In-Reply-To, References, "Re: <subject>" — with a
// Message-ID made from the message's own id, kept as its externalId (a bounce or a reply names it). Text and
// a simple HTML part, choices as numbered lines, the hub's own files attached (email-compose.ts). The SMTP
// server's answer decides what follows (smtp-error.ts): 5xx failed with the code, 4xx or no answer retried.
import { createTransport, type Transporter } from "nodemailer";
import type Mail from "nodemailer/lib/mailer/index.js";
import type { Config } from "../../config.js";
import type { Sql } from "../../db/sql.js";
import type { ChannelAdapter, SendConversation, SendMessage, SendOutcome } from "../../delivery/channel-port.js";
import { SendDeferredError } from "../../delivery/send-deferred.js";
import { attachmentsOf, buttonsOf } from "../../conversations/attachments.js";
import { openMedia, readMedia } from "../../media/media-fetch.js";
import { verifyMediaToken } from "../../media/media-token.js";
import type { Metrics } from "../../metrics.js";
import { domainOf, type EmailConfig } from "./email-config.js";
import { composeEmail } from "./email-compose.js";
import { replyHeaders, replySubject, threadAnchor } from "./email-thread.js";
import { classifySmtpError } from "./smtp-error.js";

export interface EmailChannelDeps {
  email: EmailConfig;
  config: Pick<Config, "media" | "meta" | "telegram" | "sms" | "secrets">;
  sql: Sql;
  now: () => Date;
  publicUrl: () => string;
  metrics: Pick<Metrics, "emailSends">;
}

/** The Message-ID of the e-mail a message becomes: the same on every try, so a retry is the same e-mail. */
export const emailMessageId = (messageId: string, domain: string) => `<${messageId}@${domain}>`;

export function emailChannel(deps: EmailChannelDeps): ChannelAdapter {
  const { email } = deps;
  const domain = domainOf(email.from.address);
  const transport: Transporter = createTransport({
    url: email.smtpUrl,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
  });
  const mediaPrefix = () => `${deps.publicUrl()}/media/`;

  /** One of the hub's own files, read to be attached; undefined when it cannot be (then it is linked). */
  async function ownFile(url: string): Promise<Buffer | undefined> {
    const token = url.slice(mediaPrefix().length).split(/[?#]/)[0] ?? "";
    const claim = verifyMediaToken(deps.config.secrets.callbackSecret, token, deps.now());
    if (!claim) return undefined;
    const read = await readMedia(await openMedia(deps, claim)).catch(() => undefined);
    return read && "bytes" in read ? read.bytes : undefined;
  }

  return {
    enabled: true,
    async send(conversation: SendConversation, message: SendMessage): Promise<SendOutcome> {
      const attachments = attachmentsOf(message.attachments);
      // The hub's own files are attached; one that cannot be read now (expired, erased) is linked like any other.
      const readable = new Map<string, Buffer>();
      for (const file of attachments) {
        if (!file.url.startsWith(mediaPrefix()) || readable.has(file.url)) continue;
        const content = await ownFile(file.url);
        if (content) readable.set(file.url, content);
      }
      const composed = composeEmail(message.text ?? "", attachments, buttonsOf(message.buttons), (url) =>
        readable.has(url),
      );
      const files: Mail.Attachment[] = composed.attach.map((file) => ({
        filename: file.filename,
        contentType: file.contentType,
        content: readable.get(file.url)!,
      }));
      const anchor = await threadAnchor(deps.sql, conversation.id, message.jobId);
      const messageId = emailMessageId(message.id, domain);
      const fallbackSubject = email.from.name ?? domain;
      try {
        const info = await transport.sendMail({
          from: email.from.name ? { name: email.from.name, address: email.from.address } : email.from.address,
          to: conversation.name ? { name: conversation.name, address: conversation.contact } : conversation.contact,
          subject: anchor ? replySubject(anchor.subject, fallbackSubject) : fallbackSubject,
          messageId,
          ...(anchor ? replyHeaders(anchor) : {}),
          text: composed.text,
          html: composed.html,
          attachments: files,
          // Not an automatic reply in RFC 3834's sense: the person's answer is wanted.
          headers: { "Auto-Submitted": "no" },
        });
        if ((info.rejected ?? []).length > 0) {
          deps.metrics.emailSends.inc({ outcome: "failed", code: "rejected" });
          return { status: "failed", decision: "failed", code: "rejected", title: "the recipient was refused" };
        }
      } catch (error) {
        const verdict = classifySmtpError(error);
        if (verdict.action === "retry") {
          deps.metrics.emailSends.inc({ outcome: "deferred", code: String(verdict.code ?? "no_answer") });
          throw new SendDeferredError(verdict.code, verdict.title, undefined, "email");
        }
        deps.metrics.emailSends.inc({ outcome: "failed", code: verdict.code });
        return { status: "failed", decision: "failed", code: verdict.code, title: verdict.title };
      }
      deps.metrics.emailSends.inc({ outcome: "sent", code: "250" });
      return {
        status: "sent",
        decision: "sent",
        externalId: messageId,
        ...(composed.notes.length ? { fallback: `fallback: ${composed.notes.join(", ")}` } : {}),
      };
    },
  };
}
