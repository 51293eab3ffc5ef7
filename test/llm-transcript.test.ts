// What the LLM agent sends the model, rebuilt from the timeline (src/agent/llm/transcript.ts), as a table:
// one tool message right after every call, a placeholder for a job, each late outcome once as a notice where it
// came (after the model's own status read, and then not repeated), progress as a notice, and a cut that drops
// whole exchanges and still opens with the person's side.
import type { ModelMessage } from "ai";
import { describe, expect, it } from "vitest";
import { buildTranscript, NOTICE_HEADING, placeholder, type TranscriptEntry } from "../src/agent/llm/transcript.js";

const JOB = "0b7e2d9c-3f1a-4c55-9d6e-1a2b3c4d5e6f";
const user = (seq: number, text: string): TranscriptEntry => ({ kind: "user", seq, text });
const agent = (seq: number, text: string): TranscriptEntry => ({ kind: "agent", seq, text });
const jobCall = (seq: number, callId = "call_1"): TranscriptEntry => ({
  kind: "call",
  seq,
  callId,
  tool: "match_therapists",
  args: { reason: "anxiety", area: "Ñuñoa" },
  answer: { type: "job", jobId: JOB, acceptMessage: "Looking for therapists" },
});
const completed = (seq: number, callId = "call_1"): TranscriptEntry => ({
  kind: "outcome",
  seq,
  callId,
  tool: "match_therapists",
  outcome: "completed",
  content: { message: "2 found", data: { therapists: ["Ana Rojas", "Pedro Soto"] } },
});
const statusRead = (seq: number, status: string): TranscriptEntry => ({
  kind: "call",
  seq,
  callId: `status_${seq}`,
  tool: "get-tool-call-status",
  args: { tool_call_id: "call_1" },
  answer: { type: "answer", ok: true, content: { tool_call_id: "call_1", status } },
});

const callPair = (callId: string, tool: string, input: unknown, output: unknown): ModelMessage[] => [
  { role: "assistant", content: [{ type: "tool-call", toolCallId: callId, toolName: tool, input }] },
  { role: "tool", content: [{ type: "tool-result", toolCallId: callId, toolName: tool, output: output as never }] },
];

const BIG = { contextChars: 1_000_000 };

describe("the transcript the LLM agent sends", () => {
  const cases: { name: string; entries: TranscriptEntry[]; expected: ModelMessage[]; contextChars?: number }[] = [
    {
      name: "a job's call is followed at once by its placeholder",
      entries: [user(1, "I've been having a lot of anxiety lately, I live in Ñuñoa"), jobCall(2), agent(3, "On it.")],
      expected: [
        { role: "user", content: "I've been having a lot of anxiety lately, I live in Ñuñoa" },
        ...callPair(
          "call_1",
          "match_therapists",
          { reason: "anxiety", area: "Ñuñoa" },
          {
            type: "json",
            value: placeholder(JOB, "Looking for therapists"),
          },
        ),
        { role: "assistant", content: "On it." },
      ],
    },
    {
      name: "a late result is a notice where it came, and stays in later turns as the tool's answer",
      entries: [
        user(1, "hi"),
        jobCall(2),
        agent(3, "On it."),
        completed(4),
        agent(5, "Two found."),
        user(6, "the second?"),
      ],
      expected: [
        { role: "user", content: "hi" },
        ...callPair(
          "call_1",
          "match_therapists",
          { reason: "anxiety", area: "Ñuñoa" },
          {
            type: "json",
            value: placeholder(JOB, "Looking for therapists"),
          },
        ),
        { role: "assistant", content: "On it." },
        {
          role: "user",
          content: `${NOTICE_HEADING}\n\ntool_call_id call_1 (match_therapists) completed: {"message":"2 found","data":{"therapists":["Ana Rojas","Pedro Soto"]}}`,
        },
        { role: "assistant", content: "Two found." },
        { role: "user", content: "the second?" },
      ],
    },
    {
      name: "a result the model read with get-tool-call-status comes after the read, not repeated",
      entries: [
        user(1, "hi"),
        jobCall(2),
        agent(3, "On it."),
        user(4, "how's it going?"),
        completed(5),
        statusRead(6, "completed"),
      ],
      expected: [
        { role: "user", content: "hi" },
        ...callPair(
          "call_1",
          "match_therapists",
          { reason: "anxiety", area: "Ñuñoa" },
          {
            type: "json",
            value: placeholder(JOB, "Looking for therapists"),
          },
        ),
        { role: "assistant", content: "On it." },
        { role: "user", content: "how's it going?" },
        ...callPair(
          "status_6",
          "get-tool-call-status",
          { tool_call_id: "call_1" },
          {
            type: "json",
            value: { tool_call_id: "call_1", status: "completed" },
          },
        ),
        {
          role: "user",
          content: `${NOTICE_HEADING}\n\ntool_call_id call_1 (match_therapists) completed: result already read with get-tool-call-status`,
        },
      ],
    },
    {
      name: "a status read while the job still ran does not count as reading its result",
      entries: [jobCall(1), statusRead(2, "running"), completed(3)],
      expected: [
        { role: "user", content: "(The conversation opens with the assistant's message below.)" },
        ...callPair(
          "call_1",
          "match_therapists",
          { reason: "anxiety", area: "Ñuñoa" },
          {
            type: "json",
            value: placeholder(JOB, "Looking for therapists"),
          },
        ),
        ...callPair(
          "status_2",
          "get-tool-call-status",
          { tool_call_id: "call_1" },
          {
            type: "json",
            value: { tool_call_id: "call_1", status: "running" },
          },
        ),
        {
          role: "user",
          content: `${NOTICE_HEADING}\n\ntool_call_id call_1 (match_therapists) completed: {"message":"2 found","data":{"therapists":["Ana Rojas","Pedro Soto"]}}`,
        },
      ],
    },
    {
      name: "failures, timeouts, cancels and progress are notices; the person's words follow them in one message",
      entries: [
        jobCall(1, "call_a"),
        jobCall(2, "call_b"),
        { kind: "progress", seq: 3, callId: "call_a", tool: "match_therapists", text: "Reviewing 12 therapists" },
        { kind: "outcome", seq: 4, callId: "call_b", tool: "match_therapists", outcome: "timed out", content: null },
        { kind: "outcome", seq: 5, callId: "call_a", tool: "match_therapists", outcome: "failed", content: "no slots" },
        user(6, "and now?"),
      ],
      expected: [
        { role: "user", content: "(The conversation opens with the assistant's message below.)" },
        ...callPair(
          "call_a",
          "match_therapists",
          { reason: "anxiety", area: "Ñuñoa" },
          {
            type: "json",
            value: placeholder(JOB, "Looking for therapists"),
          },
        ),
        ...callPair(
          "call_b",
          "match_therapists",
          { reason: "anxiety", area: "Ñuñoa" },
          {
            type: "json",
            value: placeholder(JOB, "Looking for therapists"),
          },
        ),
        {
          role: "user",
          content: [
            NOTICE_HEADING,
            "tool_call_id call_a (match_therapists) reports: Reviewing 12 therapists",
            "tool_call_id call_b (match_therapists) timed out",
            "tool_call_id call_a (match_therapists) failed: no slots",
            "and now?",
          ].join("\n\n"),
        },
      ],
    },
    {
      name: "a sync tool's failure is its tool message, as an error",
      entries: [
        user(1, "check"),
        {
          kind: "call",
          seq: 2,
          callId: "c",
          tool: "lookup",
          args: {},
          answer: { type: "answer", ok: false, content: "unknown area" },
        },
      ],
      expected: [
        { role: "user", content: "check" },
        ...callPair("c", "lookup", {}, { type: "error-text", value: "unknown area" }),
      ],
    },
    {
      name: "a human's reply is said as the team's; empty texts (deleted messages) are left out",
      entries: [user(1, "hello"), user(2, ""), { kind: "human", seq: 3, text: "Hi, Marta here.", name: "Marta" }],
      expected: [
        { role: "user", content: "hello" },
        { role: "assistant", content: "[Marta, a person on the team] Hi, Marta here." },
      ],
    },
    {
      name: "cut to the budget: whole exchanges go, oldest first, and it still opens with the person's side",
      contextChars: 600,
      entries: [user(1, "x".repeat(300)), jobCall(2), agent(3, "On it."), user(4, "how's it going?")],
      expected: [
        { role: "user", content: "(The conversation's earlier messages are left out.)" },
        ...callPair(
          "call_1",
          "match_therapists",
          { reason: "anxiety", area: "Ñuñoa" },
          {
            type: "json",
            value: placeholder(JOB, "Looking for therapists"),
          },
        ),
        { role: "assistant", content: "On it." },
        { role: "user", content: "how's it going?" },
      ],
    },
  ];

  for (const { name, entries, expected, contextChars } of cases) {
    it(name, () => {
      expect(buildTranscript(entries, contextChars ? { contextChars } : BIG)).toEqual(expected);
    });
  }

  it("never separates a call from its tool message, whatever the budget", () => {
    const entries = [user(1, "a"), jobCall(2, "c1"), jobCall(3, "c2"), agent(4, "b"), user(5, "c")];
    for (let budget = 1; budget < 2000; budget += 37) {
      const messages = buildTranscript(entries, { contextChars: budget });
      expect(messages[0]!.role).toBe("user");
      messages.forEach((message, i) => {
        const calls = message.role === "assistant" && Array.isArray(message.content);
        if (calls) expect(messages[i + 1]?.role, `budget ${budget}`).toBe("tool");
        if (message.role === "tool") expect(messages[i - 1]?.role, `budget ${budget}`).toBe("assistant");
      });
    }
  });
});
