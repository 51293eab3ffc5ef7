// The configured accounts of one channel, each with what sends from it (its Graph client, its pacing).
// A conversation is answered from its own account; one that names none (created through the API before any
// message from the person) from the channel's first account.
import type { SendConversation, SendOutcome } from "../../delivery/channel-port.js";

export type AccountClients<T> = ReadonlyMap<string, T & { id: string }>;

export function accountFor<T>(
  accounts: AccountClients<T>,
  conversation: Pick<SendConversation, "account">,
): (T & { id: string }) | { failed: Extract<SendOutcome, { status: "failed" }> } {
  const account = conversation.account ? accounts.get(conversation.account) : accounts.values().next().value;
  if (account) return account;
  return {
    failed: {
      status: "failed",
      decision: "failed",
      code: "account_off",
      title: `this hub does not answer for account ${conversation.account}`,
    },
  };
}
