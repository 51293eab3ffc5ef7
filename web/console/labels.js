// How the console names things: the person, a timeline entry's author, who has the conversation, a status.
import { chip } from "./dom.js";
import { isMe, state } from "./state.js";

export const ROLE_LABEL = {
  user: "Person",
  agent: "Agent",
  human: "Team member",
  tool_call: "Tool call",
  tool_result: "Tool result",
  template: "Template",
  progress: "Progress",
  approval: "Approval",
};

export const CHANNEL_LABEL = {
  web: "Web",
  ios: "iOS",
  android: "Android",
  flutter: "Flutter",
  whatsapp: "WhatsApp",
  instagram: "Instagram",
  messenger: "Messenger",
};

/** The hub's label for the person (their name, phone, or "Visitor 3f9a"); the raw ids are in the details. */
export function displayName(conversation) {
  if (conversation.label) return conversation.label;
  const known = state.conversations.find((c) => c.id === conversation.id);
  if (known && known.label) return known.label;
  if (state.timeline && state.timeline.conversation.id === conversation.id) return state.timeline.conversation.label;
  return conversation.name || conversation.contact || conversation.id;
}

/** What identifies the person on their channel, for tooltips and the details. */
export function contactKind(channel) {
  if (channel === "whatsapp") return "WhatsApp number or id";
  if (channel === "instagram") return "Instagram-scoped id";
  if (channel === "messenger") return "Page-scoped id";
  return "Visitor id";
}

export function fullIds(conversation) {
  return `${contactKind(conversation.channel)}: ${conversation.contact}\nConversation: ${conversation.id}`;
}

/** Who wrote an entry: the person by their label, a human agent by the name they signed in with. */
export function authorLabel(message, conversation) {
  if (message.role === "user") return conversation ? displayName(conversation) : ROLE_LABEL.user;
  if (message.role !== "human") return ROLE_LABEL[message.role] || message.role;
  const data = message.data && typeof message.data === "object" ? message.data : {};
  const agent = data.agent && typeof data.agent === "object" ? data.agent : null;
  if (!agent || !agent.name) return "Team member";
  return isMe(agent) ? `${agent.name} (you)` : agent.name;
}

export function controlBadge(conversation) {
  if (conversation.control !== "human") return chip("Agent", "agent", "The AI agent answers");
  const holder = conversation.humanAgent;
  // The agent handed it to the team and nobody has taken it yet: waiting, with the agent's reason.
  if (!holder && conversation.handoff)
    return chip(
      "Waiting for the team",
      "waiting",
      `The agent asked for a person: ${conversation.handoff.reason || ""}`,
    );
  const label = isMe(holder) ? "You" : `Human${holder ? `: ${holder.name}` : ""}`;
  return chip(label, "human", holder ? `Taken over by ${holder.name} (${holder.id})` : "Taken over");
}

export function statusKind(status) {
  switch (status) {
    case "held":
      return "held";
    case "failed":
    case "timed_out":
    case "cancelled":
    case "refused":
      return "bad";
    case "awaiting_reply":
    case "awaiting_approval":
    case "pending":
    case "running":
    case "expired":
      return "warn";
    case "delivered":
    case "read":
    case "sent":
    case "live":
    case "succeeded":
      return "ok";
    default:
      return "plain";
  }
}

/** The signed-in human has taken this conversation over (and may reply). */
export function isMine(conversation) {
  return Boolean(conversation && conversation.control === "human" && isMe(conversation.humanAgent));
}
