// Delivery state on the store: the modules of each caller family (turn inputs, routing outcomes, the
// conversation's control, receipts) behind the one DeliveryState interface (../delivery-state.ts).
import type { Sql } from "../../db/sql.js";
import type { Changes } from "../changes.js";
import type { DeliveryState } from "../delivery-state.js";
import { conversationControl } from "./conversation-control.js";
import { receipts, type MetaStatusRules } from "./receipts.js";
import { routingOutcomes } from "./routing-outcomes.js";
import { templateWaits } from "./template-waits.js";
import { turnInputs } from "./turn-inputs.js";

export function deliveryState(sql: Sql, changes: Changes, now: () => Date, meta: MetaStatusRules): DeliveryState {
  return {
    ...turnInputs(sql, changes, now),
    ...routingOutcomes(sql, changes, now),
    ...conversationControl(sql, changes, now),
    ...receipts(sql, changes, now, meta),
    ...templateWaits(sql, changes, now),
  };
}
