// Who the person of a conversation is, as the hub verified it — never as anyone in the conversation says: what a
// tool file's `$person.identifier` (and an MCP server's `person`) passes to a backend, so that an account lookup
// trusts an id the model cannot write.
//
// - widget (web, ios, android, flutter): the integrator's own user id, for a person whose session proved it
//   with identifierHash = HMAC-SHA256(identifier, WIDGET_IDENTITY_SECRET) (widget-sessions.ts). An anonymous
//   visitor — and a widget conversation an agent runtime created — has no verified identity.
// - whatsapp: the person's WhatsApp number (wa_id, digits with the country code, no "+"), or their
//   business-scoped user id (BSUID, `US.1349…`) while they hide their number; Meta signed the webhook it came in.
// - messenger: the page-scoped id (PSID); instagram: the Instagram-scoped id (IGSID). Meta's ids of the person
//   for this page or account only — not a phone, an e-mail or an id another page sees.
// A Meta conversation counts once the person has written in it (a signed webhook named them); one an agent
// runtime opened to a number no one has written from yet does not. An erased conversation has no person.
import type { SqlQuery } from "../db/sql.js";
import { isWidgetChannel, type Channel } from "../delivery/channel.js";
import { HubError } from "../errors.js";
import { isUuid } from "./conversations.js";
import { IDENTIFIED_ACCOUNT } from "./widget-sessions.js";

/** What the identifier is, so that a backend can tell a WhatsApp number from a BSUID or a widget user id. */
export type IdentifierKind =
  "widget_identity" | "whatsapp_number" | "whatsapp_bsuid" | "messenger_psid" | "instagram_igsid";

export interface PersonIdentity {
  identifier: string;
  channel: Channel;
  kind: IdentifierKind;
  verified: true;
}

/** The error a call gets when its tool needs the person's identity and the conversation has none. */
export const personNotIdentified = () =>
  new HubError(
    409,
    "person_not_identified",
    "this tool needs the person's verified identity; the person is not identified",
  );

/** A BSUID is a country code, a dot and Meta's id (whatsapp-channel.ts); a wa_id is digits. */
const BSUID = /^[A-Z]{2}\./;

/** The conversation's verified person, or undefined: anonymous, not yet written from, erased or unknown. */
export async function personIdentifierOf(sql: SqlQuery, conversationId: string): Promise<PersonIdentity | undefined> {
  if (!isUuid(conversationId)) return undefined;
  const [row] = await sql.query<{
    channel: Channel;
    account: string;
    contact: string;
    wrote: boolean;
    erased: boolean;
  }>(
    `SELECT channel, account, contact, "lastInboundAt" IS NOT NULL AS wrote, "erasedAt" IS NOT NULL AS erased
     FROM "Conversation" WHERE id = $1::uuid`,
    [conversationId],
  );
  if (!row || row.erased || !row.contact) return undefined;
  const kind = kindOf(row);
  return kind && { identifier: row.contact, channel: row.channel, kind, verified: true };
}

function kindOf(row: {
  channel: Channel;
  account: string;
  contact: string;
  wrote: boolean;
}): IdentifierKind | undefined {
  if (isWidgetChannel(row.channel)) return row.account === IDENTIFIED_ACCOUNT ? "widget_identity" : undefined;
  if (!row.wrote) return undefined;
  switch (row.channel) {
    case "whatsapp":
      return BSUID.test(row.contact) ? "whatsapp_bsuid" : "whatsapp_number";
    case "messenger":
      return "messenger_psid";
    case "instagram":
      return "instagram_igsid";
    default:
      return undefined;
  }
}
