// Signing in and out. A member's own key ("hubm_…") signs in as that member (GET /v1/me): no name to type.
// The shared CONSOLE_API_KEY signs in with a name (and an optional id), as before. The browser keeps the key
// (and the name); Sign out removes the key.
import { api, ApiError, optional, showError, whenUnauthorized } from "./api.js";
import { loadCannedReplies } from "./canned.js";
import { resetConversation, select } from "./conversation.js";
import { renderTeamFilters } from "./list.js";
import { connect, disconnect, whenRefused } from "./live.js";
import { listRefresh } from "./refresh.js";
import { state, ui } from "./state.js";
import { clearNotice, setConnection, setStatus } from "./status.js";
import { load, save } from "./store.js";
import { loadTeam, renderTeam } from "./team.js";

export const MEMBER_KEY_PREFIX = "hubm_";
const isMemberKey = (key) => key.startsWith(MEMBER_KEY_PREFIX);

/** An id made from the name when none is given: the same name signs in as the same human. */
function idFromName(name) {
  const slug = name
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 100);
  return slug || "agent";
}

function agentFromForm() {
  const name = ui.agentName.value.trim();
  return name ? { id: ui.agentId.value.trim() || idFromName(name), name } : null;
}

/** A member key needs no name: the name fields step aside while one is typed. */
function showNameFields() {
  const member = isMemberKey(ui.key.value.trim());
  ui.nameFields.hidden = member;
  ui.agentName.required = !member;
}

function showLogin(text, kind) {
  state.key = "";
  ui.loginForm.hidden = false;
  ui.console.hidden = true;
  if (text) setStatus(text, kind);
}

/** Who this key is: the member (GET /v1/me), or null (the shared key, or a hub without members). */
async function whoAmI() {
  const body = await optional("GET", "/v1/me");
  state.features.me = body !== null;
  return body && body.member ? body.member : null;
}

async function signIn(key, typedAgent) {
  state.key = key;
  setStatus("Signing in…", "info");
  let member;
  try {
    member = await whoAmI();
    if (!member) {
      if (!typedAgent) {
        ui.nameFields.hidden = false;
        ui.agentName.required = true;
        showLogin("This hub does not know that key as a member's: enter your name to sign in.", "error");
        ui.agentName.focus();
        return;
      }
      await api("GET", "/v1/conversations?limit=1");
    }
  } catch (error) {
    showLogin();
    if (error instanceof ApiError && error.status === 401) setStatus("That console key was refused.", "error");
    else showError("Sign in", error);
    return;
  }
  state.member = member;
  state.agent = member ? { id: member.id, name: member.name } : typedAgent;
  save("key", key);
  if (!member) save("agent", typedAgent);
  ui.loginForm.hidden = true;
  ui.console.hidden = false;
  ui.logout.hidden = false;
  ui.who.hidden = false;
  ui.who.textContent = state.agent.name;
  ui.who.title = member
    ? `Signed in as ${member.name}, ${member.role === "admin" ? "an admin" : "a member"}${(member.teams || []).length ? ` of ${member.teams.join(", ")}` : ""}`
    : `Signed in as ${state.agent.name} (id ${state.agent.id})`;
  setStatus(`Signed in as ${state.agent.name}.`, "ok");
  connect();
  // The team's parts first (the list's filters depend on them); each hides itself when the hub lacks it.
  await Promise.all([loadTeam(), loadCannedReplies()]);
  renderTeamFilters();
  await listRefresh.now();
  const fromHash = decodeURIComponent(location.hash.slice(1));
  if (fromHash && !state.selectedId) select(fromHash);
}

export function signOut(reason) {
  disconnect();
  state.key = "";
  state.member = null;
  state.conversations = [];
  state.features = { me: false, members: false, teams: false, canned: false, notes: true };
  save("key", null);
  ui.key.value = "";
  showNameFields();
  ui.list.replaceChildren();
  ui.console.hidden = true;
  resetConversation();
  clearNotice();
  renderTeam();
  renderTeamFilters();
  ui.loginForm.hidden = false;
  ui.logout.hidden = true;
  ui.who.hidden = true;
  setConnection("offline", "Offline");
  setStatus(reason || "Signed out.", reason ? "error" : "info");
}

export function setUpSession() {
  whenUnauthorized(signOut);
  whenRefused(signOut);
  ui.key.addEventListener("input", showNameFields);
  ui.loginForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const key = ui.key.value.trim();
    if (!key) {
      setStatus("Enter the console key.", "error");
      ui.key.focus();
      return;
    }
    const agent = agentFromForm();
    if (!agent && !isMemberKey(key)) {
      setStatus("Enter your name: it is shown with your replies.", "error");
      ui.agentName.focus();
      return;
    }
    signIn(key, agent);
  });
  ui.logout.addEventListener("click", () => signOut());
}

/** At start: sign in again with what the browser kept, or show the form. */
export function resumeSession() {
  const savedAgent = load("agent", null);
  if (savedAgent && typeof savedAgent.id === "string" && typeof savedAgent.name === "string") {
    ui.agentId.value = savedAgent.id;
    ui.agentName.value = savedAgent.name;
  }
  const savedKey = load("key", "");
  if (typeof savedKey === "string") ui.key.value = savedKey;
  showNameFields();
  const knownAgent = agentFromForm();
  if (typeof savedKey === "string" && savedKey && (knownAgent || isMemberKey(savedKey))) {
    ui.loginForm.hidden = true;
    signIn(savedKey, knownAgent);
  } else {
    setStatus("Sign in with your key (and your name, with the shared console key).", "info");
  }
}
