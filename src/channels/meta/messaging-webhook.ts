// Reads Instagram (`object: instagram`) and Messenger (`object: page`) webhooks into MetaEvents: both use
// the Messenger Platform's `messaging[]` events — messages (text, quick replies, attachments, story
// replies and mentions), echoes of what the account sent, deletions, edits, reactions, reads, deliveries,
// postbacks (button taps) and referrals — and `standby[]` for threads another app holds. Instagram's
// `changes[]` (comments, mentions, insights) are not conversations: ignored, with the field named.
import path from "node:path";
import { attachmentType } from "../../conversations/attachments.js";
import type { StoredAttachment } from "../../conversations/inbound-attachments.js";
import type { MetaChannel } from "./meta-accounts.js";
import { idText, metaTime, type Addressed, type MetaEvent } from "./meta-event.js";

type Json = Record<string, unknown>;

const record = (value: unknown): Json =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {};
const list = (value: unknown): Json[] => (Array.isArray(value) ? value.map(record) : []);
const str = (value: unknown): string => (typeof value === "string" ? value : idText(value));

const PRODUCT: Record<Exclude<MetaChannel, "whatsapp">, string> = { instagram: "Instagram", messenger: "Messenger" };

export function parseMessagingWebhook(channel: "instagram" | "messenger", body: unknown): MetaEvent[] {
  const events: MetaEvent[] = [];
  for (const entry of list(record(body).entry)) {
    const entryAccount = str(entry.id);
    for (const change of list(entry.changes)) {
      events.push({
        kind: "ignored",
        channel,
        account: entryAccount,
        reason: `field ${str(change.field) || "unknown"}`,
      });
    }
    for (const item of list(entry.messaging))
      events.push(...[messagingEvent(channel, entryAccount, item, false)].flat());
    for (const item of list(entry.standby)) events.push(...[messagingEvent(channel, entryAccount, item, true)].flat());
  }
  return events;
}

function messagingEvent(
  channel: "instagram" | "messenger",
  entryAccount: string,
  item: Json,
  standby: boolean,
): MetaEvent | MetaEvent[] {
  const message = record(item.message);
  const echo = message.is_echo === true;
  // An echo goes from the account to the person; everything else from the person to the account.
  const [person, business] = echo ? [item.recipient, item.sender] : [item.sender, item.recipient];
  const account = str(record(business).id) || entryAccount;
  const at: Addressed = {
    channel,
    account,
    person: { id: str(record(person).id), userId: null, name: null },
    at: metaTime(item.timestamp, "ms"),
  };
  const ignored = (reason: string): MetaEvent => ({ kind: "ignored", channel, account, reason });
  if (!at.person.id) return ignored("event without a sender");
  const mid = str(message.mid);

  if (item.message) {
    if (!mid) return ignored("message without an id");
    if (message.is_deleted === true) return { kind: "delete", ...at, target: mid };
    const text = messageText(channel, message);
    const data = { type: messageType(message), event: item };
    if (echo) return { kind: "record", ...at, id: mid, role: "human", why: "echo", type: data.type, text, data };
    // Another app holds the thread (standby): its messages are the other app's to answer.
    if (standby) return { kind: "record", ...at, id: mid, role: "user", why: "standby", type: data.type, text, data };
    const attachments = filesOf(message);
    return {
      kind: "message",
      ...at,
      id: mid,
      type: data.type,
      text,
      data,
      ...(attachments.length > 0 ? { attachments } : {}),
    };
  }
  if (standby) return ignored("standby event");
  if (item.message_edit) {
    const edit = record(item.message_edit);
    return {
      kind: "edit",
      ...at,
      target: str(edit.mid),
      editId: edit.num_edit !== undefined ? `${str(edit.mid)}#${str(edit.num_edit)}` : null,
      text: str(edit.text) || "[empty message]",
    };
  }
  if (item.reaction) {
    const reaction = record(item.reaction);
    const withdrawn = str(reaction.action) === "unreact";
    return {
      kind: "reaction",
      ...at,
      target: str(reaction.mid),
      emoji: withdrawn ? null : str(reaction.emoji) || str(reaction.reaction) || null,
    };
  }
  if (item.read) {
    const read = record(item.read);
    return {
      kind: "read",
      ...at,
      target: str(read.mid) || null,
      watermark: read.watermark !== undefined ? metaTime(read.watermark, "ms") : null,
    };
  }
  if (item.delivery) {
    // Messenger's delivery receipts: a `delivered` status for each message of the page they name.
    const mids = record(item.delivery).mids;
    const ids = (Array.isArray(mids) ? mids : []).map(str).filter(Boolean);
    if (ids.length === 0) return ignored("delivery receipt without message ids");
    return ids.map((id) => ({ kind: "status", channel, account, id, status: "delivered", at: at.at, errors: [] }));
  }
  if (item.postback) {
    const postback = record(item.postback);
    const title = str(postback.title);
    const payload = str(postback.payload);
    const text =
      title && payload && title !== payload ? `${title} (payload: ${payload})` : title || payload || "[button]";
    // A postback may come without a mid: its sender, time and payload identify it (Meta's retries repeat them).
    const id = str(postback.mid) || `postback:${at.person.id}:${at.at.getTime()}:${payload}`;
    return { kind: "message", ...at, id, type: "postback", text, data: { type: "postback", event: item } };
  }
  if (item.referral) {
    const referral = record(item.referral);
    const id = `referral:${at.person.id}:${at.at.getTime()}:${str(referral.ref)}`;
    const source = [str(referral.source), str(referral.type)].filter(Boolean).join(", ");
    const text = `[referral${source ? `: ${source}` : ""}]${referral.ref ? ` ref ${str(referral.ref)}` : ""}`;
    return { kind: "record", ...at, id, role: "event", why: "referral", type: "referral", text, data: { event: item } };
  }
  const keys = Object.keys(item).filter((key) => !["sender", "recipient", "timestamp"].includes(key));
  return ignored(`event ${keys.join(", ") || "without content"}`);
}

function messageType(message: Json): string {
  if (message.is_unsupported === true) return "unsupported";
  if (message.quick_reply) return "quick_reply";
  const attachment = list(message.attachments)[0];
  if (attachment) return str(attachment.type) || "attachment";
  return "text";
}

/** The person's message as text the agent can read; never empty. */
function messageText(channel: "instagram" | "messenger", message: Json): string {
  if (message.is_unsupported === true) return `[a message ${PRODUCT[channel]} cannot show here]`;
  const parts: string[] = [];
  const replyTo = record(message.reply_to);
  if (replyTo.story) parts.push("[reply to your story]");
  const text = str(message.text);
  if (text) {
    const payload = str(record(message.quick_reply).payload);
    parts.push(payload && payload !== text ? `${text} (payload: ${payload})` : text);
  }
  for (const attachment of list(message.attachments)) parts.push(attachmentText(attachment));
  return parts.join(" ") || "[empty message]";
}

const FILE_KINDS: Record<string, string> = {
  image: "image/jpeg",
  video: "video/mp4",
  audio: "audio/mpeg",
  file: "application/octet-stream",
};

/**
 * The person's files (image, video, audio, file) at the links Meta's CDN serves them from; shared posts,
 * reels and stories are links to Meta's content, not files the person sent. The type comes from the
 * link's extension when it has one, else from the kind (the CDN's own Content-Type is served).
 */
function filesOf(message: Json): StoredAttachment[] {
  return list(message.attachments).flatMap((attachment): StoredAttachment[] => {
    const kind = str(attachment.type);
    const url = str(record(attachment.payload).url);
    if (!FILE_KINDS[kind] || !/^https?:\/\//.test(url)) return [];
    let name: string;
    try {
      const last = new URL(url).pathname.split("/").filter(Boolean).pop() ?? "";
      name = path.extname(last) ? decodeURIComponent(last) : "";
    } catch {
      return [];
    }
    const guessed = name ? attachmentType({ url, name }) : "application/octet-stream";
    const mimeType = guessed !== "application/octet-stream" ? guessed : FILE_KINDS[kind];
    return [{ mimeType, ...(name && kind === "file" ? { name } : {}), source: { kind: "link", url } }];
  });
}

function attachmentText(attachment: Json): string {
  const type = str(attachment.type);
  const payload = record(attachment.payload);
  const title = str(payload.title);
  switch (type) {
    case "story_mention":
      return "[mentioned you in their story]";
    case "share":
    case "ig_post":
      return `[shared a post${title ? `: ${title}` : ""}]`;
    case "ig_reel":
    case "reel":
      return `[shared a reel${title ? `: ${title}` : ""}]`;
    case "ig_story":
      return "[shared a story]";
    case "unsupported_type":
      return "[an attachment that cannot be shown here]";
    case "template":
    case "fallback":
      return `[${title || "link"}]`;
    default:
      return `[${type || "attachment"}]`;
  }
}
