// The built-in composer, table-tested: what a person's words ask (intent.ts) and what the composer answers,
// from the turn alone — the running jobs, the conversation's history, the inputs. No hub: it is pure.
import { describe, expect, it } from "vitest";
import type { TurnRequest } from "../src/agent/agent-port.js";
import { builtInComposer, type SearchArguments } from "../src/agent/composer.js";
import { readIntent } from "../src/agent/intent.js";

const RESULT = {
  message: 'I found 2 matches for "anxiety" in the demo catalogue (sample data), the nearest to Ñuñoa first.',
  data: {
    matches: [
      {
        name: "Ana Rojas",
        approach: "cognitive behavioural therapy for anxiety and panic",
        where: "in Ñuñoa on Tuesdays and Thursdays",
        fee: "CLP 35,000",
      },
      {
        name: "Pedro Soto",
        approach: "mindfulness for stress, anxiety and burnout",
        where: "online or in Providencia",
        fee: "CLP 30,000",
      },
    ],
  },
};
const AT = "2026-12-02T10:00:00.000Z";
const HISTORY: TurnRequest["history"] = [
  {
    id: "00000000-0000-4000-8000-000000000001",
    role: "user",
    text: "I've been having a lot of anxiety lately, I live in Ñuñoa",
    data: null,
    toolCallId: null,
    createdAt: AT,
  },
  {
    id: "00000000-0000-4000-8000-000000000002",
    role: "tool_call",
    text: null,
    data: { tool: "demo_search", arguments: { query: "anxiety", place: "Ñuñoa" } },
    toolCallId: null,
    createdAt: AT,
  },
  {
    id: "00000000-0000-4000-8000-000000000003",
    role: "tool_result",
    text: null,
    data: { outcome: "succeeded", result: RESULT },
    toolCallId: null,
    createdAt: AT,
  },
];
const RUNNING = [
  {
    id: "00000000-0000-4000-8000-00000000000a",
    tool: "demo_search",
    toolCallId: null,
    startedAt: AT,
    lastProgress: "Reviewing 6 therapists near Ñuñoa",
  },
];

function request(inputs: TurnRequest["inputs"], more: Partial<TurnRequest> = {}): TurnRequest {
  return {
    conversation: {
      id: "00000000-0000-4000-8000-0000000000c0",
      channel: "web",
      account: "widget",
      contact: "anon-1",
      name: null,
      control: "agent",
    },
    inputs,
    runningJobs: [],
    history: [],
    ...more,
  };
}
const said = (text: string) => ({ type: "user_message" as const, messageId: "m", text });

describe("the built-in composer", () => {
  it.each([
    [
      "I've been having a lot of anxiety lately, I live in Ñuñoa",
      false,
      { kind: "search", query: "anxiety", place: "Ñuñoa" },
    ],
    ["Últimamente tengo mucha ansiedad, vivo en Ñuñoa", false, { kind: "search", query: "anxiety", place: "Ñuñoa" }],
    ["search for couples therapy online", false, { kind: "search", query: "couples therapy online" }],
    ["search for grief near Las Condes", false, { kind: "search", query: "grief", place: "Las Condes" }],
    ["busca duelo cerca de nunoa", false, { kind: "search", query: "duelo", place: "Ñuñoa" }],
    ["Please run the demo search", false, { kind: "search", query: "" }],
    ["how's it going?", false, { kind: "status" }],
    ["¿cómo va?", false, { kind: "status" }],
    ["which one is closest?", true, { kind: "about_result", aspect: "closest", ordinal: undefined }],
    ["how much does the first one cost?", true, { kind: "about_result", aspect: "cost", ordinal: 1 }],
    ["does the second one do online sessions?", true, { kind: "about_result", aspect: "online", ordinal: 2 }],
    ["¿cuánto cobra el segundo?", true, { kind: "about_result", aspect: "cost", ordinal: 2 }],
    ["thanks Marta!", false, { kind: "thanks" }],
    ["gracias", true, { kind: "thanks" }],
    ["hi", false, { kind: "greeting" }],
    ["Hello, who are you?", false, { kind: "about" }],
    ["bye!", false, { kind: "bye" }],
    ["the weather is nice", false, { kind: "other" }],
    ["I need help, I've been really stressed", false, { kind: "search", query: "stress" }],
    ["todavía tengo ansiedad", false, { kind: "search", query: "anxiety" }],
  ])("reads %j (a result given: %s)", (text, hasResult, intent) => {
    expect(readIntent(text, { hasResult })).toEqual(intent);
  });

  it.each<[string, Partial<TurnRequest>, string]>([
    ["how's it going?", { runningJobs: RUNNING }, "Still on it: Reviewing 6 therapists near Ñuñoa."],
    ["¿cómo va?", { runningJobs: RUNNING }, "Sigo en eso: Reviewing 6 therapists near Ñuñoa."],
    [
      "how's it going?",
      { runningJobs: [{ ...RUNNING[0]!, lastProgress: null }] },
      "Still on it; I'll write here as soon as I have it.",
    ],
    ["how's it going?", { history: HISTORY }, "It's done: the results are just above."],
    [
      "which one is closest?",
      { history: HISTORY },
      "Ana Rojas is the closest: Ana sees patients in Ñuñoa on Tuesdays and Thursdays.",
    ],
    ["how much does the first one cost?", { history: HISTORY }, "Ana Rojas charges CLP 35,000 per session."],
    [
      "does the second one do online sessions?",
      { history: HISTORY },
      "Yes, Pedro sees patients online or in Providencia.",
    ],
    [
      "does Ana see people online?",
      { history: HISTORY },
      "No, Ana sees patients in person only, in Ñuñoa on Tuesdays and Thursdays.",
    ],
    ["what about the third one?", { history: HISTORY }, "I gave you only two: Ana Rojas and Pedro Soto."],
    ["thanks Marta!", {}, "You're welcome!"],
    ["hi", {}, "Hi! How can I help?"],
    ["hola", {}, "¡Hola! ¿En qué te puedo ayudar?"],
  ])("answers %j from the turn", async (text, more, answer) => {
    const reply = await builtInComposer({ startSearch: () => Promise.reject(new Error("no search")) }).runTurn(
      request([said(text)], more),
    );
    expect(reply.messages.map((message) => message.text)).toEqual([answer]);
  });

  it("starts the search with the concern and the place, once, and never names the tool", async () => {
    const started: SearchArguments[] = [];
    const composer = builtInComposer({
      startSearch: async (_conversation, args) => (started.push(args), "I'm on it."),
    });
    const first = await composer.runTurn(request([said("I've been having a lot of anxiety lately, I live in Ñuñoa")]));
    expect(first.messages).toEqual([{ text: "I'm on it." }]);
    expect(started).toEqual([{ query: "anxiety", place: "Ñuñoa" }]);
    // While it runs, asking again starts nothing.
    const again = await composer.runTurn(request([said("search for anxiety")], { runningJobs: RUNNING }));
    expect(again.messages[0]?.text).toContain("already");
    expect(started).toHaveLength(1);
    const failed = await composer.runTurn(
      request([
        {
          type: "tool_failed",
          job: RUNNING[0]!.id,
          tool: "demo_search",
          toolCallId: null,
          reason: "timeout",
          message: "",
        },
      ]),
    );
    const progress = await composer.runTurn(
      request([{ type: "progress", job: RUNNING[0]!.id, tool: "demo_search", toolCallId: null, text: "Reviewing" }]),
    );
    for (const reply of [first, again, failed, progress])
      for (const message of reply.messages) expect(message.text).not.toContain("demo_search");
  });

  it("gives results that come together in one message, apart from its answer to the person", async () => {
    const result = (job: string, message: string, attachments?: { url: string }[]) => ({
      type: "tool_result" as const,
      job,
      tool: "demo_search",
      toolCallId: null,
      result: { message },
      ...(attachments ? { attachments } : {}),
    });
    const A = "00000000-0000-4000-8000-0000000000a1";
    const B = "00000000-0000-4000-8000-0000000000a2";
    const PDF = { url: "https://files.example/a.pdf" };
    const reply = await builtInComposer({ startSearch: () => Promise.reject(new Error("no search")) }).runTurn(
      request([
        result(A, "First search done.", [PDF]),
        { type: "progress", job: B, tool: "demo_search", toolCallId: null, text: "Reviewing 6 therapists" },
        result(B, "Second search done."),
        said("thanks!"),
        result(A, "Third search done."),
      ]),
    );
    expect(reply.messages).toEqual([
      {
        text: "First search done.\n\nStill on it: Reviewing 6 therapists\n\nSecond search done.",
        attachments: [PDF],
      },
      { text: "You're welcome!" },
      { text: "Third search done." },
    ]);
  });

  it("after a hand-back, gives the held result in a message of its own, and answers small talk briefly", async () => {
    const reply = await builtInComposer({ startSearch: () => Promise.reject(new Error("no search")) }).runTurn(
      request(
        [
          said("thanks Marta!"),
          { type: "tool_result", job: RUNNING[0]!.id, tool: "demo_search", toolCallId: null, result: RESULT },
          { type: "handback" },
        ],
        { history: HISTORY },
      ),
    );
    expect(reply.messages.map((message) => message.text)).toEqual([
      "You're welcome!",
      `${RESULT.message}\nAna Rojas: cognitive behavioural therapy for anxiety and panic, in Ñuñoa on Tuesdays and Thursdays, CLP 35,000\nPedro Soto: mindfulness for stress, anxiety and burnout, online or in Providencia, CLP 30,000`,
    ]);
  });
});
