// The routing core: for one item and one conversation, at the moment of sending, what to do and why.
// Pure: no database, no clock of its own (docs/architecture.md, Delivery).
import { WINDOW_MS } from "./window.js";
import { WIDGET_CHANNELS, isWindowlessChannel, type Channel } from "./channel.js";
import type { DecisionOf } from "./statuses.js";

/** Instagram and Messenger let a human agent answer up to 7 days after the person's last message (HUMAN_AGENT tag). */
export const HUMAN_AGENT_TAG_MS = 7 * 24 * 3_600_000;

export interface RouteConversation {
  channel: Channel;
  control: "agent" | "human";
  /** When the person last wrote (Meta's own timestamp); null if never. */
  lastInboundAt: Date | null;
  /** WhatsApp: when a template was last sent to bring the person back. */
  templateSentAt: Date | null;
  /** When Meta last answered "outside the window" (131047), which overrides our own reckoning. */
  windowClosedAt: Date | null;
  /** Whether the channel is configured on this hub. */
  channelEnabled: boolean;
  /** WhatsApp: whether a template is known for this item (the tool's or the hub-wide default). */
  templateAvailable: boolean;
  /**
   * WhatsApp, once the template is chosen (deliver.ts): whether Meta lets it be sent now (not paused,
   * disabled, rejected…), and whether it is a marketing template. Absent: not looked up yet.
   */
  template?: { usable: boolean; marketing: boolean };
  /** WhatsApp: Meta's per-person marketing limit (131049) holds marketing templates to this person until then. */
  marketingHeldUntil?: Date | null;
  /**
   * The channel said the person cannot be written to (a Telegram bot they blocked, an SMS number that sent
   * STOP) and they have not come back since: nothing more is sent.
   */
  unreachable?: boolean;
}

export interface RouteItem {
  /** Automated output (the agent's turns) or a human agent's reply. */
  author: "agent" | "human";
}

export type Route =
  | { action: "hold"; decision: DecisionOf<"held">; reason: "human_control" }
  | { action: "push"; reason: "widget" }
  | { action: "send"; decision: DecisionOf<"sent">; reason: "window_open" | "human_agent_tag" | "no_window" }
  | { action: "template"; decision: DecisionOf<"template">; reason: "window_closed" }
  | {
      action: "await_reply";
      decision: DecisionOf<"awaiting_reply">;
      reason:
        | "template_sent_this_period"
        | "window_closed_no_template"
        | "template_unavailable"
        | "marketing_limit"
        | "window_closed_instagram"
        | "window_closed_messenger";
    }
  | { action: "fail"; decision: DecisionOf<"failed">; reason: "channel_off" | "window_closed" | "unreachable" };

export function route(conversation: RouteConversation, item: RouteItem, now: Date): Route {
  const widget = (WIDGET_CHANNELS as readonly string[]).includes(conversation.channel);
  if (item.author === "agent" && conversation.control === "human") {
    return { action: "hold", decision: "held", reason: "human_control" };
  }
  if (widget) return { action: "push", reason: "widget" };
  if (!conversation.channelEnabled) return { action: "fail", decision: "failed", reason: "channel_off" };
  if (conversation.unreachable) return { action: "fail", decision: "failed", reason: "unreachable" };
  if (isWindowlessChannel(conversation.channel)) return { action: "send", decision: "sent", reason: "no_window" };

  const sinceInbound = conversation.lastInboundAt ? now.getTime() - conversation.lastInboundAt.getTime() : Infinity;
  const metaClosed =
    conversation.windowClosedAt !== null &&
    (conversation.lastInboundAt === null || conversation.windowClosedAt > conversation.lastInboundAt);
  if (sinceInbound < WINDOW_MS && !metaClosed) return { action: "send", decision: "sent", reason: "window_open" };

  // Instagram and Messenger have no templates; a human agent may answer with the HUMAN_AGENT tag for 7 days.
  const tagged = conversation.channel === "instagram" || conversation.channel === "messenger";
  if (item.author === "human") {
    if (tagged && sinceInbound < HUMAN_AGENT_TAG_MS) {
      return { action: "send", decision: "sent", reason: "human_agent_tag" };
    }
    return { action: "fail", decision: "failed", reason: "window_closed" };
  }
  if (conversation.channel === "instagram") {
    return { action: "await_reply", decision: "awaiting_reply", reason: "window_closed_instagram" };
  }
  if (conversation.channel === "messenger") {
    return { action: "await_reply", decision: "awaiting_reply", reason: "window_closed_messenger" };
  }
  const templateThisPeriod =
    conversation.templateSentAt !== null &&
    (conversation.lastInboundAt === null || conversation.templateSentAt > conversation.lastInboundAt);
  if (templateThisPeriod)
    return { action: "await_reply", decision: "awaiting_reply", reason: "template_sent_this_period" };
  if (!conversation.templateAvailable) {
    return { action: "await_reply", decision: "awaiting_reply", reason: "window_closed_no_template" };
  }
  if (conversation.template && !conversation.template.usable) {
    return { action: "await_reply", decision: "awaiting_reply", reason: "template_unavailable" };
  }
  const held = conversation.marketingHeldUntil != null && conversation.marketingHeldUntil > now;
  if (conversation.template?.marketing && held) {
    return { action: "await_reply", decision: "awaiting_reply", reason: "marketing_limit" };
  }
  return { action: "template", decision: "template", reason: "window_closed" };
}
