// Reads WhatsApp Cloud API webhooks (`object: whatsapp_business_account`): inbound messages of any type
// and status updates of what the hub sent. Batched entries and changes are flattened, in order.
export type WhatsAppEvent =
  | {
      kind: "message";
      account: string;
      contact: string;
      name: string | null;
      id: string;
      at: Date;
      type: string;
      text: string;
      raw: unknown;
    }
  | { kind: "status"; id: string; status: string; at: Date; errors: { code: number; title: string }[] };

interface Value {
  metadata?: { phone_number_id?: string };
  contacts?: { wa_id?: string; profile?: { name?: string } }[];
  messages?: Record<string, unknown>[];
  statuses?: {
    id?: string;
    status?: string;
    timestamp?: string;
    errors?: { code?: number; title?: string; message?: string }[];
  }[];
}

/** What the person said, whatever the message type; media and the rest are named by their type. */
export function textOf(message: Record<string, unknown>): string {
  const type = String(message.type ?? "unknown");
  const part = (message[type] ?? {}) as Record<string, unknown>;
  switch (type) {
    case "text":
      return String((part as { body?: string }).body ?? "");
    case "button":
      return String((part as { text?: string }).text ?? (part as { payload?: string }).payload ?? "");
    case "interactive": {
      const reply = (part.button_reply ?? part.list_reply ?? {}) as { title?: string };
      return String(reply.title ?? "");
    }
    default: {
      const caption = typeof part.caption === "string" ? ` ${part.caption}` : "";
      return `[${type}]${caption}`;
    }
  }
}

const seconds = (value: unknown) => new Date(Number(value ?? 0) * 1000);

export function parseWhatsAppWebhook(body: unknown): WhatsAppEvent[] {
  const events: WhatsAppEvent[] = [];
  for (const entry of (body as { entry?: { changes?: { value?: Value }[] }[] }).entry ?? []) {
    for (const change of entry.changes ?? []) {
      const value = change.value ?? {};
      const account = value.metadata?.phone_number_id ?? "";
      for (const message of value.messages ?? []) {
        const contact = String(message.from ?? "");
        const profile = value.contacts?.find((c) => c.wa_id === contact)?.profile;
        events.push({
          kind: "message",
          account,
          contact,
          name: profile?.name ?? null,
          id: String(message.id ?? ""),
          at: seconds(message.timestamp),
          type: String(message.type ?? "unknown"),
          text: textOf(message),
          raw: message,
        });
      }
      for (const status of value.statuses ?? []) {
        events.push({
          kind: "status",
          id: String(status.id ?? ""),
          status: String(status.status ?? ""),
          at: seconds(status.timestamp),
          errors: (status.errors ?? []).map((error) => ({
            code: Number(error.code ?? 0),
            title: String(error.title ?? error.message ?? ""),
          })),
        });
      }
    }
  }
  return events.filter((event) => event.id);
}
