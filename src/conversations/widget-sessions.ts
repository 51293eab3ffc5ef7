// Opening a widget session: who the person is — an anonymous visitor by the id the hub issued them, or a person
// the integrator verified — which conversation is theirs, and a token for its socket. The two kinds live under
// two accounts, so an identified person's conversation can never be opened with a visitor id, nor an anonymous
// one with an identifier. Asking again with what the client keeps renews the token.
// A session opens no conversation by itself: a person who has not written yet gets the id their conversation
// will have, and their first message (or file, or push registration) makes it — page views store nothing.
import { randomUUID } from "node:crypto";
import {
  openUnstarted,
  sealUnstarted,
  unstartedConversationId,
  type UnstartedConversation,
} from "../channels/widget/unstarted-conversation.js";
import { issuedVisitorId, issueVisitorId, visitorLabel } from "../channels/widget/visitor-id.js";
import { verifiedIdentity } from "../channels/widget/widget-identity.js";
import { createWidgetToken } from "../channels/widget/widget-token.js";
import type { Sql, SqlQuery } from "../db/sql.js";
import { WIDGET_CHANNELS, type Channel } from "../delivery/channel.js";
import { HubError } from "../errors.js";
import { findOrCreateWidgetConversation } from "./conversations.js";

import { IDENTIFIED_ACCOUNT, VISITOR_ACCOUNT } from "./widget-accounts.js";

export { IDENTIFIED_ACCOUNT, VISITOR_ACCOUNT };
export const WIDGET_SESSION_ACCOUNTS = [VISITOR_ACCOUNT, IDENTIFIED_ACCOUNT] as const;

export interface WidgetSessionRequest {
  channel: Channel;
  visitorId?: string | undefined;
  identifier?: string | undefined;
  identifierHash?: string | undefined;
  name?: string | undefined;
  /** Make the conversation now rather than on the person's first message. */
  start?: boolean | undefined;
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
  const derived = unstartedConversationId(settings.secret, person.account, person.contact);
  // The person's conversation (the oldest, where an older hub made one per widget channel), and whether the id
  // theirs would get is taken: an erased conversation keeps its id as a tombstone, so the next needs another.
  const rows = await sql.query<{ id: string; theirs: boolean }>(
    `SELECT id, (account = $1 AND contact = $2) AS theirs FROM "Conversation"
     WHERE (account = $1 AND contact = $2 AND channel = ANY($3::text[])) OR id = $4::uuid
     ORDER BY theirs DESC, "createdAt", id LIMIT 2`,
    [person.account, person.contact, WIDGET_CHANNELS, derived],
  );
  const existing = rows.find((row) => row.theirs);
  const answer = (conversationId: string, unstarted?: string) => {
    const { token, expiresAt } = createWidgetToken(
      settings.secret,
      conversationId,
      settings.tokenTtlMs,
      undefined,
      unstarted,
    );
    return { conversationId, ...person.kept, token, expiresAt: expiresAt.toISOString() };
  };
  if (existing) return { ...answer(existing.id), created: false };
  const id = rows.length > 0 ? randomUUID() : derived;
  const unstarted: UnstartedConversation = {
    channel: request.channel,
    account: person.account,
    contact: person.contact,
    ...(request.name === undefined ? {} : { name: request.name }),
  };
  if (request.start) {
    const { conversation, created } = await findOrCreateWidgetConversation(sql, { ...unstarted, id });
    return { ...answer(conversation.id), created };
  }
  return { ...answer(id, sealUnstarted(settings.secret, id, unstarted)), created: true };
}

/** The conversation a widget token opens: its id, and while the person has not written, what will make it. */
export interface WidgetConversationRef {
  id: string;
  unstarted?: UnstartedConversation | undefined;
}

/**
 * Where a valid token leads now. A token issued before the first message still says "unstarted" after another
 * tab or app of the same person made the conversation: then it leads to that conversation.
 */
export async function conversationOfToken(
  sql: SqlQuery,
  secret: string,
  check: { conversationId: string; unstarted?: string },
): Promise<WidgetConversationRef> {
  const unstarted = check.unstarted ? openUnstarted(secret, check.conversationId, check.unstarted) : undefined;
  if (!unstarted) return { id: check.conversationId };
  const [row] = await sql.query<{ id: string }>(
    `SELECT id FROM "Conversation"
     WHERE id = $1::uuid OR (account = $2 AND contact = $3 AND channel = ANY($4::text[]))
     ORDER BY (id = $1::uuid) DESC, "createdAt", id LIMIT 1`,
    [check.conversationId, unstarted.account, unstarted.contact, WIDGET_CHANNELS],
  );
  return row ? { id: row.id } : { id: check.conversationId, unstarted };
}

/** Makes the conversation of a person who has just written, if it is not made yet; its id. */
export async function startWidgetConversation(sql: Sql, ref: WidgetConversationRef): Promise<string> {
  if (!ref.unstarted) return ref.id;
  const { conversation } = await findOrCreateWidgetConversation(sql, { ...ref.unstarted, id: ref.id });
  return conversation.id;
}
