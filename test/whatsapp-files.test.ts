// Files and choices out on WhatsApp, against the Graph API stand-in that checks Meta's rules: media by link
// (the text as a single file's caption when it fits), reply buttons, lists, numbered lines, the links when
// Meta cannot take a file, a tap's id reaching the turn as its payload, and a template whose header carries
// the result's report when the window is closed — the rest after the person's answer, once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph, metaEnvFor, type SentMessage } from "./support/fake-graph.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

const APP_SECRET = "app-secret-for-tests";
const IMAGE = { url: "https://files.example.com/chart.png" };
const PDF = { url: "https://files.example.com/report.pdf", name: "Report.pdf" };
const CSV = { url: "https://files.example.com/rows.csv", caption: "All rows" };
const withHeader = matchTherapists.replace(
  "    path: /vatio/jobs/$job.id\n",
  "    path: /vatio/jobs/$job.id\n  whatsapp_template:\n    name: report_ready\n    language: en\n    header: document\n" +
    '    components:\n      - type: body\n        parameters: ["$result.message"]\n',
);

describe("files and choices out on WhatsApp", () => {
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let graph: FakeGraph;
  let hub: TestHub;
  let person = 0;

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    graph = await new FakeGraph({
      appSecret: APP_SECRET,
      templates: ["results_ready", "hub_default", "report_ready"],
      templateHeaders: { report_ready: "document" },
    }).start();
    hub = await TestHub.start({
      tools: { match_therapists: withHeader },
      env: { AGENT_URL: agent.url, AGENT_SECRET, TURN_RETRY_BASE_MS: "150", ...metaEnvFor(graph, APP_SECRET) },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    await hub?.stop();
    await graph?.stop();
    await backend?.stop();
    await agent?.stop();
  });

  const sentTo = (to: string) => graph.sent.filter((message) => message.to === to);
  async function settle(): Promise<void> {
    do {
      await graph.settled();
      await hub.settled();
    } while (!graph.idle);
  }

  /** A person who wrote (the window is open) and got the agent's answer; what follows is what the test sends. */
  async function openConversation(): Promise<{ who: string; conversationId: string; before: number }> {
    const who = `5697777${String(++person).padStart(4, "0")}`;
    await graph.whatsappInbound(who, "hola");
    await eventually(() => sentTo(who).find((m) => m.text === "you said: hola"), "the answer");
    const conversation = await hub.db.conversation.findFirstOrThrow({ where: { channel: "whatsapp", contact: who } });
    return { who, conversationId: conversation.id, before: sentTo(who).length };
  }

  /** The agent says `body` on its own; resolves with what reached the person and the message as recorded. */
  async function say(body: Record<string, unknown>) {
    const { who, conversationId, before } = await openConversation();
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/messages`, body);
    expect(res.status).toBe(201);
    const row = await eventually(async () => {
      const message = await hub.db.message.findFirst({
        where: { conversationId, role: "agent", text: body.text as string },
        orderBy: { seq: "desc" },
      });
      return message && message.status !== "pending" && message;
    }, "the delivery decision");
    await settle();
    return { who, conversationId, sent: sentTo(who).slice(before), row };
  }

  const shape = (m: SentMessage) => ({
    type: m.type,
    ...(m.text !== undefined ? { text: m.text } : {}),
    ...(m.media ? { media: m.media } : {}),
    ...(m.interactive ? { interactive: m.interactive } : {}),
  });

  it("a single image carries the text as its caption", async () => {
    const { sent, row } = await say({ text: "Your chart for this week", attachments: [IMAGE] });
    expect(sent.map(shape)).toEqual([
      { type: "image", media: { type: "image", link: IMAGE.url, caption: "Your chart for this week" } },
    ]);
    expect(row).toMatchObject({ status: "sent", statusReason: "window_open", externalId: sent[0]!.id });
  });

  it("an image and a PDF: the text first, then each file (a document with its file name)", async () => {
    const { sent } = await say({ text: "Both files", attachments: [IMAGE, PDF] });
    expect(sent.map(shape)).toEqual([
      { type: "text", text: "Both files" },
      { type: "image", media: { type: "image", link: IMAGE.url } },
      { type: "document", media: { type: "document", link: PDF.url, filename: "Report.pdf" } },
    ]);
  });

  it("a send deferred half-way (a 5xx on the second file) resumes after what Meta accepted: each part once", async () => {
    const { who, conversationId, before } = await openConversation();
    graph.passNext(who, 2);
    graph.failNext(who, 1, "5xx");
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/messages`, {
      text: "Both again",
      attachments: [IMAGE, PDF],
    });
    expect(res.status).toBe(201);
    await eventually(async () => {
      const message = await hub.db.message.findUniqueOrThrow({ where: { id: res.body.message.id } });
      return message.status !== "pending" && message;
    }, "the decision");
    await settle();
    expect(graph.failuresLeft(who)).toBe(0);
    expect(sentTo(who).slice(before).map(shape)).toEqual([
      { type: "text", text: "Both again" },
      { type: "image", media: { type: "image", link: IMAGE.url } },
      { type: "document", media: { type: "document", link: PDF.url, filename: "Report.pdf" } },
    ]);
  });

  it("a text too long for a caption goes first as its own message", async () => {
    const text = "Long summary. ".repeat(80).trim();
    expect(text.length).toBeGreaterThan(1024);
    const { sent } = await say({ text, attachments: [CSV] });
    expect(sent.map(shape)).toEqual([
      { type: "text", text },
      { type: "document", media: { type: "document", link: CSV.url, caption: "All rows", filename: "rows.csv" } },
    ]);
  });

  it("3 buttons with 11-character titles are reply buttons; a 21-character title makes them a list", async () => {
    const titles = ["Book Monday", "Book Friday", "Not this wk"];
    const buttons = await say({
      text: "When?",
      buttons: titles.map((title, i) => ({ title, payload: `slot:${i}` })),
    });
    expect(buttons.sent.map(shape)).toEqual([
      {
        type: "interactive",
        interactive: {
          type: "button",
          body: "When?",
          choices: titles.map((title, i) => ({ id: `slot:${i}`, title })),
        },
      },
    ]);
    const long = await say({ text: "Which?", buttons: [{ title: "A" }, { title: "x".repeat(21) }] });
    expect(long.sent.map(shape)).toEqual([
      {
        type: "interactive",
        interactive: {
          type: "list",
          body: "Which?",
          button: "Choose",
          choices: [
            { id: "A", title: "A" },
            { id: "x".repeat(21), title: "x".repeat(21) },
          ],
        },
      },
    ]);
  });

  it("5 buttons become a list; the person's pick reaches the agent's turn as its payload", async () => {
    const options = ["Mon", "Tue", "Wed", "Thu", "Fri"];
    const { who, conversationId, sent } = await say({
      text: "Pick a day",
      buttons: options.map((title) => ({ title, payload: `day:${title.toLowerCase()}` })),
    });
    expect(sent.map(shape)).toEqual([
      {
        type: "interactive",
        interactive: {
          type: "list",
          body: "Pick a day",
          button: "Choose",
          choices: options.map((title) => ({ id: `day:${title.toLowerCase()}`, title })),
        },
      },
    ]);
    await graph.whatsappInbound(who, "Wed", { kind: "list_reply" });
    const input = await eventually(
      () =>
        agent
          .turnsOf(conversationId)
          .flatMap((turn) => turn.inputs)
          .find((i) => i.type === "user_message" && i.text.startsWith("Wed")),
      "the pick's turn",
    );
    expect(input).toMatchObject({ type: "user_message", payload: "day:wed" });
  });

  it("choices too long for a list go as numbered lines, and the timeline says so", async () => {
    const titles = ["A choice of 25 characters", "Another one, just as long"];
    expect(titles.every((title) => title.length === 25)).toBe(true);
    const { sent, row } = await say({ text: "Which one?", buttons: titles.map((title) => ({ title })) });
    expect(sent.map(shape)).toEqual([{ type: "text", text: `Which one?\n\n1. ${titles[0]}\n2. ${titles[1]}` }]);
    expect(row.statusReason).toBe("window_open; fallback: choices as numbered lines");
  });

  it("a media error from Meta (131053) sends the links instead, recorded on the message", async () => {
    const { who, conversationId, before } = await openConversation();
    graph.errorNext(who, 1, 131053);
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/messages`, {
      text: "Your chart",
      attachments: [IMAGE],
    });
    expect(res.status).toBe(201);
    const row = await eventually(async () => {
      const message = await hub.db.message.findUniqueOrThrow({ where: { id: res.body.message.id } });
      return message.status !== "pending" && message;
    }, "the decision");
    await settle();
    expect(sentTo(who).slice(before).map(shape)).toEqual([
      { type: "text", text: `Your chart\nchart.png: ${IMAGE.url}` },
    ]);
    expect(graph.rejected.filter((r) => r.to === who).map((r) => r.code)).toEqual([131053]);
    expect(row.status).toBe("sent");
    expect(row.statusReason).toMatch(/^window_open; fallback: file as a link \(131053 /);
  });

  it("window closed: the template's header carries the report; the person's answer brings the rest, once", async () => {
    const who = `5697777${String(++person).padStart(4, "0")}`;
    await graph.whatsappInbound(who, "hola", { at: new Date(Date.now() - 25 * 3_600_000) });
    await eventually(
      () => hub.db.conversation.findFirst({ where: { channel: "whatsapp", contact: who } }),
      "the conversation",
    );
    await settle();
    const conversation = await hub.db.conversation.findFirstOrThrow({ where: { channel: "whatsapp", contact: who } });
    backend.startMode = { kind: "accept", message: "On it." };
    const started = await hub.api("POST", `/v1/conversations/${conversation.id}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "report", area: "Ñuñoa" },
    });
    const jobId = started.body.job.id as string;
    agent.respond = (request) => {
      if (request.conversation.id !== conversation.id) return undefined;
      const result = request.inputs.find((input) => input.type === "tool_result");
      if (!result || result.type !== "tool_result") return undefined;
      return {
        messages: [
          { text: "Your report and data", ...(result.attachments ? { attachments: result.attachments } : {}) },
        ],
      };
    };
    try {
      const before = sentTo(who).length;
      expect(
        (await backend.post(jobId, { result: "ok", message: "Report ready", attachments: [PDF, CSV] })).status,
      ).toBe(200);
      const template = await eventually(
        () =>
          sentTo(who)
            .slice(before)
            .find((m) => m.type === "template"),
        "the template",
      );
      await settle();
      expect(template.template).toEqual({
        name: "report_ready",
        language: "en",
        components: [
          { type: "header", parameters: [{ type: "document", document: { link: PDF.url, filename: "Report.pdf" } }] },
          { type: "body", parameters: [{ type: "text", text: "Report ready" }] },
        ],
      });
      expect(sentTo(who).slice(before)).toHaveLength(1);

      const answered = sentTo(who).length;
      await graph.whatsappInbound(who, "Thanks", { kind: "button" });
      await eventually(
        () =>
          sentTo(who)
            .slice(answered)
            .some((m) => m.type === "document"),
        "the rest",
      );
      await settle();
      expect(sentTo(who).slice(answered).map(shape)).toEqual([
        {
          type: "document",
          media: { type: "document", link: CSV.url, caption: "Your report and data\n\nAll rows", filename: "rows.csv" },
        },
      ]);
      const turn = agent
        .turnsOf(conversation.id)
        .find((t) => t.inputs.some((input) => input.type === "tool_result" && input.givenWithTemplate));
      expect(turn?.inputs.find((input) => input.type === "tool_result")).toMatchObject({
        attachments: [CSV],
        givenWithTemplate: [PDF],
      });
      // Once: nothing more comes.
      await settle();
      expect(sentTo(who).filter((m) => m.media?.link === PDF.url || m.type === "template")).toHaveLength(1);
    } finally {
      agent.respond = undefined;
    }
  });

  it("window closed: a reply that carries the template's report again and a file in two messages sends each file once", async () => {
    const who = `5697777${String(++person).padStart(4, "0")}`;
    await graph.whatsappInbound(who, "hola", { at: new Date(Date.now() - 25 * 3_600_000) });
    const conversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { channel: "whatsapp", contact: who } }),
      "the conversation",
    );
    await settle();
    backend.startMode = { kind: "accept", message: "On it." };
    const started = await hub.api("POST", `/v1/conversations/${conversation.id}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "report", area: "Ñuñoa" },
    });
    // A runtime that gives every file it knows of with every message: the result's, those the template
    // gave, in the message that gives the result and again in the answer to the person.
    agent.respond = (request) => {
      if (request.conversation.id !== conversation.id) return undefined;
      const result = request.inputs.find((input) => input.type === "tool_result");
      const said = request.inputs.filter((input) => input.type === "user_message").at(-1);
      const files =
        result?.type === "tool_result" ? [...(result.givenWithTemplate ?? []), ...(result.attachments ?? [])] : [];
      return {
        messages: [
          ...(result ? [{ text: "Your report", attachments: files }] : []),
          ...(said?.type === "user_message" ? [{ text: `you said: ${said.text}`, attachments: files }] : []),
        ],
      };
    };
    try {
      const before = sentTo(who).length;
      const jobId = started.body.job.id as string;
      expect(
        (await backend.post(jobId, { result: "ok", message: "Report ready", attachments: [PDF, CSV] })).status,
      ).toBe(200);
      await eventually(
        () =>
          sentTo(who)
            .slice(before)
            .find((m) => m.type === "template"),
        "the template",
      );
      await settle();
      expect(
        sentTo(who)
          .slice(before)
          .map((m) => m.type),
      ).toEqual(["template"]);

      const answered = sentTo(who).length;
      await graph.whatsappInbound(who, "Thanks");
      await eventually(
        () =>
          sentTo(who)
            .slice(answered)
            .some((m) => m.text === "you said: Thanks"),
        "the answer",
      );
      await settle();
      const after = sentTo(who).slice(answered);
      // The report came with the template; the annex comes once, with the result; then the answer.
      expect(after.filter((m) => m.media?.link === PDF.url)).toEqual([]);
      expect(after.filter((m) => m.media?.link === CSV.url)).toHaveLength(1);
      expect(after.map(shape)).toEqual([
        {
          type: "document",
          media: { type: "document", link: CSV.url, caption: "Your report\n\nAll rows", filename: "rows.csv" },
        },
        { type: "text", text: "you said: Thanks" },
      ]);
    } finally {
      agent.respond = undefined;
    }
  });
});
