// Opening a widget session: who the person is — an anonymous visitor by the id the hub issued them, or a person
// the integrator verified — which conversation is theirs, and a token for its socket. The two kinds live under
// two accounts, so an identified person's conversation can never be opened with a visitor id, nor an anonymous
// one with an identifier. Asking again with what the client keeps renews the token.
import { issuedVisitorId, issueVisitorId, visitorLabel } from "../channels/widget/visitor-id.js";
import { verifiedIdentity } from "../channels/widget/widget-identity.js";
import { createWidgetToken } from "../channels/widget/widget-token.js";
import type { Sql } from "../db/sql.js";
import type { Channel } from "../delivery/channel.js";
import { HubError } from "../errors.js";
import { findOrCreateWidgetConversation } from "./conversations.js";

/** Anonymous visitors' conversations; apart from those the agent runtime creates (account ""). */
export const VISITOR_ACCOUNT = "widget";
/** Conversations of people the integrator verified (their `identifier` is the contact). */
export const IDENTIFIED_ACCOUNT = "widget-identified";
export const WIDGET_SESSION_ACCOUNTS = [VISITOR_ACCOUNT, IDENTIFIED_ACCOUNT] as const;

export interface WidgetSessionRequest {
  channel: Channel;
  visitorId?: string | undefined;
  identifier?: string | undefined;
  identifierHash?: string | undefined;
  name?: string | undefined;
}

export interface WidgetSessionSettings {
  /** Signs visitor ids and tokens. */
  secret: string;
  identitySecret: string | undefined;
  tokenTtlMs: number;
}

export type WidgetSession = {
  conversationId: string;
  token: string;
  expiresAt: string;
  created: boolean;
} & ({ visitorId: string } | { identifier: string });

const refuse = (field: string, message: string) =>
  new HubError(400, "invalid_request", `invalid ${field}`, [{ field, message }]);

/** Who is asking, checked: the conversation key they may open, and what the client keeps to come back. */
function personOf(
  request: WidgetSessionRequest,
  settings: WidgetSessionSettings,
): { account: string; contact: string; kept: { visitorId: string } | { identifier: string } } {
  if (request.identifier !== undefined || request.identifierHash !== undefined) {
    if (request.visitorId !== undefined)
      throw refuse("visitorId", "give either visitorId (an anonymous visitor) or identifier with identifierHash");
    if (request.identifier === undefined) throw refuse("identifier", "required with identifierHash");
    if (!settings.identitySecret)
      throw refuse(
        "identifier",
        "identity verification is off on this hub: set WIDGET_IDENTITY_SECRET, and have your server send " +
          "identifierHash = hex HMAC-SHA256(identifier, that secret)",
      );
    if (!verifiedIdentity(settings.identitySecret, request.identifier, request.identifierHash ?? ""))
      throw new HubError(
        401,
        "identity_unverified",
        "identifierHash is not the HMAC-SHA256 of identifier with the hub's WIDGET_IDENTITY_SECRET",
        [{ field: "identifierHash", message: "does not verify identifier" }],
      );
    return { account: IDENTIFIED_ACCOUNT, contact: request.identifier, kept: { identifier: request.identifier } };
  }
  if (request.visitorId !== undefined && !issuedVisitorId(settings.secret, request.visitorId))
    throw refuse("visitorId", "not an id this hub issued: keep the id the hub issued, or omit it to get a new one");
  const visitorId = request.visitorId ?? issueVisitorId(settings.secret);
  return { account: VISITOR_ACCOUNT, contact: visitorLabel(visitorId), kept: { visitorId } };
}

export async function openWidgetSession(
  sql: Sql,
  settings: WidgetSessionSettings,
  request: WidgetSessionRequest,
): Promise<WidgetSession> {
  const person = personOf(request, settings);
  const { conversation, created } = await findOrCreateWidgetConversation(sql, {
    channel: request.channel,
    account: person.account,
    contact: person.contact,
    name: request.name,
  });
  const { token, expiresAt } = createWidgetToken(settings.secret, conversation.id, settings.tokenTtlMs);
  return { conversationId: conversation.id, ...person.kept, token, expiresAt: expiresAt.toISOString(), created };
}
