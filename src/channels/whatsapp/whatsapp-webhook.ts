// Reads WhatsApp Cloud API webhooks (`object: whatsapp_business_account`) into MetaEvents: the person's
// messages of every type with readable text, their edits, deletions and reactions, echoes of what the
// business sent from the WhatsApp Business app (`smb_message_echoes`), system notices, and statuses of
// what the hub sent. Batched entries and changes are flattened, in order.
import type { StoredAttachment } from "../../conversations/inbound-attachments.js";
import {
  idText,
  metaTime,
  type Addressed,
  type MetaCharge,
  type MetaEvent,
  type MetaPerson,
} from "../meta/meta-event.js";

type Json = Record<string, unknown>;

const record = (value: unknown): Json =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {};
const list = (value: unknown): Json[] => (Array.isArray(value) ? value.map(record) : []);
const str = (value: unknown): string => (typeof value === "string" ? value : idText(value));
const seconds = (value: unknown) => metaTime(value, "s");

/** What the person said or sent, as text the agent can read; never empty. */
export function readableText(message: Json): string {
  const type = str(message.type) || "unknown";
  const part = record(message[type]);
  const caption = (extra = "") => [str(part.caption), extra].filter(Boolean).join(" ");
  switch (type) {
    case "text":
      return str(part.body) || "[empty message]";
    case "button":
      return withPayload(str(part.text) || str(part.payload), part.payload);
    case "interactive":
      return interactiveText(part);
    case "image":
    case "video":
    case "sticker":
      return tagged(type === "sticker" && part.animated ? "animated sticker" : type, caption());
    case "audio":
      return tagged(part.voice ? "voice message" : "audio");
    case "document":
      return tagged(part.filename ? `document: ${str(part.filename)}` : "document", caption());
    case "location":
      return locationText(part);
    case "contacts":
      return contactsText(message.contacts);
    case "order":
      return orderText(part);
    case "unsupported":
    case "unknown": {
      const what = str(part.type);
      const error = list(message.errors)[0];
      return tagged(
        `a message WhatsApp does not support${what ? ` (${what})` : ""}`,
        error ? str(error.title) || str(error.message) : "",
      );
    }
    default:
      return tagged(`${type} message`);
  }
}

const MEDIA_TYPES = new Set(["image", "video", "audio", "document", "sticker"]);
const MEDIA_DEFAULT_TYPE: Record<string, string> = {
  image: "image/jpeg",
  video: "video/mp4",
  audio: "audio/ogg",
  document: "application/octet-stream",
  sticker: "image/webp",
};

/** A media message's file: its media id (valid about 30 days), fetched by id when asked for. */
function mediaOf(message: Json): StoredAttachment[] {
  const type = str(message.type);
  if (!MEDIA_TYPES.has(type)) return [];
  const part = record(message[type]);
  const mediaId = str(part.id);
  if (!mediaId) return [];
  const mimeType = (str(part.mime_type).split(";")[0] ?? "").trim().toLowerCase() || MEDIA_DEFAULT_TYPE[type]!;
  const name = str(part.filename);
  return [{ mimeType, ...(name ? { name } : {}), source: { kind: "whatsapp", mediaId } }];
}

const tagged = (what: string, rest = "") => (rest ? `[${what}] ${rest}` : `[${what}]`);

function withPayload(title: string, payload: unknown): string {
  const data = str(payload);
  return data && data !== title ? `${title} (payload: ${data})` : title || "[empty reply]";
}

function interactiveText(part: Json): string {
  const kind = str(part.type);
  if (kind === "button_reply" || part.button_reply) {
    const reply = record(part.button_reply);
    return withPayload(str(reply.title), reply.id);
  }
  if (kind === "list_reply" || part.list_reply) {
    const reply = record(part.list_reply);
    const title = [str(reply.title), str(reply.description)].filter(Boolean).join(" — ");
    return withPayload(title, reply.id);
  }
  if (kind === "nfm_reply" || part.nfm_reply) {
    const reply = record(part.nfm_reply);
    return tagged(
      `form${reply.name ? `: ${str(reply.name)}` : ""}`,
      formFields(reply.response_json) || str(reply.body),
    );
  }
  // Meta sends an interactive message with no content when it could not read the person's reply.
  return tagged("an interactive reply WhatsApp could not read");
}

/** A flow's answers: its fields as `name: value`, without the flow token. */
function formFields(json: unknown): string {
  let fields: Json;
  try {
    fields = record(typeof json === "string" ? JSON.parse(json) : json);
  } catch {
    return str(json);
  }
  return Object.entries(fields)
    .filter(([key]) => key !== "flow_token")
    .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join("; ");
}

function locationText(part: Json): string {
  const place = [str(part.name), str(part.address)].filter(Boolean).join(", ");
  const where = part.latitude !== undefined ? `(${str(part.latitude)}, ${str(part.longitude)})` : "";
  return tagged("location", [place, where].filter(Boolean).join(" ") || str(part.url));
}

function contactsText(value: unknown): string {
  const cards = list(value).map((card) => {
    const name = record(card.name);
    const who = str(name.formatted_name) || [str(name.first_name), str(name.last_name)].filter(Boolean).join(" ");
    const phones = list(card.phones).map((phone) => str(phone.phone) || str(phone.wa_id));
    const emails = list(card.emails).map((email) => str(email.email));
    return [who, ...phones, ...emails].filter(Boolean).join(" ");
  });
  return tagged(cards.length === 1 ? "contact" : "contacts", cards.join("; "));
}

function orderText(part: Json): string {
  const items = list(part.product_items).map(
    (item) =>
      `${str(item.quantity)} × ${str(item.product_retailer_id)}${item.item_price !== undefined ? ` at ${str(item.item_price)} ${str(item.currency)}` : ""}`,
  );
  const note = str(part.text);
  return tagged(
    `order${part.catalog_id ? ` from catalog ${str(part.catalog_id)}` : ""}`,
    [items.join("; "), note ? `— "${note}"` : ""].filter(Boolean).join(" "),
  );
}

/** The person a message is from: its contact entry (matched by wa_id, else the only one), else its own ids. */
function personOf(message: Json, contacts: Json[], from: string): MetaPerson {
  const contact =
    contacts.find((c) => from && str(c.wa_id) === from) ?? (contacts.length === 1 ? contacts[0] : undefined);
  const waId = from || str(contact?.wa_id);
  const userId = str(message.from_user_id) || str(contact?.user_id) || null;
  return { id: waId || userId || "", userId, name: str(record(contact?.profile).name) || null };
}

export function parseWhatsAppWebhook(body: unknown): MetaEvent[] {
  const events: MetaEvent[] = [];
  for (const entry of list(record(body).entry)) {
    for (const change of list(entry.changes)) {
      const field = str(change.field);
      const value = record(change.value);
      const account = str(record(value.metadata).phone_number_id);
      const contacts = list(value.contacts);
      const base = { channel: "whatsapp" as const, account };
      if (field === "message_template_status_update" || field === "template_category_update") {
        events.push(templateEvent(field, value, str(entry.id), entry.time));
        continue;
      }
      if (field !== "messages" && field !== "smb_message_echoes" && field !== "") {
        events.push({ kind: "ignored", ...base, reason: `field ${field}` });
        continue;
      }
      for (const message of list(value.messages)) {
        const person = personOf(message, contacts, str(message.from));
        events.push(messageEvent(message, { ...base, person, at: seconds(message.timestamp) }));
      }
      for (const echo of list(value.message_echoes)) {
        // Sent by the business from the WhatsApp Business app: the person is the other party.
        const display = str(record(value.metadata).display_phone_number);
        const to = str(echo.to) && str(echo.to) !== display ? str(echo.to) : str(echo.from);
        const contact = contacts[0];
        const person: MetaPerson = {
          id: str(contact?.wa_id) || to || str(echo.to_user_id),
          userId: str(echo.to_user_id) || str(contact?.user_id) || null,
          name: str(record(contact?.profile).name) || null,
        };
        events.push(echoEvent(echo, { ...base, person, at: seconds(echo.timestamp) }));
      }
      for (const status of list(value.statuses)) {
        events.push({
          kind: "status",
          ...base,
          id: str(status.id),
          status: str(status.status),
          at: seconds(status.timestamp),
          errors: list(status.errors).map((error) => ({
            code: Number(error.code ?? 0),
            title: str(error.title) || str(error.message),
          })),
          ...chargeOf(status),
        });
      }
    }
  }
  return events;
}

/** A status's `pricing` and `conversation`, when it has them. */
function chargeOf(status: Json): { charge?: MetaCharge } {
  if (status.pricing === undefined && status.conversation === undefined) return {};
  const pricing = record(status.pricing);
  const conversation = status.conversation === undefined ? null : record(status.conversation);
  const text = (value: unknown) => str(value) || null;
  return {
    charge: {
      billable: typeof pricing.billable === "boolean" ? pricing.billable : null,
      pricingModel: text(pricing.pricing_model),
      category: text(pricing.category),
      type: text(pricing.type),
      conversation: conversation && {
        id: text(conversation.id),
        origin: text(record(conversation.origin).type),
        expiresAt: text(conversation.expiration_timestamp),
      },
    },
  };
}

/** A template's new status or category (the WhatsApp Business Account's webhook fields). */
function templateEvent(field: string, value: Json, account: string, time: unknown): MetaEvent {
  const name = str(value.message_template_name);
  const language = str(value.message_template_language);
  if (!name || !language)
    return { kind: "ignored", channel: "whatsapp", account, reason: `${field} without a template` };
  const base = {
    kind: "template" as const,
    channel: "whatsapp" as const,
    account,
    name,
    language,
    templateId: str(value.message_template_id) || null,
    at: time === undefined ? null : seconds(time),
  };
  if (field === "template_category_update") {
    const category = str(value.new_category) || str(value.correct_category);
    if (!category) return { kind: "ignored", channel: "whatsapp", account, reason: `${field} without a category` };
    return { ...base, category: { category, previous: str(value.previous_category) || null } };
  }
  const event = str(value.event);
  if (!event) return { kind: "ignored", channel: "whatsapp", account, reason: `${field} without an event` };
  // Meta's code (INVALID_FORMAT, SCAM…; NONE when there is none), and its words when it gives them: a
  // rejection's `rejection_info`, a pause's `other_info`.
  const code = str(value.reason) === "NONE" ? "" : str(value.reason);
  const detail = str(record(value.rejection_info).reason) || str(record(value.other_info).description);
  const reason = [code, detail].filter(Boolean).join(": ");
  return {
    ...base,
    status: {
      event,
      reason: reason || null,
      category: str(value.message_template_category) || null,
    },
  };
}

function messageEvent(message: Json, at: Addressed): MetaEvent {
  const id = str(message.id);
  const type = str(message.type) || "unknown";
  if (!id) return { kind: "ignored", channel: at.channel, account: at.account, reason: "message without an id" };
  if (!at.person.id)
    return { kind: "ignored", channel: at.channel, account: at.account, reason: "message without a sender" };
  switch (type) {
    case "reaction": {
      const reaction = record(message.reaction);
      return { kind: "reaction", ...at, target: str(reaction.message_id), emoji: str(reaction.emoji) || null };
    }
    case "revoke":
      return { kind: "delete", ...at, target: str(record(message.revoke).original_message_id) };
    case "edit": {
      const edit = record(message.edit);
      return {
        kind: "edit",
        ...at,
        target: str(edit.original_message_id),
        editId: id,
        text: readableText(record(edit.message)),
      };
    }
    case "system": {
      const system = record(message.system);
      return {
        kind: "record",
        ...at,
        id,
        role: "event",
        why: "system",
        type,
        text: str(system.body) || `[${str(system.type) || "system notice"}]`,
        data: { type, message },
      };
    }
    default: {
      const attachments = mediaOf(message);
      return {
        kind: "message",
        ...at,
        id,
        type,
        text: readableText(message),
        data: { type, message },
        ...(attachments.length > 0 ? { attachments } : {}),
      };
    }
  }
}

function echoEvent(echo: Json, at: Addressed): MetaEvent {
  const id = str(echo.id);
  const type = str(echo.type) || "unknown";
  if (type === "revoke") return { kind: "delete", ...at, target: str(record(echo.revoke).original_message_id) };
  if (type === "edit") {
    const edit = record(echo.edit);
    return {
      kind: "edit",
      ...at,
      target: str(edit.original_message_id),
      editId: id,
      text: readableText(record(edit.message)),
    };
  }
  if (!id) return { kind: "ignored", channel: at.channel, account: at.account, reason: "echo without an id" };
  return {
    kind: "record",
    ...at,
    id,
    role: "human",
    why: "echo",
    type,
    text: readableText(echo),
    data: { type, message: echo },
  };
}
