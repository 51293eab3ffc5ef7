// Team views: who is on the team and whether they are online, busy or offline (live, from `presence`), each
// team with its open hours and how many conversations wait in its queue, and the member's own availability
// (online / busy). Each part shows only where the hub answers its endpoint.
import { api, optional, showError } from "./api.js";
import { el, formatTime } from "./dom.js";
import { refresher } from "./refresh.js";
import { isMe, state, ui } from "./state.js";
import { setStatus } from "./status.js";

const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;
const AVAILABILITY = { online: "Online", busy: "Busy", offline: "Offline" };

/** GET /v1/members and /v1/teams, each optional: a 404 turns its feature off. */
export async function loadTeam() {
  const [members, teams] = await Promise.all([
    optional("GET", "/v1/members").catch(() => null),
    optional("GET", "/v1/teams").catch(() => null),
  ]);
  state.features.members = Boolean(members);
  state.features.teams = Boolean(teams);
  state.members = (members && members.members) || [];
  state.teams = (teams && teams.teams) || [];
  renderTeam();
}

function availabilityBadge(availability) {
  const value = AVAILABILITY[availability] ? availability : "offline";
  return el("span", {
    class: `availability availability-${value}`,
    "data-availability": value,
    text: AVAILABILITY[value],
  });
}

function memberRow(member) {
  return el("li", { class: "team-member", "data-id": member.id }, [
    el("span", { class: "team-member-name", text: isMe(member) ? `${member.name} (you)` : member.name }),
    availabilityBadge(member.availability),
    el("span", {
      class: "muted",
      text: `${Number(member.assigned) || 0} assigned${member.role === "admin" ? " · admin" : ""}`,
    }),
  ]);
}

function teamRow(team) {
  const queued = Number(team.queued) || 0;
  return el("li", { class: "team-row", "data-id": team.id }, [
    el("span", { class: "team-name", text: `${team.name}${team.isDefault ? " (default)" : ""}` }),
    el("span", {
      class: `chip ${team.open ? "chip-ok" : "chip-warn"}`,
      text: team.open ? "Open" : team.opensAt ? `Closed until ${formatTime(team.opensAt)}` : "Closed",
    }),
    el("span", { class: `chip ${queued ? "chip-waiting" : "chip-plain"}`, text: `${queued} in queue` }),
    el("span", { class: "muted", text: plural((team.members || []).length, "member") }),
  ]);
}

export function renderTeam() {
  const any = state.features.members || state.features.teams;
  ui.teamToggle.hidden = !any;
  if (!any) ui.teamPanel.hidden = true;
  const sections = [];
  if (state.features.members) {
    sections.push(
      el("h2", { id: "team-members-title", text: "Members" }),
      el("ul", { class: "team-members", "aria-labelledby": "team-members-title" }, state.members.map(memberRow)),
    );
  }
  if (state.features.teams) {
    sections.push(
      el("h2", { id: "team-teams-title", text: "Teams" }),
      el("ul", { class: "team-teams", "aria-labelledby": "team-teams-title" }, state.teams.map(teamRow)),
    );
  }
  ui.teamPanel.replaceChildren(...sections);
  renderMyAvailability();
}

/** The member's own online / busy select (offline is what the hub says of a member who is not connected). */
function renderMyAvailability() {
  const me = state.member;
  ui.availability.hidden = !me || !state.features.me;
  if (ui.availability.hidden) return;
  const chosen = me.chosenAvailability || (me.availability === "busy" ? "busy" : "online");
  ui.availability.value = chosen === "busy" ? "busy" : "online";
}

async function setAvailability(availability) {
  try {
    const body = await optional("PUT", "/v1/me/availability", { availability });
    if (body === null) {
      ui.availability.hidden = true;
      setStatus("This hub does not keep availability.", "info");
      return;
    }
    if (body.member) state.member = { ...state.member, ...body.member };
    setStatus(availability === "busy" ? "You are busy: nothing new is assigned to you." : "You are online.", "ok");
  } catch (error) {
    showError("Changing your availability", error);
  }
  renderMyAvailability();
}

/** A `presence` event: one member's availability changed. */
export function applyPresence(payload) {
  const changed = payload && payload.member;
  if (!changed) return;
  const known = state.members.find((member) => member.id === changed.id);
  if (known) known.availability = changed.availability;
  if (state.member && state.member.id === changed.id) state.member.availability = changed.availability;
  renderTeam();
}

/** Re-reads the teams' queue counts (after an assignment moved something). */
async function readTeams() {
  if (!state.features.teams) return;
  try {
    const body = await api("GET", "/v1/teams");
    state.teams = body.teams || [];
    renderTeam();
  } catch {
    // The counts stay as they were until the next change.
  }
}

const teamsRefresh = refresher(readTeams);
/** Assignments come in bursts: the queue counts are read again once the burst is over. */
export const refreshTeams = () => teamsRefresh.schedule(1000);

export function setUpTeam() {
  ui.teamToggle.addEventListener("click", () => {
    const open = ui.teamPanel.hidden;
    ui.teamPanel.hidden = !open;
    ui.teamToggle.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) ui.teamPanel.focus();
  });
  ui.teamPanel.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    ui.teamPanel.hidden = true;
    ui.teamToggle.setAttribute("aria-expanded", "false");
    ui.teamToggle.focus();
  });
  ui.availability.addEventListener("change", () => setAvailability(ui.availability.value));
}
