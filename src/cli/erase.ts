// `hub erase`: a person's right to be forgotten from the terminal — one conversation by id, or every
// conversation of a contact on a channel (`whatsapp:56912345678`). It writes to the database itself, as
// `by: "cli"` (src/conversations/erasure.ts): PostgreSQL alongside the running hubs; the embedded database
// only when no hub holds its folder (otherwise the hub's API erases: POST /v1/conversations/{id}/erase).
import type { Config } from "../config.js";
import { isUuid } from "../conversations/conversations.js";
import { conversationsOfContact, eraseConversation, type Tombstone } from "../conversations/erasure.js";
import { openDataForCommand } from "./open-data.js";
import { CHANNELS, type Channel } from "../delivery/channel.js";
import { CliError } from "./cli-error.js";

export type EraseTarget = { conversation: string } | { channel: Channel; contact: string };

/** `--contact <channel>:<contact>` read, or why not. */
export function parseContact(value: string): { channel: Channel; contact: string } | { error: string } {
  const at = value.indexOf(":");
  const channel = at > 0 ? value.slice(0, at) : "";
  let contact = at > 0 ? value.slice(at + 1).trim() : "";
  if (!(CHANNELS as readonly string[]).includes(channel) || !contact)
    return {
      error: `--contact takes <channel>:<contact> with a channel among ${CHANNELS.join(", ")} (e.g. whatsapp:56912345678)`,
    };
  // A WhatsApp number as people write it: the wa_id has no "+", spaces or dashes.
  if (channel === "whatsapp" && /^\+?[\d\s-]+$/.test(contact)) contact = contact.replace(/[^\d]/g, "");
  return { channel: channel as Channel, contact };
}

/** Erases and prints one line per conversation; the exit code. */
export async function erase(
  config: Config,
  target: EraseTarget,
  reason: string | undefined,
  print: (line: string) => void,
): Promise<number> {
  if ("conversation" in target && !isUuid(target.conversation))
    throw new CliError(`--conversation takes a conversation id (a UUID), not ${JSON.stringify(target.conversation)}`);
  const database = await openDataForCommand(
    config,
    "erase through that hub's API (POST /v1/conversations/{id}/erase), or stop it first",
  );
  try {
    const deps = { sql: database.sql, now: () => new Date() };
    const ids =
      "conversation" in target
        ? [target.conversation]
        : await conversationsOfContact(database.sql, target.channel, target.contact);
    if (ids.length === 0 && "contact" in target)
      throw new CliError(
        `no conversation of ${target.channel}:${target.contact} to erase (none, or all already erased)`,
      );
    let already = 0;
    for (const id of ids) {
      const outcome = await eraseConversation(deps, id, { by: "cli", reason });
      if (!outcome) throw new CliError(`no conversation ${id}`);
      if (outcome.erased) print(`erased ${id} (${outcome.tombstone.channel}) at ${outcome.tombstone.erasedAt}`);
      else {
        already += 1;
        print(
          `${id} was already erased, at ${outcome.tombstone.erasedAt} by ${describe(outcome.tombstone)}: nothing to do`,
        );
      }
    }
    if (ids.length > 1) print(`${ids.length - already} erased, ${already} already erased`);
    return 0;
  } finally {
    await database.close();
  }
}

const describe = (tombstone: Tombstone) => `${tombstone.by}${tombstone.reason ? ` (${tombstone.reason})` : ""}`;
