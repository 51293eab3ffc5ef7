// Twilio's message statuses, as the hub's (delivery/statuses.ts, META_STATUS_RANK): queued, accepted,
// scheduled and sending say nothing the hub's `sent` does not; sent, delivered and read move the message up;
// undelivered, failed and canceled fail it with Twilio's error code. A status never moves a message back: a
// late `sent` after `delivered` changes nothing (delivery/state/receipts.ts).
import type { MetaStatus } from "../../delivery/statuses.js";

const STATUSES: Record<string, MetaStatus> = {
  sent: "sent",
  delivered: "delivered",
  read: "read",
  undelivered: "failed",
  failed: "failed",
  canceled: "failed",
};

/** The hub's status for Twilio's, or undefined for one that changes nothing (queued, sending…). */
export const hubStatus = (status: string): MetaStatus | undefined => STATUSES[status.toLowerCase()];

/** The titles of the carrier errors a failed status most often carries (Twilio's error dictionary). */
const TITLES: Record<number, string> = {
  21610: "Attempt to send to unsubscribed recipient",
  30003: "Unreachable destination handset",
  30004: "Message blocked",
  30005: "Unknown destination handset",
  30006: "Landline or unreachable carrier",
  30007: "Message filtered",
  30008: "Unknown error",
};

export const errorTitle = (code: number, given: string | undefined) => given ?? TITLES[code] ?? "delivery failed";
