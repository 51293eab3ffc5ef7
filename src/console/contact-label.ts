// What the support team calls a conversation: the person's name when the channel gave one, else what
// identifies them on their channel (a phone number, a contact an agent runtime chose, the user id an integrator
// verified), else a short label built from the conversation id — never a 29-character visitor label nobody can
// read or say out loud.
import { IDENTIFIED_ACCOUNT } from "../conversations/widget-sessions.js";
import type { Conversation } from "../generated/prisma/client.js";

type Named = Pick<Conversation, "id" | "channel" | "contact" | "name"> & Partial<Pick<Conversation, "account">>;

const CHANNEL_NAME: Record<string, string> = {
  whatsapp: "WhatsApp",
  instagram: "Instagram",
  messenger: "Messenger",
};

/** The short code in anonymous labels: the conversation id's first characters (searchable as the id). */
export const labelCode = (conversationId: string) => conversationId.slice(0, 4);

/** Random ids (hub-issued visitor ids, app UUIDs): long runs of id characters with no word in them. */
const OPAQUE_ID = /^[A-Za-z0-9_-]{16,}$/;
/** A WhatsApp wa_id is the number in international format without "+". */
const WA_ID = /^\d{6,15}$/;

export function contactLabel(conversation: Named): string {
  const name = conversation.name?.trim();
  if (name) return name;
  const code = labelCode(conversation.id);
  const channel = CHANNEL_NAME[conversation.channel];
  if (conversation.channel === "whatsapp" && WA_ID.test(conversation.contact)) return `+${conversation.contact}`;
  // Instagram and Messenger ids are scoped numbers, not handles: nobody recognises them.
  if (channel) return `${channel} user ${code}`;
  // The integrator's own user id, whatever it looks like: that is how their team knows the person.
  if (conversation.account === IDENTIFIED_ACCOUNT) return conversation.contact;
  return OPAQUE_ID.test(conversation.contact) ? `Visitor ${code}` : conversation.contact;
}

/**
 * What a search for `query` matches: the words of an anonymous label ("Visitor 3f9a") stand for the
 * start of the conversation id; a query made of a phone number's characters also matches its digits.
 */
export function searchTerms(query: string): { text: string; digits: string | null; idPrefix: string | null } {
  const text = query.trim();
  const label = /^(?:visitor|(?:whatsapp|instagram|messenger) user)\s+([0-9a-f]{1,8})$/i.exec(text);
  const digits = /^[+\d\s().-]+$/.test(text) ? text.replace(/\D/g, "") : "";
  return {
    text,
    digits: digits.length >= 3 ? digits : null,
    idPrefix: label?.[1]?.toLowerCase() ?? null,
  };
}
