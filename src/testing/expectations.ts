// One expectation of a conversation test, checked on what one step produced; a failure says what the agent
// did instead, as `- expected` and `+ actual` lines.
import { isDeepStrictEqual } from "node:util";
import { Ajv } from "ajv";
import type { Expectation } from "./test-file.js";

/** What a step produced in the conversation's timeline. */
export interface StepOutput {
  /** The agent's messages, in order. */
  replies: string[];
  /** The tool calls the agent made. */
  calls: { tool: string; arguments: Record<string, unknown> }[];
  /** Whether the agent asked for a person during the step. */
  handedOff: boolean;
  /** The tools of the calls cancelled during the step. */
  cancelled: string[];
  /** The names of the templates sent during the step. */
  templates: string[];
  /** The router's decisions during the step: each message routed (or routed again), with its role. */
  routes: { role: string; decision: string }[];
}

const ajv = new Ajv({ allErrors: true, strict: false });

export function checkExpectation(
  expectation: Expectation,
  output: StepOutput,
): { expectation: string; passed: boolean; diff?: string } {
  // A reply of several lines stays one item of the diff: its next lines are indented under it.
  const item = (sign: "-" | "+", text: string) => `${sign} ${text.replace(/\n/g, "\n  ")}`;
  const said = output.replies.length > 0 ? output.replies.map((reply) => item("+", reply)).join("\n") : "+ (no reply)";
  const called =
    output.calls.length > 0
      ? output.calls.map((call) => item("+", `${call.tool} ${JSON.stringify(call.arguments)}`)).join("\n")
      : "+ (no tool called)";
  const reply = output.replies.join("\n");
  const outcome = (name: string, passed: boolean, diff: string) =>
    passed ? { expectation: name, passed } : { expectation: name, passed, diff };

  if ("tool" in expectation) {
    const { tool, arguments: exact, arguments_schema: schema } = expectation;
    const validate = schema ? ajv.compile(schema) : undefined;
    const fits = (call: StepOutput["calls"][number]) =>
      call.tool === tool &&
      (exact === undefined || isDeepStrictEqual(call.arguments, exact)) &&
      (validate === undefined || validate(call.arguments) === true);
    const wanted = exact ? ` ${JSON.stringify(exact)}` : schema ? ` fitting ${JSON.stringify(schema)}` : "";
    return outcome(`calls ${tool}${wanted}`, output.calls.some(fits), `- ${tool}${wanted}\n${called}`);
  }
  if ("no_tool" in expectation)
    return outcome("calls no tool", output.calls.length === 0, `- (no tool called)\n${called}`);
  if ("reply" in expectation)
    return outcome(
      `replies "${expectation.reply}"`,
      reply === expectation.reply,
      `${item("-", expectation.reply)}\n${said}`,
    );
  if ("reply_contains" in expectation)
    return outcome(
      `reply contains "${expectation.reply_contains}"`,
      reply.includes(expectation.reply_contains),
      `- …${expectation.reply_contains}…\n${said}`,
    );
  if ("reply_not_contains" in expectation)
    return outcome(
      `reply does not contain "${expectation.reply_not_contains}"`,
      !reply.includes(expectation.reply_not_contains),
      `- (without "${expectation.reply_not_contains}")\n${said}`,
    );
  if ("reply_matches" in expectation) {
    const pattern = new RegExp(expectation.reply_matches, "u");
    return outcome(
      `reply matches /${expectation.reply_matches}/`,
      output.replies.some((each) => pattern.test(each)) || pattern.test(reply),
      `- /${expectation.reply_matches}/\n${said}`,
    );
  }
  if ("no_reply" in expectation) return outcome("no reply", output.replies.length === 0, `- (no reply)\n${said}`);
  if ("handoff" in expectation)
    return outcome("asks for a person", output.handedOff, "- a hand-off to a person\n+ (no hand-off)");
  if ("template" in expectation)
    return outcome(
      `sends template ${expectation.template}`,
      output.templates.includes(expectation.template),
      `- template ${expectation.template}\n${output.templates.map((name) => `+ template ${name}`).join("\n") || "+ (no template sent)"}`,
    );
  if ("route" in expectation) {
    const routed = output.routes.map((each) => `+ ${each.role}: ${each.decision}`).join("\n") || "+ (nothing routed)";
    return outcome(
      `routed ${expectation.route}`,
      output.routes.some((each) => each.decision === expectation.route),
      `- ${expectation.route}\n${routed}`,
    );
  }
  return outcome(
    `cancels ${expectation.cancelled}`,
    output.cancelled.includes(expectation.cancelled),
    `- ${expectation.cancelled} cancelled\n${output.cancelled.length > 0 ? output.cancelled.map((t) => `+ ${t} cancelled`).join("\n") : "+ (nothing cancelled)"}`,
  );
}
