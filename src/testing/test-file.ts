// A conversation test file (docs/testing-your-agent.md): YAML, validated here so that a mistake names the
// file, the test and the field.
import { readFile } from "node:fs/promises";
import { parse } from "yaml";
import { z } from "zod";
import { parseSpan } from "../tools/duration.js";

const text = z.string().min(1);

/** What is expected after a step; each item is one expectation, checked on what the step produced. */
export const expectationSchema = z.union([
  z.strictObject({
    tool: text,
    // Exactly these arguments, or arguments that fit this JSON Schema.
    arguments: z.record(z.string(), z.unknown()).optional(),
    arguments_schema: z.record(z.string(), z.unknown()).optional(),
  }),
  z.strictObject({ no_tool: z.literal(true) }),
  z.strictObject({ reply: z.string() }),
  z.strictObject({ reply_contains: text }),
  z.strictObject({ reply_not_contains: text }),
  z.strictObject({
    reply_matches: text.refine((pattern) => {
      try {
        new RegExp(pattern, "u");
        return true;
      } catch {
        return false;
      }
    }, "is not a valid regular expression (JavaScript syntax)"),
  }),
  z.strictObject({ no_reply: z.literal(true) }),
  z.strictObject({ handoff: z.literal(true) }),
  z.strictObject({ cancelled: text }),
  // A WhatsApp template the hub sent (its name): what reaches a person whose 24-hour window has closed.
  z.strictObject({ template: text }),
  // The router's decision on what the step routed: a reply, a template, a result's entry (held, expired).
  z.strictObject({
    route: z.enum(["live", "stored", "sent", "template", "held", "awaiting_reply", "failed", "expired"]),
  }),
]);
export type Expectation = z.infer<typeof expectationSchema>;

const expect = z.array(expectationSchema).default([]);

/** How long passes on the hub's clock before the step (`25h`, `90m`, `2d`): no real waiting. */
const after = z
  .string()
  .transform((value, issue) => {
    const parsed = parseSpan(value);
    if ("ms" in parsed) return parsed.ms;
    issue.addIssue({ code: "custom", message: parsed.error });
    return z.NEVER;
  })
  .optional();
const stepBase = { after, expect };

/**
 * One step: the person writes, a running call's backend posts its result, a failure or progress, a human
 * takes the conversation over or hands it back, or only time passes.
 */
export const stepSchema = z.union([
  z.strictObject({ person: text, ...stepBase }),
  z.strictObject({
    result: z.strictObject({ tool: text, message: z.string().optional(), data: z.unknown().optional() }),
    ...stepBase,
  }),
  z.strictObject({ failure: z.strictObject({ tool: text, message: text }), ...stepBase }),
  z.strictObject({
    progress: z.strictObject({ tool: text, text, notify: z.boolean().default(false) }),
    ...stepBase,
  }),
  // The call's time runs out now, whatever its `async.timeout` says.
  z.strictObject({ timeout: z.strictObject({ tool: text }), ...stepBase }),
  z.strictObject({ takeover: z.literal(true), ...stepBase }),
  z.strictObject({ handback: z.literal(true), ...stepBase }),
  z.strictObject({ after: after.unwrap(), expect }),
]);
export type Step = z.infer<typeof stepSchema>;

/** What a tool's stand-in answers when the hub starts a call: async tools 202, normal tools their recorded answer. */
const recordedAnswerSchema = z.strictObject({
  // An async tool: the message of its 202 (what the agent is told about the job that started); a list gives each
  // start of the test its own, in order (the last for any start after).
  accepted: z.union([z.string(), z.array(z.string()).min(1)]).optional(),
  // A normal (synchronous) tool: the body its backend answers with.
  answer: z.unknown().optional(),
});
export type RecordedAnswer = z.infer<typeof recordedAnswerSchema>;

export const conversationTestSchema = z.strictObject({
  name: text,
  // The widget channels and WhatsApp (on a stand-in of Meta's Graph API); not yet Instagram or Messenger.
  channel: z.enum(["web", "ios", "android", "flutter", "whatsapp"]).default("web"),
  tools: z.record(z.string(), recordedAnswerSchema).default({}),
  steps: z.array(stepSchema).min(1),
});
export type ConversationTest = z.infer<typeof conversationTestSchema>;

export const testFileSchema = z.strictObject({ tests: z.array(conversationTestSchema).min(1) });

export interface TestFile {
  path: string;
  tests: ConversationTest[];
}

export class TestFileError extends Error {}

/** Reads and validates one file; a problem is thrown as one sentence per field (file, test, field). */
export async function readTestFile(path: string): Promise<TestFile> {
  let source: unknown;
  try {
    source = parse(await readFile(path, "utf8"));
  } catch (error) {
    throw new TestFileError(`${path}: ${(error as Error).message}`);
  }
  const parsed = testFileSchema.safeParse(source);
  if (parsed.success) return { path, tests: parsed.data.tests };
  const named = (issuePath: PropertyKey[]) => {
    const [key, index, ...rest] = issuePath;
    const tests = (source as { tests?: { name?: unknown }[] } | null)?.tests;
    const name = key === "tests" && typeof index === "number" ? tests?.[index]?.name : undefined;
    const where = typeof name === "string" ? `test "${name}"` : issuePath.slice(0, 2).join(".");
    const field = (typeof name === "string" ? rest : issuePath.slice(2)).join(".");
    return `${where}${field ? `, ${field}` : ""}`;
  };
  throw new TestFileError(
    parsed.error.issues.map((issue) => `${path}: ${named(issue.path)}: ${issue.message}`).join("\n"),
  );
}

/** The step's kind, as the report names it. */
export function stepLabel(step: Step): string {
  const label = kindLabel(step);
  return step.after === undefined ? label : `after ${formatSpan(step.after)}, ${label}`;
}

function formatSpan(ms: number): string {
  for (const [unit, size] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
  ] as const)
    if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms / 1000}s`;
}

function kindLabel(step: Step): string {
  if ("person" in step) return `person: ${step.person}`;
  if ("result" in step) return `result of ${step.result.tool}`;
  if ("failure" in step) return `failure of ${step.failure.tool}`;
  if ("progress" in step) return `progress of ${step.progress.tool}: ${step.progress.text}`;
  if ("timeout" in step) return `time-out of ${step.timeout.tool}`;
  if ("takeover" in step) return "a human takes over";
  if ("handback" in step) return "the human hands back";
  return "time passes";
}
