// Times that move: a response clock ("First response due in 4 min", "Late by 2 min"), the wait in a team's
// queue ("In queue 3 min") and how long items have been held ("held for 12 min"). Each chip carries its times
// in data- attributes, and one timer rewrites their words every few seconds without re-reading anything.
import { duration, el, formatTime } from "./dom.js";

const TICK_MS = 15_000;

/** The words of a ticking chip, from its data- attributes and the time now. */
function words(node, now) {
  const data = node.dataset;
  if (data.tick === "queue") return `In queue ${duration(now - Date.parse(data.since))}`;
  if (data.tick === "held") return `held for ${duration(now - Date.parse(data.since))}`;
  // A response clock: late once breached (or past due, before the hub's own check marks it).
  const due = Date.parse(data.due);
  const late = data.breached ? Math.max(now - Date.parse(data.breached), now - due) : now - due;
  const what = data.kind === "first" ? "First response" : "Next response";
  return late >= 0 ? `Late by ${duration(late)}` : `${what} due in ${duration(due - now)}`;
}

function render(node, now) {
  node.textContent = words(node, now);
  if (node.dataset.tick === "clock") {
    const late = node.textContent.startsWith("Late");
    node.className = `chip clock ${late ? "chip-bad clock-late" : "chip-clock"}`;
    node.setAttribute("data-late", late ? "true" : "false");
  }
}

function ticking(attributes, title) {
  const node = el("span", { class: "chip chip-plain", title, ...attributes });
  render(node, Date.now());
  return node;
}

/** The conversation's response clock, or null when nothing is owed. */
export function clockChip(clock) {
  if (!clock || !clock.dueAt) return null;
  const what = clock.kind === "first" ? "a first response" : "the next response";
  return ticking(
    {
      "data-tick": "clock",
      "data-kind": clock.kind,
      "data-due": clock.dueAt,
      "data-breached": clock.breachedAt || undefined,
    },
    `The team owes the person ${what} by ${formatTime(clock.dueAt)}`,
  );
}

/** Waiting in its team's queue with nobody on it, since `queuedAt`. */
export function queueChip(queuedAt) {
  if (!queuedAt) return null;
  const node = ticking(
    { "data-tick": "queue", "data-since": queuedAt },
    `In the team's queue since ${formatTime(queuedAt)}`,
  );
  node.classList.replace("chip-plain", "chip-waiting");
  return node;
}

/** Items held from the person since the oldest one's time. */
export function heldSinceChip(heldSince) {
  if (!heldSince) return null;
  const node = ticking(
    { "data-tick": "held", "data-since": heldSince },
    `The oldest held item is from ${formatTime(heldSince)}`,
  );
  node.classList.replace("chip-plain", "chip-held");
  return node;
}

/** The team is closed: the conversation stays with the agent until it opens. */
export function closedChip(opensAt) {
  if (!opensAt) return null;
  return el("span", {
    class: "chip chip-warn team-closed",
    text: `Team closed until ${formatTime(opensAt)}`,
    title: "The agent keeps the conversation until the team opens",
  });
}

/** Rewrites every ticking chip's words now and every few seconds. */
export function startTicking() {
  const tick = () => {
    const now = Date.now();
    for (const node of document.querySelectorAll("[data-tick]")) render(node, now);
  };
  tick();
  return setInterval(tick, TICK_MS);
}
