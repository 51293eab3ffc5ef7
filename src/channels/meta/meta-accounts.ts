// The Meta accounts one hub answers for: WhatsApp phone numbers, Instagram professional accounts and
// Facebook pages (Messenger). One app receives webhooks for all of them, so every inbound event names its
// account and every reply leaves from the account the person wrote to. Declared either one per channel
// (WA_PHONE_NUMBER_ID + WA_ACCESS_TOKEN, IG_ACCOUNT_ID + IG_ACCESS_TOKEN, FB_PAGE_ID + FB_PAGE_ACCESS_TOKEN)
// or several at once in META_ACCOUNTS, a JSON list; both may be used together.
import { z } from "zod";

export type MetaChannel = "whatsapp" | "instagram" | "messenger";
export const META_CHANNELS: readonly MetaChannel[] = ["whatsapp", "instagram", "messenger"];

export interface MetaAccount {
  channel: MetaChannel;
  /** WhatsApp phone number id, Instagram account id (IGID) or Facebook page id. */
  id: string;
  accessToken: string;
}

const accountSchema = z.strictObject({
  channel: z.enum(["whatsapp", "instagram", "messenger"]),
  id: z
    .union([z.string(), z.number()])
    .transform(String)
    .pipe(z.string().regex(/^\d+$/, "must be the account's numeric id")),
  token: z.string().min(1),
});

export class MetaAccountsError extends Error {}

interface AccountEnv {
  WA_PHONE_NUMBER_ID?: string | undefined;
  WA_ACCESS_TOKEN?: string | undefined;
  IG_ACCOUNT_ID?: string | undefined;
  IG_ACCESS_TOKEN?: string | undefined;
  FB_PAGE_ID?: string | undefined;
  FB_PAGE_ACCESS_TOKEN?: string | undefined;
  META_ACCOUNTS?: string | undefined;
}

export function metaAccounts(env: AccountEnv): MetaAccount[] {
  const accounts: MetaAccount[] = [];
  const single = (channel: MetaChannel, id: string | undefined, token: string | undefined) => {
    if (id && token) accounts.push({ channel, id, accessToken: token });
  };
  single("whatsapp", env.WA_PHONE_NUMBER_ID, env.WA_ACCESS_TOKEN);
  single("instagram", env.IG_ACCOUNT_ID, env.IG_ACCESS_TOKEN);
  single("messenger", env.FB_PAGE_ID, env.FB_PAGE_ACCESS_TOKEN);
  if (env.META_ACCOUNTS) {
    let list: unknown;
    try {
      list = JSON.parse(env.META_ACCOUNTS);
    } catch {
      throw new MetaAccountsError("META_ACCOUNTS: not valid JSON");
    }
    const parsed = z.array(accountSchema).safeParse(list);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new MetaAccountsError(`META_ACCOUNTS.${issue.path.join(".")}: ${issue.message}`);
    }
    for (const account of parsed.data) {
      accounts.push({ channel: account.channel, id: account.id, accessToken: account.token });
    }
  }
  const seen = new Set<string>();
  for (const account of accounts) {
    const key = `${account.channel}:${account.id}`;
    if (seen.has(key))
      throw new MetaAccountsError(`META_ACCOUNTS: ${account.channel} account ${account.id} is declared twice`);
    seen.add(key);
  }
  return accounts;
}

/** The accounts of one channel, in declaration order (the first answers conversations that name none). */
export function accountsOf(accounts: readonly MetaAccount[], channel: MetaChannel): MetaAccount[] {
  return accounts.filter((account) => account.channel === channel);
}
