// What one inbound e-mail means, read from its raw bytes with mailparser: the person's message (their words
// without what their client quoted, the full text kept), an automatic reply (out-of-office, vacation:
// recorded, never the person's words), a bounce (a delivery report about an e-mail the hub sent), or nothing
// to act on. Pure but for the parsing: the worker (inbound-emails.ts) applies it.
import type { AddressObject, Attachment as ParsedAttachment, ParsedMail } from "mailparser";
import { plainText } from "../../data-text.js";
import { newText } from "./quoted-text.js";

export interface EmailFile {
  name: string | undefined;
  mimeType: string;
  content: Buffer;
}

/** What an e-mail says about its thread: its own id, what it answers, its subject. */
export interface EmailHeaders {
  messageId: string;
  inReplyTo: string | undefined;
  /** The thread's Message-IDs, oldest first (References, then In-Reply-To if it is not among them). */
  references: string[];
  subject: string;
  date: Date | undefined;
}

export type EmailEvent =
  | {
      kind: "message" | "auto_reply";
      from: { address: string; name: string | undefined };
      headers: EmailHeaders;
      /** The whole text part (or the HTML's text), as sent. */
      fullText: string;
      /** What the agent reads: the new text, without quotes and signature. */
      text: string;
      files: EmailFile[];
      /** Why it was taken as an automatic reply. */
      why?: string;
    }
  | {
      kind: "bounce";
      headers: EmailHeaders;
      /** The Message-ID of the e-mail that could not be delivered, when the report names it. */
      original: string | undefined;
      /** The report's status (5.1.1) and the receiving server's diagnostic. */
      status: string | undefined;
      diagnostic: string | undefined;
      fullText: string;
    }
  | { kind: "ignored"; reason: string };

const ids = (value: string | string[] | undefined): string[] =>
  (Array.isArray(value) ? value : value ? value.split(/\s+/) : []).map((id) => id.trim()).filter(Boolean);

function firstAddress(value: AddressObject | AddressObject[] | undefined) {
  const list = Array.isArray(value) ? value : value ? [value] : [];
  return list.flatMap((item) => item.value).find((entry) => entry.address);
}

const header = (mail: ParsedMail, name: string): string | undefined => {
  const value = mail.headers.get(name);
  if (typeof value === "string") return value;
  if (value && typeof value === "object" && "value" in value && typeof value.value === "string") return value.value;
  return undefined;
};

/** RFC 3834's Auto-Submitted and the headers mail systems set on vacation replies and list mail. */
export function autoReplyReason(mail: ParsedMail): string | undefined {
  const submitted = header(mail, "auto-submitted")?.toLowerCase();
  if (submitted && submitted !== "no") return `Auto-Submitted: ${submitted}`;
  if (header(mail, "x-autoreply") || header(mail, "x-autorespond")) return "X-Autoreply";
  const precedence = header(mail, "precedence")?.toLowerCase();
  if (precedence && ["auto_reply", "bulk", "junk", "list"].includes(precedence)) return `Precedence: ${precedence}`;
  if (
    /^(auto(matic)? ?(reply|response)|out of (the )?office|autoreply|abwesenheitsnotiz|réponse automatique)\b/i.test(
      mail.subject ?? "",
    )
  )
    return "subject";
  return undefined;
}

function threadHeaders(mail: ParsedMail, fallbackId: string): EmailHeaders {
  const inReplyTo = ids(mail.inReplyTo)[0];
  const references = ids(mail.references);
  if (inReplyTo && !references.includes(inReplyTo)) references.push(inReplyTo);
  return {
    messageId: mail.messageId?.trim() || fallbackId,
    inReplyTo,
    references,
    subject: plainText(mail.subject ?? "").trim(),
    date: mail.date,
  };
}

const textOf = (part: ParsedAttachment) => part.content.toString("utf8");

function bounceOf(mail: ParsedMail, headers: EmailHeaders): EmailEvent | undefined {
  const type = mail.headers.get("content-type") as { value?: string; params?: Record<string, string> } | undefined;
  const report = type?.value?.toLowerCase() === "multipart/report";
  const from = firstAddress(mail.from)?.address?.toLowerCase() ?? "";
  if (!report && !/^(mailer-daemon|postmaster)@/.test(from)) return undefined;
  const status = mail.attachments.find((part) => part.contentType === "message/delivery-status");
  const original = mail.attachments.find((part) =>
    ["message/rfc822", "text/rfc822-headers", "message/rfc822-headers"].includes(part.contentType),
  );
  const statusText = status ? textOf(status) : (mail.text ?? "");
  const originalText = original ? textOf(original) : (mail.text ?? "");
  return {
    kind: "bounce",
    headers,
    original: /^Message-ID:\s*(<[^>\s]+>)/im.exec(originalText)?.[1] ?? (report ? undefined : headers.inReplyTo),
    status: /^Status:\s*([245]\.\d{1,3}\.\d{1,3})/im.exec(statusText)?.[1],
    diagnostic: /^Diagnostic-Code:\s*(?:smtp;\s*)?(.+)$/im.exec(statusText)?.[1]?.trim(),
    fullText: mail.text ?? "",
  };
}

/** Reads one raw e-mail; `fallbackId` names it when it has no Message-ID of its own. */
export async function readEmail(raw: Buffer, fallbackId: string, hubAddress: string): Promise<EmailEvent> {
  // Loaded on first use: a hub without e-mail never loads the parser.
  const { simpleParser } = await import("mailparser");
  const mail = await simpleParser(raw, { skipHtmlToText: false, skipTextLinks: true });
  const headers = threadHeaders(mail, fallbackId);
  const bounce = bounceOf(mail, headers);
  if (bounce) return bounce;
  // The person is who the e-mail is from (Reply-To is not followed: it would let anyone write into another
  // person's conversation, and the hub answers the conversation's contact).
  const from = firstAddress(mail.from);
  if (!from?.address) return { kind: "ignored", reason: "no_sender" };
  const address = from.address.toLowerCase();
  // The hub's own e-mail come back (a forwarding loop): never a person's.
  if (address === hubAddress) return { kind: "ignored", reason: "from_the_hub" };
  const fullText = (mail.text ?? "").trim();
  const files = mail.attachments
    .filter((part) => part.contentDisposition !== "inline" || !part.contentId || !part.related)
    .map((part) => ({
      name: part.filename,
      mimeType: part.contentType || "application/octet-stream",
      content: part.content,
    }));
  const why = autoReplyReason(mail);
  return {
    kind: why ? "auto_reply" : "message",
    from: { address, name: from.name ? plainText(from.name).trim() || undefined : undefined },
    headers,
    fullText,
    text: newText(fullText),
    files,
    ...(why ? { why } : {}),
  };
}
