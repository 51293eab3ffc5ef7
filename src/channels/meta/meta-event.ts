// What one Meta webhook event means to the hub, whatever channel it came on. Every event the parsers
// meet gets exactly one of these outcomes (docs/operations.md "Meta webhooks" lists them by event kind):
//   message   the person said something: recorded, and the agent answers it (a turn)
//   record    recorded in the timeline, never answered (echoes, standby messages, referrals, system notices)
//   edit      changes the text of an earlier message (the old text kept)
//   delete    marks an earlier message deleted (its text withheld from the agent)
//   reaction  sets or withdraws the person's reaction on a message (no turn)
//   read      the person has read the business's messages up to a point
//   status    Meta's sent / delivered / read / failed for a message the hub sent (WhatsApp: with its pricing)
//   template  WhatsApp: a template's status or category changed (whatsapp-templates.ts)
//   ignored   nothing to do, with the reason (a field the hub does not use, an event of no consequence)
import type { StoredAttachment } from "../../conversations/inbound-attachments.js";
import type { MetaChannel } from "./meta-accounts.js";

/** The person, as the channel names them. WhatsApp: wa_id when Meta gives it, else the BSUID. */
export interface MetaPerson {
  id: string;
  /** WhatsApp's business-scoped user id, when present. */
  userId: string | null;
  name: string | null;
}

export interface Addressed {
  channel: MetaChannel;
  /** The business side: phone number id, Instagram account id or page id. */
  account: string;
  person: MetaPerson;
  at: Date;
}

export type MetaEvent =
  | (Addressed & {
      kind: "message";
      id: string;
      type: string;
      text: string;
      data: unknown;
      /** The files it carries: where the hub fetches each when asked (inbound-attachments.ts). */
      attachments?: StoredAttachment[];
    })
  | (Addressed & {
      kind: "record";
      id: string;
      role: "user" | "human" | "event";
      why: "echo" | "standby" | "referral" | "system";
      type: string;
      text: string;
      data: unknown;
    })
  | (Addressed & { kind: "edit"; target: string; editId: string | null; text: string })
  | (Addressed & { kind: "delete"; target: string })
  | (Addressed & { kind: "reaction"; target: string; emoji: string | null })
  | (Addressed & { kind: "read"; target: string | null; watermark: Date | null })
  | {
      kind: "status";
      channel: MetaChannel;
      account: string;
      id: string;
      status: string;
      at: Date;
      errors: { code: number; title: string }[];
      /** WhatsApp: what Meta charges for the message (the status's `pricing` and `conversation`). */
      charge?: MetaCharge;
    }
  | {
      kind: "template";
      channel: "whatsapp";
      /** The WhatsApp Business Account (entry[].id). */
      account: string;
      name: string;
      language: string;
      templateId: string | null;
      /** Meta's time of the report (entry[].time), else when the hub received it. */
      at: Date | null;
      /** `message_template_status_update`: the new status, why, and the category it carries. */
      status?: { event: string; reason: string | null; category: string | null };
      /** `template_category_update`: the new category and the one before. */
      category?: { category: string; previous: string | null };
    }
  | { kind: "ignored"; channel: MetaChannel; account: string; reason: string };

/** A WhatsApp status's billing details, as Meta gives them (any of them may be missing). */
export interface MetaCharge {
  billable: boolean | null;
  pricingModel: string | null;
  category: string | null;
  type: string | null;
  conversation: { id: string | null; origin: string | null; expiresAt: string | null } | null;
}

/** Meta's timestamps: WhatsApp in seconds (as text), Instagram and Messenger in milliseconds; some ISO text. */
export function metaTime(value: unknown, unit: "s" | "ms"): Date {
  if (typeof value === "string" && value.trim() !== "" && !/^\d+$/.test(value.trim())) {
    const parsed = Date.parse(value);
    if (!Number.isNaN(parsed)) return new Date(parsed);
  }
  const number = Number(value ?? 0);
  return new Date(unit === "s" ? number * 1000 : number);
}

/** Meta sends some ids as JSON numbers; they are text everywhere in the hub. */
export const idText = (value: unknown): string =>
  typeof value === "string" || typeof value === "number" || typeof value === "bigint" ? String(value) : "";
