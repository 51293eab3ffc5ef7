// The top bar's words: the last action's outcome (role=status), the live connection, and notices meant for
// this member (an assignment), announced by screen readers as they appear.
import { el } from "./dom.js";
import { ui } from "./state.js";

/** Status line: the last action's outcome or the last error, kept until the next one. */
export function setStatus(text, kind) {
  ui.status.textContent = text || "";
  ui.status.setAttribute("data-kind", kind || "info");
}

export function setConnection(stateName, text) {
  ui.connection.setAttribute("data-state", stateName);
  ui.connection.textContent = text;
}

/** A notice for this member ("Assigned to you: Ana"), with an optional action; it stays until dismissed. */
export function notify(text, action) {
  const dismiss = el("button", { type: "button", class: "link notice-dismiss", text: "Dismiss" });
  dismiss.addEventListener("click", () => clearNotice());
  const children = [el("span", { class: "notice-text", text })];
  if (action) {
    const button = el("button", { type: "button", class: "small notice-action", text: action.label });
    button.addEventListener("click", () => {
      clearNotice();
      action.run();
    });
    children.push(button);
  }
  children.push(dismiss);
  // The region is always in the page (empty when quiet): a live region must exist before it speaks.
  ui.notice.replaceChildren(...children);
}

export function clearNotice() {
  ui.notice.replaceChildren();
}
