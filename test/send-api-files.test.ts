// Files and choices out on Instagram and Messenger, against the Graph API stand-in: each file an attachment
// message by URL after the text, choices as quick replies (at most 13, titles ≤ 20) or else numbered lines
// (recorded), and a tapped quick reply's payload reaching the agent's turn.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendApiPlan } from "../src/channels/meta/send-api-payloads.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph, metaEnvFor, type SentMessage } from "./support/fake-graph.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";

const APP_SECRET = "app-secret-for-tests";
const IMAGE = { url: "https://files.example.com/chart.png" };
const PDF = { url: "https://files.example.com/report.pdf", name: "Report.pdf" };

describe("files and choices out on Instagram and Messenger", () => {
  let agent: AgentRuntime;
  let graph: FakeGraph;
  let hub: TestHub;
  let person = 0;

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    graph = await new FakeGraph({ appSecret: APP_SECRET }).start();
    hub = await TestHub.start({
      env: { AGENT_URL: agent.url, AGENT_SECRET, TURN_RETRY_BASE_MS: "150", ...metaEnvFor(graph, APP_SECRET) },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    await hub?.stop();
    await graph?.stop();
    await agent?.stop();
  });

  const sentTo = (to: string) => graph.sent.filter((message) => message.to === to);
  async function settle(): Promise<void> {
    do {
      await graph.settled();
      await hub.settled();
    } while (!graph.idle);
  }
  const shape = (m: SentMessage) => ({
    type: m.type,
    ...(m.text !== undefined ? { text: m.text } : {}),
    ...(m.media?.link ? { link: m.media.link } : {}),
    ...(m.quickReplies ? { quickReplies: m.quickReplies } : {}),
  });

  async function say(channel: "instagram" | "messenger", body: Record<string, unknown>) {
    const who = `${channel === "instagram" ? 17 : 27}8410000${String(++person).padStart(5, "0")}`;
    if (channel === "instagram") await graph.instagramInbound(who, "hi");
    else await graph.messengerInbound(who, "hi");
    await eventually(() => sentTo(who).find((m) => m.text === "you said: hi"), "the answer");
    const before = sentTo(who).length;
    const conversation = await hub.db.conversation.findFirstOrThrow({ where: { channel, contact: who } });
    const res = await hub.api("POST", `/v1/conversations/${conversation.id}/messages`, body);
    expect(res.status).toBe(201);
    const row = await eventually(async () => {
      const message = await hub.db.message.findUniqueOrThrow({ where: { id: res.body.message.id } });
      return message.status !== "pending" && message;
    }, "the decision");
    await settle();
    return { who, conversationId: conversation.id, sent: sentTo(who).slice(before), row };
  }

  it("Instagram: the text, then an image and a file as attachment messages by URL", async () => {
    const { sent, row } = await say("instagram", { text: "Your files", attachments: [IMAGE, PDF] });
    expect(sent.map(shape)).toEqual([
      { type: "text", text: "Your files" },
      { type: "image", link: IMAGE.url },
      { type: "document", link: PDF.url },
    ]);
    expect(row).toMatchObject({ status: "sent", statusReason: "window_open", externalId: sent.at(-1)!.id });
  });

  it("Messenger: buttons as quick replies after the file; a tapped one's payload reaches the turn", async () => {
    const { sent } = await say("messenger", {
      text: "Shall I book it?",
      attachments: [PDF],
      buttons: [{ title: "Yes, book", payload: "book:yes" }, { title: "No" }],
    });
    expect(sent.map(shape)).toEqual([
      { type: "document", link: PDF.url },
      {
        type: "text",
        text: "Shall I book it?",
        quickReplies: [
          { title: "Yes, book", payload: "book:yes" },
          { title: "No", payload: "No" },
        ],
      },
    ]);
  });

  it("Instagram: a tapped quick reply's payload reaches the agent's turn", async () => {
    const { who, conversationId } = await say("instagram", {
      text: "Which day?",
      buttons: [
        { title: "Monday", payload: "day:1" },
        { title: "Tuesday", payload: "day:2" },
      ],
    });
    await graph.instagramQuickReply(who, "Tuesday");
    const input = await eventually(
      () =>
        agent
          .turnsOf(conversationId)
          .flatMap((turn) => turn.inputs)
          .find((i) => i.type === "user_message" && i.text.startsWith("Tuesday")),
      "the tap's turn",
    );
    expect(input).toMatchObject({ payload: "day:2" });
  });

  it("Instagram: a quick reply is taken once; a signed delivery with a payload nothing open offered reaches the turn as the person's words only", async () => {
    const { who, conversationId } = await say("instagram", {
      text: "Refund order 12?",
      buttons: [
        { title: "Approve", payload: "approve:refund:order-12" },
        { title: "Reject", payload: "reject:refund:order-12" },
      ],
    });
    // Each delivery worked before the next is posted: the hub works several deliveries at once, in any order,
    // and "the first tap" is the first one worked.
    await graph.instagramQuickReply(who, "Approve");
    await settle();
    await graph.instagramQuickReply(who, "Approve");
    await settle();
    await graph.instagramQuickReply(who, "Reject");
    await settle();
    await graph.instagramWebhook([
      { messaging: [{ from: who, text: "Yes", quickReplyPayload: "approve:refund:order-999:amount=5000" }] },
    ]);
    await settle();
    const taps = agent
      .turnsOf(conversationId)
      .flatMap((turn) => turn.inputs)
      .flatMap((input) => (input.type === "user_message" && input.text !== "hi" ? [[input.text, input.payload]] : []));
    // Every message is the person's and is recorded (its text says what Meta delivered, as the person's words);
    // only the first tap of the offer carries its payload.
    expect(taps).toEqual([
      ["Approve (payload: approve:refund:order-12)", "approve:refund:order-12"],
      ["Approve (payload: approve:refund:order-12)", undefined],
      ["Reject (payload: reject:refund:order-12)", undefined],
      ["Yes (payload: approve:refund:order-999:amount=5000)", undefined],
    ]);
  });

  it("a quick-reply title over 20 characters makes the choices numbered lines, recorded", async () => {
    const { sent, row } = await say("messenger", {
      text: "Pick",
      buttons: [{ title: "Short" }, { title: "x".repeat(21) }],
    });
    expect(sent.map(shape)).toEqual([{ type: "text", text: `Pick\n\n1. Short\n2. ${"x".repeat(21)}` }]);
    expect(row.statusReason).toBe("window_open; fallback: choices as numbered lines");
    const fit = await say("instagram", { text: "Pick", buttons: [{ title: "y".repeat(20) }] });
    expect(fit.sent.map(shape)).toEqual([
      { type: "text", text: "Pick", quickReplies: [{ title: "y".repeat(20), payload: "y".repeat(20) }] },
    ]);
  });

  it("Messenger and Instagram: a file the reply carries in two of its messages is sent once, with the first", async () => {
    for (const channel of ["messenger", "instagram"] as const) {
      const who = `${channel === "instagram" ? 17 : 27}8420000${String(++person).padStart(5, "0")}`;
      // A runtime that attaches the report to the message giving it and again to its answer.
      agent.respond = (request) =>
        request.conversation.contact === who
          ? {
              messages: [
                { text: "Your report", attachments: [PDF] },
                { text: "Anything else?", attachments: [PDF, IMAGE] },
              ],
            }
          : undefined;
      try {
        if (channel === "instagram") await graph.instagramInbound(who, "my report?");
        else await graph.messengerInbound(who, "my report?");
        await eventually(() => sentTo(who).some((m) => m.media?.link === IMAGE.url), "the reply");
        await settle();
        expect(sentTo(who).map(shape)).toEqual([
          { type: "text", text: "Your report" },
          { type: "document", link: PDF.url },
          { type: "text", text: "Anything else?" },
          { type: "image", link: IMAGE.url },
        ]);
      } finally {
        agent.respond = undefined;
      }
    }
  });

  it("the Send API plan: 13 quick replies fit, 14 go as numbered lines (the API takes at most 10 buttons)", () => {
    const options = (n: number) => Array.from({ length: n }, (_, i) => ({ title: `Option ${i + 1}` }));
    const thirteen = sendApiPlan("Pick one", [], options(13), 1000);
    expect(thirteen.numbered).toBe(false);
    expect(thirteen.messages).toHaveLength(1);
    expect((thirteen.messages[0] as { quick_replies: unknown[] }).quick_replies).toHaveLength(13);
    const fourteen = sendApiPlan("Pick one", [], options(14), 1000);
    expect(fourteen).toEqual({
      messages: [
        {
          text: `Pick one\n\n${options(14)
            .map((b, i) => `${i + 1}. ${b.title}`)
            .join("\n")}`,
        },
      ],
      numbered: true,
    });
  });
});
