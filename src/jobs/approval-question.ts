// What the person is asked before a call that needs their approval is made (approval.ts).
import type { Button } from "../conversations/attachments.js";
import { plainText, quotedData } from "../data-text.js";
import type { Tool } from "../tools/tool-file.js";

/** What the question may hold: room for the tool's words and its arguments within any channel's one message. */
const QUESTION_MAX = 900;

/** The payloads of the question's two buttons: the job's own, so a tap answers this call and no other. */
export const approvalPayload = (jobId: string, answer: "yes" | "no") => `approval:${jobId}:${answer}`;

/**
 * What the person is asked: the tool's `approval_text` (else its description) in plain words, then the
 * arguments as data — each value JSON-quoted on its own line, cleaned of control characters (data-text.ts) —
 * never as words of the hub. Buttons answer it; where a channel cannot show them, the numbered lines can be
 * answered with yes or no.
 */
export function approvalQuestion(tool: Tool, args: Record<string, unknown>, jobId: string) {
  const what = plainText(tool.approval?.text ?? tool.description);
  const lines = Object.entries(args).map(
    ([key, value]) => `• ${plainText(key)}: ${typeof value === "string" ? quotedData(value) : JSON.stringify(value)}`,
  );
  let details = lines.join("\n");
  const room = QUESTION_MAX - what.length - 60;
  if (details.length > room) details = `${details.slice(0, Math.max(0, room - 1))}…`;
  const text = [`May I go ahead? ${what}`, details, "Answer yes or no."].filter(Boolean).join("\n\n");
  const buttons: Button[] = [
    { title: "Yes", payload: approvalPayload(jobId, "yes") },
    { title: "No", payload: approvalPayload(jobId, "no") },
  ];
  return { text, buttons };
}
