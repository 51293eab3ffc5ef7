// A real conversation's timeline as a conversation test (docs/testing-your-agent.md, "Recording a
// conversation"): the person's messages and what the tools' backends posted become steps, the agent's calls and
// replies become exact expectations the author then loosens. Only what a step needs is taken from the timeline:
// never the contact, the conversation's or a job's id, a token or a URL the hub minted.
import { isDeepStrictEqual } from "node:util";
import type { ConversationTimeline } from "../console/console-queries.js";
import type { MessageView } from "../conversations/timeline.js";
import type { JobView } from "../jobs/job-view.js";
import { mapResponse } from "../tools/map-response.js";

/** What the recorder knows of a tool file (from TOOLS_DIR): its `respond`, to tell what its backend posted. */
export interface RecordedTool {
  respond: Record<string, string>;
}

/** One written step, as the file holds it. */
type WrittenStep = Record<string, unknown> & { expect: Record<string, unknown>[] };

export interface Recording {
  /** The test, in the file's shape (test-file.ts). */
  test: { name: string; channel: string; tools: Record<string, Record<string, unknown>>; steps: WrittenStep[] };
  counts: {
    person: number;
    progress: number;
    results: number;
    failures: number;
    timeouts: number;
    calls: number;
    replies: number;
  };
  /** The fields that hold the person's words or what a tool returned, by kind, as paths in the test. */
  fields: { person: string[]; arguments: string[]; tools: string[]; replies: string[] };
  /** What could not be written as it happened, one sentence each. */
  notes: string[];
}

const WIDGET = new Set(["web", "ios", "android", "flutter"]);

/** A step's start in the timeline: a message of the person's, or a backend's progress, result, failure or time-out. */
type Start =
  | { kind: "person"; text: string }
  | { kind: "progress"; tool: string; text: string; notify: boolean }
  | { kind: "result"; tool: string; message: string | undefined; data: unknown }
  | { kind: "failure"; tool: string; message: string }
  | { kind: "timeout"; tool: string };

export function recordConversation(
  timeline: ConversationTimeline,
  tools: Map<string, RecordedTool>,
  name: string,
): Recording {
  const notes: string[] = [];
  const note = (sentence: string) => void (notes.includes(sentence) || notes.push(sentence));
  const jobs = new Map(timeline.jobs.map((job) => [job.id, job]));
  const channel = WIDGET.has(timeline.conversation.channel) ? timeline.conversation.channel : "web";
  if (channel !== timeline.conversation.channel)
    note(
      `the conversation is on ${timeline.conversation.channel}, which tests do not play yet: it is written for the web widget`,
    );
  if (timeline.messages.length >= 1000)
    note("the conversation has more than 1000 entries: only the first 1000 are written");

  // The entries in order, with the progress that made no entry of its own (not to be told) placed by its time.
  const entries: ({ message: MessageView } | { progress: JobView["progress"][number]; job: JobView })[] =
    timeline.messages.map((message) => ({ message }));
  for (const job of timeline.jobs)
    for (const progress of job.progress) {
      const told = timeline.messages.some(
        (m) => m.role === "progress" && m.jobId === job.id && m.text === progress.text && m.createdAt === progress.at,
      );
      if (told) continue;
      const at = entries.findIndex((entry) => "message" in entry && entry.message.createdAt > progress.at);
      entries.splice(at === -1 ? entries.length : at, 0, { progress, job });
    }

  const test: Recording["test"] = { name, channel, tools: {}, steps: [] };
  const counts: Recording["counts"] = {
    person: 0,
    progress: 0,
    results: 0,
    failures: 0,
    timeouts: 0,
    calls: 0,
    replies: 0,
  };
  const fields: Recording["fields"] = { person: [], arguments: [], tools: [], replies: [] };
  let current: { step: WrittenStep; calls: number; replies: string[]; skipped: boolean } | undefined;
  let before = 0;
  // Each job's start once: a call deduplicated onto a running job reached no backend.
  const started = new Set<string>();

  const close = () => {
    if (!current || current.skipped) return;
    const { step } = current;
    const at = `steps.${test.steps.length}`;
    if (current.calls === 0) step.expect.push({ no_tool: true });
    if (current.replies.length === 0) step.expect.push({ no_reply: true });
    else {
      fields.replies.push(`${at}.expect.${step.expect.length}.reply`);
      step.expect.push({ reply: current.replies.join("\n") });
      counts.replies += current.replies.length;
    }
    for (const key of Object.keys(step)) {
      if (key === "person") fields.person.push(`${at}.person`);
      else if (key === "progress") fields.tools.push(`${at}.progress.text`);
      else if (key === "result") fields.tools.push(`${at}.result`);
      else if (key === "failure") fields.tools.push(`${at}.failure.message`);
    }
    step.expect.forEach((expectation, index) => {
      if ("arguments" in expectation) fields.arguments.push(`${at}.expect.${index}.arguments`);
    });
    test.steps.push(step);
  };
  const open = (start: Start | undefined) => {
    close();
    if (!start) {
      current = { step: { expect: [] }, calls: 0, replies: [], skipped: true };
      return;
    }
    const step: WrittenStep =
      start.kind === "person"
        ? { person: start.text, expect: [] }
        : start.kind === "progress"
          ? { progress: { tool: start.tool, text: start.text, notify: start.notify }, expect: [] }
          : start.kind === "result"
            ? {
                result: {
                  tool: start.tool,
                  ...(start.message !== undefined ? { message: start.message } : {}),
                  ...(start.data !== undefined ? { data: start.data } : {}),
                },
                expect: [],
              }
            : start.kind === "failure"
              ? { failure: { tool: start.tool, message: start.message }, expect: [] }
              : { timeout: { tool: start.tool }, expect: [] };
    const key =
      start.kind === "person"
        ? "person"
        : start.kind === "result"
          ? "results"
          : start.kind === "failure"
            ? "failures"
            : start.kind === "timeout"
              ? "timeouts"
              : "progress";
    counts[key]++;
    current = { step, calls: 0, replies: [], skipped: false };
  };

  for (const entry of entries) {
    if ("progress" in entry) {
      open({ kind: "progress", tool: entry.job.tool, text: entry.progress.text, notify: entry.progress.notify });
      continue;
    }
    const { message } = entry;
    const job = message.jobId ? jobs.get(message.jobId) : undefined;
    switch (message.role) {
      case "user":
        if (message.text) open({ kind: "person", text: message.text });
        else {
          note(
            "a message of the person's with no text (a file, a location) is not a step yet: it and its answer are left out",
          );
          open(undefined);
        }
        if (message.attachments?.length) note("the person's files are not written: a step cannot send a file yet");
        break;
      case "progress":
        if (job) open({ kind: "progress", tool: job.tool, text: message.text ?? "", notify: true });
        break;
      case "tool_call": {
        const call = message.data as { tool?: unknown; arguments?: unknown } | null;
        if (!current || typeof call?.tool !== "string") break;
        current.calls++;
        counts.calls++;
        current.step.expect.push({ tool: call.tool, arguments: call.arguments ?? {} });
        if (job && !started.has(job.id)) {
          started.add(job.id);
          accepted(test, job);
        }
        if (job?.approval) note(`${call.tool} waited for an approval, which a step cannot give yet`);
        break;
      }
      case "tool_result":
        resultEntry(message, job, tools, { open, note, test, current: () => current });
        break;
      case "agent":
        if (!current) {
          before++;
          break;
        }
        current.replies.push(message.text ?? "");
        if (message.attachments?.length || message.buttons?.length)
          note("the agent's files and buttons are not checked: only its text is");
        break;
      case "human":
        note("the messages of your team (a take-over) are not written: a step cannot play them yet");
        break;
      default:
        break;
    }
  }
  close();
  collapseAccepted(test);
  for (const [tool, answers] of Object.entries(test.tools))
    for (const key of Object.keys(answers)) fields.tools.unshift(`tools.${tool}.${key}`);
  if (before > 0)
    note(`${before} message(s) sent before the person's first message are not written (no step makes them)`);
  if (timeline.conversation.handoff)
    note("the agent's hand-off is not checked: write `handoff: true` under the step that asked for a person");
  return { test, counts, fields, notes };
}

/** The 202 messages of a tool's async calls, in order ("" for none): its stand-in answers the nth start with the nth. */
function accepted(test: Recording["test"], job: JobView): void {
  const tool = (test.tools[job.tool] ??= {});
  tool.accepted = [...((tool.accepted as string[] | undefined) ?? []), job.message ?? ""];
}

/** One message when the calls were all accepted with it; else the list, without the repeats of its last. */
function collapseAccepted(test: Recording["test"]): void {
  for (const [name, tool] of Object.entries(test.tools)) {
    const list = tool.accepted as string[] | undefined;
    if (!list) continue;
    while (list.length > 1 && list.at(-1) === list.at(-2)) list.pop();
    if (list.length === 1 && list[0] === "") delete tool.accepted;
    else tool.accepted = list.length === 1 ? list[0] : list;
    if (Object.keys(tool).length === 0) delete test.tools[name];
  }
}

function resultEntry(
  message: MessageView,
  job: JobView | undefined,
  tools: Map<string, RecordedTool>,
  at: {
    open: (start: Start | undefined) => void;
    note: (sentence: string) => void;
    test: Recording["test"];
    current: () => { step: WrittenStep } | undefined;
  },
): void {
  const data = (message.data ?? {}) as { outcome?: unknown; result?: unknown; reason?: unknown };
  const result = data.result as { message?: unknown; data?: unknown } | null | undefined;
  // Null status: the answer of the call itself (a normal tool, or an async one answered at once), part of its step.
  if (!job || message.status === null) {
    const tool = job?.tool ?? lastCalledTool(at.current());
    if (!tool) return;
    if (job) {
      at.note(`${tool}'s backend answered at once instead of accepting the job: its stand-in accepts it`);
      return;
    }
    if (data.outcome !== "succeeded" || !result) {
      at.note(`a failed call of ${tool} is not written: its stand-in answers 501 (no answer recorded)`);
      return;
    }
    const body = backendBody(tools.get(tool)?.respond, result);
    if (!body) at.note(`${tool}'s answer could not be turned back into its backend's body (its respond): check it`);
    const entry = (at.test.tools[tool] ??= {});
    if (entry.answer === undefined) entry.answer = body ?? result;
    else if (!isDeepStrictEqual(entry.answer, body ?? result))
      at.note(
        `${tool} answered differently from one call to the next: the first answer is written (a test has one per tool)`,
      );
    return;
  }
  if (data.outcome === "succeeded") {
    const known = tools.get(job.tool);
    const fits =
      result &&
      (!known ||
        isDeepStrictEqual(
          plain(mapResponse(known.respond, { result: "ok", message: result.message, data: result.data })),
          plain(result),
        ));
    if (!known)
      at.note(`there is no tool file for ${job.tool} in TOOLS_DIR: its result is written as the hub stored it`);
    else if (!fits)
      at.note(
        `${job.tool}'s result is written as the hub stored it, which its respond maps differently: check the step`,
      );
    at.open({
      kind: "result",
      tool: job.tool,
      message: typeof result?.message === "string" ? result.message : undefined,
      data: result?.data,
    });
  } else if (data.outcome === "failed") at.open({ kind: "failure", tool: job.tool, message: message.text ?? "failed" });
  else if (data.outcome === "timed_out") at.open({ kind: "timeout", tool: job.tool });
  else if (data.outcome === "cancelled") {
    const step = at.current();
    if (step) step.step.expect.push({ cancelled: job.tool });
  } else at.note(`an outcome of ${job.tool} (${String(data.outcome)}) is not a step yet: it is left out`);
}

function lastCalledTool(current: { step: WrittenStep } | undefined): string | undefined {
  const calls = current?.step.expect.filter((each) => typeof each.tool === "string") ?? [];
  return calls.at(-1)?.tool as string | undefined;
}

/**
 * A normal tool's answer as its backend's body: each mapped value put back where `respond` takes it from. Only
 * plain paths (`$.a.b`) go back; the body must map to the stored answer again, else there is none.
 */
export function backendBody(
  respond: Record<string, string> | undefined,
  stored: { message?: unknown; data?: unknown },
): Record<string, unknown> | undefined {
  const body: Record<string, unknown> = {};
  if (typeof stored.message === "string") body.message = stored.message;
  const keys = Object.entries(respond ?? {});
  if (keys.length === 0) body.data = stored.data;
  const data = (stored.data ?? {}) as Record<string, unknown>;
  for (const [key, path] of keys) {
    const segments = /^\$(\.[A-Za-z_][A-Za-z0-9_]*)+$/.test(path) ? path.slice(2).split(".") : undefined;
    if (!segments) return undefined;
    let at = body;
    for (const segment of segments.slice(0, -1)) {
      const next = at[segment];
      at = (at[segment] = next && typeof next === "object" ? next : {}) as Record<string, unknown>;
    }
    at[segments.at(-1)!] = data[key] ?? null;
  }
  return isDeepStrictEqual(plain(mapResponse(respond ?? {}, body)), plain(stored)) ? body : undefined;
}

/** As JSON has it: no `undefined` keys. */
function plain(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}
