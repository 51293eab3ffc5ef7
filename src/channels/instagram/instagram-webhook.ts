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
      if (message.is_echo) {
        events.push({
          kind: "echo",
          account: String(item.sender?.id ?? entry.id ?? ""),
          contact: String(item.recipient?.id ?? ""),
          id: message.mid,
          at,
          text,
        });
      } else {
        events.push({
          kind: "message",
          account: String(item.recipient?.id ?? entry.id ?? ""),
          contact: String(item.sender?.id ?? ""),
          id: message.mid,
          at,
          text,
          raw: item,
        });
      }
    }
  }
  return events;
}
