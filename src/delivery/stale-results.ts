// Stale results. A result (or failure) still not given to the person `deliver_within` after it arrived —
// held through a long takeover, waiting for a WhatsApp or Instagram person who never came back, pending
// otherwise — is not given as if it were fresh: it expires, and the agent gets a `tool_expired` input in its
// place, so it can offer to run the tool again. So does every result that comes to a closed conversation,
// whose notice waits for the person's return. Checked at the moment of delivery (here, in every turn) and by
// the sweep, so the timeline shows an expiry without waiting for a turn. The transitions are delivery-state's.
import type { Logger } from "../logger.js";
import type { ThrottledLog } from "../log-throttle.js";
import type { DeliveryState } from "./delivery-state.js";
import { requestTurn } from "./effects.js";
import type { TurnRequester } from "./turn-schedule.js";
import type { ConversationRow, TurnInputRow } from "./rows.js";

/** What setting stale results aside needs; the sweep also asks for the turns that give their notices. */
export interface StaleResultsDeps {
  delivery: DeliveryState;
  turns: TurnRequester;
  log: Logger;
  warnRepeated: ThrottledLog;
  now: () => Date;
}

const isResult = (input: TurnInputRow) => input.kind === "tool_result" || input.kind === "tool_failed";

/**
 * A turn's inputs as they may be given now. In a closed conversation results and failures expire (their
 * notices wait for the person) and progress is dropped; elsewhere those past their `deliver_within` are
 * replaced, in place, by their `tool_expired` notices.
 */
export async function setAsideStale<T extends TurnInputRow>(
  ctx: Pick<StaleResultsDeps, "delivery" | "log" | "now">,
  conversation: ConversationRow,
  inputs: T[],
): Promise<(T | TurnInputRow)[]> {
  if (conversation.closedAt) {
    const results = inputs.filter(isResult);
    const progress = inputs.filter((input) => input.kind === "progress");
    if (results.length > 0) {
      await ctx.delivery.expireInputs({ reason: "conversation_closed", inputIds: results.map((input) => input.id) });
    }
    if (progress.length > 0) await ctx.delivery.supersedeProgress(conversation.id, progress, "conversation_closed");
    return inputs.filter((input) => !isResult(input) && input.kind !== "progress");
  }
  const now = ctx.now().getTime();
  const due = inputs.filter((input) => isResult(input) && input.expiresAt && input.expiresAt.getTime() <= now);
  if (due.length === 0) return inputs;
  const notices = await ctx.delivery.expireInputs({
    reason: "deliver_within",
    inputIds: due.map((input) => input.id),
  });
  ctx.log.info({ conversation_id: conversation.id, expired: notices.length }, "stale results expired");
  // A notice's key names the input it replaces: it goes where that input was.
  const noticeOf = new Map(notices.map((notice) => [notice.key.replace(/^expired:/, ""), notice]));
  return inputs.flatMap((input) => {
    if (!due.includes(input)) return [input];
    const notice = noticeOf.get(input.id);
    return notice ? [notice] : [];
  });
}

/** The sweep's part: expires what is past its `deliver_within` anywhere, and asks for the turns now owed. */
export async function expireStaleResults(ctx: StaleResultsDeps): Promise<number> {
  const notices = await ctx.delivery.expireInputs({ reason: "deliver_within" });
  if (notices.length > 0) ctx.log.info({ expired: notices.length }, "stale results expired by the sweep");
  const owed = new Set(notices.filter((notice) => notice.state === "pending").map((notice) => notice.conversationId));
  for (const conversationId of owed) await requestTurn(ctx, conversationId);
  return notices.length;
}
