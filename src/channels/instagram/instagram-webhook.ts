// Reads Instagram messaging webhooks (`object: instagram`): the person's messages, and echoes of messages
// sent from the account (by the hub, or by a person using Instagram's own app).
export type InstagramEvent =
  | { kind: "message"; account: string; contact: string; id: string; at: Date; text: string; raw: unknown }
  | { kind: "echo"; account: string; contact: string; id: string; at: Date; text: string };

interface Messaging {
  sender?: { id?: string };
  recipient?: { id?: string };
  timestamp?: number;
  message?: { mid?: string; text?: string; is_echo?: boolean; attachments?: { type?: string }[] };
}

export function parseInstagramWebhook(body: unknown): InstagramEvent[] {
  const events: InstagramEvent[] = [];
  for (const entry of (body as { entry?: { id?: string; messaging?: Messaging[] }[] }).entry ?? []) {
    for (const item of entry.messaging ?? []) {
      const message = item.message;
      if (!message?.mid) continue; // reads, reactions and the rest carry nothing to answer
      const text = message.text ?? (message.attachments ?? []).map((a) => `[${a.type ?? "attachment"}]`).join(" ");
      const at = new Date(Number(item.timestamp ?? 0));
      // An echo goes from the account to the person; a message from the person to the account.
      const [person, account] = message.is_echo ? [item.recipient, item.sender] : [item.sender, item.recipient];
      const common = {
        account: String(account?.id ?? entry.id ?? ""),
        contact: String(person?.id ?? ""),
        id: message.mid,
        at,
        text,
      };
      events.push(message.is_echo ? { kind: "echo", ...common } : { kind: "message", ...common, raw: item });
    }
  }
  return events;
}
