// Who a conversation is assigned to and where it waits: "Yours" / "Assigned to Ana", "In queue 3 min", "Team
// closed until 09:00", its response clock; taking it over (asking first when it is someone else's), and an
// admin's "Assign to" select.
import { api, ApiError, asAgent, optional } from "./api.js";
import { clockChip, closedChip, queueChip } from "./clocks.js";
import { chip, el } from "./dom.js";
import { isMe, state, ui } from "./state.js";

/** The chips a conversation's assignment adds (none when the hub does not assign). */
export function assignmentChips(conversation, withTeam) {
  const chips = [];
  if (withTeam && conversation.team) chips.push(chip(conversation.team.name, "team", "The conversation's team"));
  const assignee = conversation.assignee;
  if (assignee) {
    chips.push(
      isMe(assignee)
        ? chip("Yours", "mine", "Assigned to you")
        : chip(`Assigned to ${assignee.name}`, "assignee", `Assigned to ${assignee.name} (${assignee.id})`),
    );
  } else {
    chips.push(queueChip(conversation.queuedAt));
  }
  chips.push(closedChip(conversation.opensAt), clockChip(conversation.clock));
  return chips.filter(Boolean);
}

/** The admin's "Assign to" select: admins (and the shared key, which acts as one) once members are known. */
export function canAssign() {
  return state.features.members && (!state.member || state.member.role === "admin");
}

export function renderAssign(conversation) {
  ui.assign.hidden = !canAssign() || !conversation;
  if (ui.assign.hidden) return;
  const current = conversation.assignee ? conversation.assignee.id : "";
  ui.assign.replaceChildren(
    el("option", { value: "", text: "Nobody (team queue)" }),
    ...state.members.map((member) =>
      el("option", {
        value: member.id,
        text: `${member.name}${member.availability ? ` — ${member.availability}` : ""}`,
      }),
    ),
  );
  if (current && !state.members.some((member) => member.id === current)) {
    ui.assign.appendChild(el("option", { value: current, text: conversation.assignee.name }));
  }
  ui.assign.value = current;
  ui.assign.disabled = state.busy;
}

/** POST …/assign: null sends it back to its team's queue. 404: this hub cannot assign; the select hides. */
export async function assignTo(conversationId, memberId) {
  const body = await optional("POST", `/v1/conversations/${encodeURIComponent(conversationId)}/assign`, {
    member: memberId || null,
  });
  if (body === null) {
    state.features.members = false;
    ui.assign.hidden = true;
    return null;
  }
  return body;
}

/**
 * Takes the conversation over. With a member key the hub knows who; the shared key names the agent. A
 * conversation assigned to someone else answers 409 assigned_to_other: the answer is {conflict: name}, and
 * the caller asks before calling again with `take`.
 */
export async function takeOver(conversationId, take) {
  const path = `/v1/conversations/${encodeURIComponent(conversationId)}/takeover`;
  try {
    return await api("POST", path, asAgent(take ? { take: true } : {}));
  } catch (error) {
    if (error instanceof ApiError && error.code === "assigned_to_other") {
      const body = error.body || {};
      const named =
        (body.assignee && body.assignee.name) || (body.details && body.details.assignee && body.details.assignee.name);
      const conversation = state.timeline && state.timeline.conversation;
      const fallback = conversation && conversation.assignee ? conversation.assignee.name : "someone else";
      return { conflict: named || fallback };
    }
    throw error;
  }
}

/** Shows "Assigned to X — take it anyway?" in the header; `yes` runs on the confirming button. */
export function askTakeAnyway(name, yes) {
  const take = el("button", { type: "button", id: "takeover-anyway", class: "small primary", text: "Take it anyway" });
  const keep = el("button", { type: "button", id: "takeover-keep", class: "small", text: "Leave it" });
  const close = () => {
    ui.takeoverConfirm.hidden = true;
    ui.takeoverConfirm.replaceChildren();
  };
  take.addEventListener("click", () => {
    close();
    yes();
  });
  keep.addEventListener("click", () => {
    close();
    ui.takeover.focus();
  });
  ui.takeoverConfirm.replaceChildren(
    el("p", { class: "takeover-confirm-text", text: `Assigned to ${name} — take it anyway?` }),
    take,
    keep,
  );
  // Escape is "Leave it", as in any question the page asks.
  ui.takeoverConfirm.onkeydown = (event) => {
    if (event.key === "Escape") keep.click();
  };
  ui.takeoverConfirm.hidden = false;
  take.focus();
}

/** An assignment event: the list item and open conversation take its fields at once (a re-read follows). */
export function applyAssignment(payload) {
  const patch = {
    team: payload.team,
    assignee: payload.assignee,
    assignedAt: payload.assignedAt,
    queuedAt: payload.queuedAt,
    opensAt: payload.opensAt,
  };
  const listed = state.conversations.find((conversation) => conversation.id === payload.conversationId);
  if (listed) Object.assign(listed, patch);
  const open = state.timeline && state.timeline.conversation;
  if (open && open.id === payload.conversationId) Object.assign(open, patch);
  return listed || open || null;
}

/** Whether an assignment event gives this member a conversation (not one they took themselves). */
export const assignedToMe = (payload) =>
  Boolean(state.member && payload.assignee && isMe(payload.assignee) && payload.reason !== "taken");
