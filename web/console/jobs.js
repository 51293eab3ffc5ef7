// The open conversation's jobs, above the timeline: status and latest progress, "Cancel job…" (asks first),
// and Approve / Refuse for a call that waits for the team.
import { act } from "./actions.js";
import { api, ApiError, asAgent } from "./api.js";
import { chip, compact, el, formatTime } from "./dom.js";
import { statusKind } from "./labels.js";
import { state, ui } from "./state.js";
import { setStatus } from "./status.js";

export function renderJobs(jobs) {
  ui.jobs.hidden = jobs.length === 0;
  ui.jobs.replaceChildren(...jobs.map(jobCard));
}

const rerender = () => renderJobs((state.timeline && state.timeline.jobs) || []);

function jobCard(job) {
  const latest = (job.progress || [])[(job.progress || []).length - 1];
  const result = job.result && typeof job.result === "object" ? job.result.message : undefined;
  const detail =
    job.status === "running"
      ? latest
        ? `${latest.text} · ${formatTime(latest.at, true)}`
        : job.message || "started"
      : job.error || result || job.message || "";
  const tool = job.tool.replace(/_/g, " ");
  return el("div", { class: "job", "data-id": job.id, "data-status": job.status }, [
    el("div", { class: "row" }, [
      el("span", { class: "job-tool", text: tool }),
      chip(job.status.replace(/_/g, " "), statusKind(job.status)),
      // A lost job ran again: which attempt this is, and which one replaced it.
      job.attempt > 1 ? chip(`attempt ${job.attempt}`, "plain", `a re-run of job ${job.rerunOf}`) : null,
      job.rerunAs ? chip("ran again", "warn", `as job ${job.rerunAs}`) : null,
    ]),
    el("div", { class: "job-detail", text: detail, title: detail }),
    el("div", {
      class: "job-time muted",
      text:
        `started ${formatTime(job.createdAt, true)}` +
        (job.endedAt ? ` · ended ${formatTime(job.endedAt, true)}` : ` · times out ${formatTime(job.timeoutAt)}`),
    }),
    job.status === "running" ? cancelControls(job, tool) : null,
    job.status === "awaiting_approval" && job.approval && job.approval.by === "team"
      ? approvalControls(job, tool)
      : null,
    job.status === "awaiting_approval" && job.approval && job.approval.by === "person"
      ? el("div", { class: "job-detail muted", text: "Waiting for the person to answer yes or no." })
      : null,
  ]);
}

/**
 * A call that waits for the team's yes: its backend has heard nothing yet. Approve makes the call; Refuse
 * ends it, and the agent tells the person it was not made.
 */
function approvalControls(job, tool) {
  const approve = el("button", { type: "button", class: "job-approve small", text: "Approve" });
  const refuse = el("button", { type: "button", class: "job-refuse small danger", text: "Refuse" });
  approve.disabled = state.busy;
  refuse.disabled = state.busy;
  approve.addEventListener("click", () => decideApproval(job, tool, "approve"));
  refuse.addEventListener("click", () => decideApproval(job, tool, "refuse"));
  return el("div", { class: "job-actions job-confirm", role: "group", "aria-label": `Approve ${tool}?` }, [
    el("p", {
      class: "job-confirm-text",
      text: `The agent wants to run ${tool} with ${compact(job.arguments, 300)}. Nothing is done before you approve.`,
    }),
    el("div", { class: "job-confirm-buttons" }, [approve, refuse]),
  ]);
}

function decideApproval(job, tool, decision) {
  act(decision === "approve" ? "Approve call" : "Refuse call", async () => {
    try {
      await api("POST", `/v1/jobs/${encodeURIComponent(job.id)}/approval`, asAgent({ decision }));
      setStatus(decision === "approve" ? `Approved ${tool}; it is starting.` : `Refused ${tool}.`, "ok");
    } catch (error) {
      if (error instanceof ApiError && error.code === "not_awaiting_approval") {
        setStatus(`${tool} is no longer waiting for approval.`, "info");
        return;
      }
      throw error;
    }
  });
}

/**
 * Cancelling is final (the backend is told to stop, a late result is refused, the agent tells the person),
 * so the first press only asks; the second, on a button that says what it does, cancels.
 */
function cancelControls(job, tool) {
  if (state.confirmingCancel !== job.id) {
    const button = el("button", {
      type: "button",
      class: "job-cancel small",
      text: "Cancel job…",
      "aria-label": `Cancel job ${tool}…`,
    });
    button.addEventListener("click", () => {
      state.confirmingCancel = job.id;
      rerender();
      const confirm = ui.jobs.querySelector(`.job[data-id="${CSS.escape(job.id)}"] .job-cancel-confirm`);
      if (confirm) confirm.focus();
    });
    return el("div", { class: "job-actions" }, [button]);
  }
  const yes = el("button", { type: "button", class: "job-cancel-confirm small danger", text: "Yes, cancel it" });
  const no = el("button", { type: "button", class: "job-cancel-keep small", text: "Keep running" });
  yes.disabled = state.busy;
  yes.addEventListener("click", () => cancelJob(job, tool));
  no.addEventListener("click", () => {
    state.confirmingCancel = null;
    rerender();
    const again = ui.jobs.querySelector(`.job[data-id="${CSS.escape(job.id)}"] .job-cancel`);
    if (again) again.focus();
  });
  return el("div", { class: "job-actions job-confirm", role: "group", "aria-label": `Cancel ${tool}?` }, [
    el("p", {
      class: "job-confirm-text",
      text:
        `Cancel ${tool}? The hub stops waiting for it and tells its backend to stop (when the tool says how); ` +
        "a result sent later is dropped, and the agent tells the person it was cancelled.",
    }),
    el("div", { class: "job-confirm-buttons" }, [yes, no]),
  ]);
}

function cancelJob(job, tool) {
  act("Cancel job", async () => {
    state.confirmingCancel = null;
    try {
      await api("POST", `/v1/jobs/${encodeURIComponent(job.id)}/cancel`, asAgent({}));
      setStatus(`Cancelled ${tool}.`, "ok");
    } catch (error) {
      if (error instanceof ApiError && error.code === "job_ended") {
        setStatus(`${tool} had already ended; nothing was cancelled.`, "info");
        return;
      }
      throw error;
    }
  });
}
