// `hub test record [--conversation <id>] --out <file|-> [--force] [--redact] [--name "…"]`: writes a real
// conversation (default: your `hub chat`) as a conversation test file, and says on stderr what it wrote and
// which fields hold the person's words or what the tools returned, for the author to review before committing it.
import { readdir, readFile, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { Document, parse, parseDocument } from "yaml";
import { configuredToolsDir, loadConfig } from "../config.js";
import { recordConversation, type RecordedTool, type Recording } from "../testing/record-conversation.js";
import { personalDetails, replacer, rewriteStrings } from "../testing/redact.js";
import { testFileSchema } from "../testing/test-file.js";
import { currentChat } from "./chat.js";
import { readTimeline } from "./read-timeline.js";
import { terminalText } from "./terminal-text.js";

export async function hubTestRecord(
  args: string[],
  out: (text: string) => void,
  err: (line: string) => void,
): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        conversation: { type: "string" },
        out: { type: "string" },
        force: { type: "boolean", default: false },
        redact: { type: "boolean", default: false },
        name: { type: "string" },
      },
    }));
  } catch (error) {
    err(`hub: ${(error as Error).message}`);
    return 2;
  }
  const fail = (sentence: string) => (err(`hub: ${terminalText(sentence)}`), 1);
  const file = values.out;
  if (!file) return fail("give the file to write with --out <file> (or --out - for the standard output)");
  if (file !== "-" && existsSync(file) && !values.force)
    return fail(`${file} exists: nothing was written (--force replaces it)`);
  const name = values.name?.trim() || `recorded on ${new Date().toISOString().slice(0, 10)}`;
  const config = loadConfig();
  const id = values.conversation ?? currentChat(config);
  if (!id) return fail('no chat yet: start one with hub chat "hello", or give --conversation <id>');
  const { timeline } = await readTimeline(config, id);
  if (!timeline) return fail(`no conversation ${id}`);

  const recording = recordConversation(timeline, await readTools(configuredToolsDir()), name);
  // The hub's identifiers never reach the file, wherever a text or a result quoted them.
  const identifiers = new Map<string, string>();
  for (const each of [timeline.conversation.id, timeline.conversation.contact]) identifiers.set(each, "(removed)");
  for (const job of timeline.jobs) {
    identifiers.set(job.id, "(removed)");
    if (job.toolCallId) identifiers.set(job.toolCallId, "(removed)");
  }
  let test = rewriteStrings(recording.test, replacer(identifiers));
  if (JSON.stringify(test) !== JSON.stringify(recording.test))
    recording.notes.push("a text quoted the conversation's contact or id, or a job's id: it is written as (removed)");
  let redacted = { emails: 0, phones: 0 };
  if (values.redact) {
    const texts = recording.test.steps.flatMap((step) => (typeof step.person === "string" ? [step.person] : []));
    const found = personalDetails(texts);
    redacted = found;
    test = rewriteStrings(test, replacer(found.placeholders));
  }

  const document = new Document({ tests: [test] });
  document.commentBefore = [
    ` Recorded by \`hub test record\`: a real conversation. Review every text before you commit it (the`,
    ` person's messages, the tool arguments and results), and loosen the exact replies (reply_contains, …).`,
  ].join("\n");
  const text = document.toString({ lineWidth: 0 });
  // The file is written in the runner's format: a recording it would refuse is a defect here, not the author's.
  const check = testFileSchema.safeParse(parse(text));
  if (!check.success) throw new Error(`the recorded file does not parse: ${check.error.message}`);
  if (file === "-") out(text);
  else
    try {
      await writeFile(file, text, { flag: values.force ? "w" : "wx", mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST")
        return fail(`${file} exists: nothing was written (--force replaces it)`);
      throw error;
    }
  for (const line of summary(file === "-" ? "the standard output" : file, recording, values.redact, redacted))
    err(terminalText(line));
  return 0;
}

function summary(
  where: string,
  { test, counts, fields, notes }: Recording,
  redact: boolean,
  redacted: { emails: number; phones: number },
): string[] {
  const n = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;
  const kinds = [
    n(counts.person, "person message"),
    ...(counts.progress ? [n(counts.progress, "progress", "progress")] : []),
    n(counts.results, "result"),
    ...(counts.failures ? [n(counts.failures, "failure")] : []),
    ...(counts.timeouts ? [n(counts.timeouts, "time-out")] : []),
    n(counts.calls, "tool call"),
    n(counts.replies, "reply", "replies"),
  ];
  const list = (label: string, paths: string[]) => (paths.length ? [`  ${label}: ${paths.join(", ")}`] : []);
  return [
    `hub: wrote ${where}: 1 test of ${n(test.steps.length, "step")}: ${kinds.join(", ")}`,
    "hub: review it before you commit it; these fields of the test hold the person's words or what the tools returned:",
    ...list("the person's messages", fields.person),
    ...list("tool arguments", fields.arguments),
    ...list("what the tools returned", fields.tools),
    ...list("the agent's replies (exact: loosen them)", fields.replies),
    redact
      ? `hub: --redact replaced ${n(redacted.emails, "e-mail address", "e-mail addresses")} and ${n(redacted.phones, "phone number")} the person wrote`
      : "hub: e-mail addresses and phone numbers are written as the person wrote them (--redact replaces them)",
    "hub: not written: the contact, the conversation's and the jobs' ids, tokens and callback URLs",
    ...notes.map((each) => `hub: note: ${each}`),
  ];
}

/** What the recorder needs of each tool file: its `respond` (read as written, not checked). */
async function readTools(dir: string): Promise<Map<string, RecordedTool>> {
  const tools = new Map<string, RecordedTool>();
  let files: string[];
  try {
    files = (await readdir(dir)).filter((file) => /\.ya?ml$/.test(file));
  } catch {
    return tools;
  }
  for (const file of files) {
    try {
      const document = parseDocument(await readFile(path.join(dir, file), "utf8")).toJS() as {
        respond?: { data?: Record<string, unknown> };
      } | null;
      // `respond.data.NAME: "$.path"`: what the hub maps each result with.
      const respond: Record<string, string> = {};
      for (const [key, value] of Object.entries(document?.respond?.data ?? {}))
        if (typeof value === "string") respond[key] = value;
      tools.set(file.replace(/\.ya?ml$/, ""), { respond });
    } catch {
      // A file the hub would refuse: its results are written as stored.
    }
  }
  return tools;
}
