// Meta's rules for the statuses and reads it reports on what the hub sent, as the receipts transitions of
// delivery state apply them (src/delivery/state/receipts.ts): which failure means "outside the window", the
// order of its statuses, and what a read covers.
import type { MetaStatusRules } from "../../delivery/state/receipts.js";
import { META_STATUS_RANK } from "../../delivery/statuses.js";
import { MARKETING_HOLD_MS } from "../../delivery/template-status.js";

/** A send Meta accepted, then refused as outside the 24-hour window: it goes again by the template path. */
export const OUTSIDE_WINDOW = 131047;
/** "Not delivered to maintain healthy ecosystem engagement": Meta's per-person marketing limit. */
export const MARKETING_LIMIT = 131049;

const rankCases = Object.entries(META_STATUS_RANK)
  .map(([status, rank]) => `WHEN '${status}' THEN ${rank}`)
  .join(" ");

export const metaStatusRules: MetaStatusRules = {
  refusedOutsideWindow: (error) => error?.code === OUTSIDE_WINDOW,
  marketingLimit: (error) => error?.code === MARKETING_LIMIT,
  marketingHoldMs: MARKETING_HOLD_MS,
  rankOf: (column) => `(CASE ${column} ${rankCases} ELSE 0 END)`,
  // Instagram names the message read up to; Messenger gives a watermark: everything sent until then is read.
  readUpTo: (upToSeq, watermark) => `(seq <= ${upToSeq} OR "createdAt" <= ${watermark})`,
};
