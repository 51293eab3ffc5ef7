// An MCP server asks the person (elicitation/create): askPerson is called as the MCP client's request handler
// calls it, and the person answers as the clients do — the widget over socket.io-client (a tap of a button,
// typed words), WhatsApp through signed webhooks from the Graph API stand-in — while the LLM agent runs
// against the OpenAI stand-in, which shows what the model is told and that an answer starts no turn of its own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import {
  askPerson,
  cancelAbandonedElicitations,
  cancelElicitations,
  cancelOwnedElicitations,
  type AskPersonRequest,
} from "../src/mcp/elicitation.js";
import { formFields, readAnswer } from "../src/mcp/elicitation-fields.js";
import { hubNotices, lastUserText, type FakeLlm, type LlmRequest } from "./support/fake-llm.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { FakeGraph, metaEnvFor, type SentMessage } from "./support/fake-graph.js";
import { spawnHub, type HubProcess } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const APP_SECRET = "app-secret-for-tests";

type Form = Extract<AskPersonRequest, { requestedSchema: unknown }>["requestedSchema"];

const confirmForm: Form = {
  type: "object",
  properties: { confirm: { type: "boolean", title: "Book it" } },
  required: ["confirm"],
};

const therapistForm: Form = {
  type: "object",
  properties: {
    therapist: {
      type: "string",
      title: "Therapist",
      oneOf: [
        { const: "rojas", title: "Dr. Rojas" },
        { const: "nunez", title: "Dr. Núñez" },
        { const: "soto", title: "Dr. Soto" },
      ],
    },
  },
  required: ["therapist"],
};

const patientForm: Form = {
  type: "object",
  properties: {
    note: { type: "string", title: "Anything else" },
    age: { type: "integer", title: "Age", minimum: 0, maximum: 120 },
    name: { type: "string", title: "Full name", description: "As on the insurance card" },
  },
  required: ["name", "age"],
};

/** The model answers the person "ok" and a notice "Noted." — whatever it is told. */
function script(req: LlmRequest) {
  return req.messages.at(-1)?.role === "tool" ? { text: "Noted." } : { text: "ok" };
}

describe("an MCP server asks the person", () => {
  let llm: FakeLlm;
  let graph: FakeGraph;
  let hub: TestHub;
  let sibling: HubProcess | undefined;
  const clients: WidgetClient[] = [];
  let asked = 0;

  beforeAll(async () => {
    llm = await startFakeOpenAI(script);
    graph = await new FakeGraph({ appSecret: APP_SECRET }).start();
    hub = await TestHub.start({
      env: {
        AGENT_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: llm.apiKey,
        OPENAI_BASE_URL: llm.url,
        TURN_RETRY_BASE_MS: "100",
        ...metaEnvFor(graph, APP_SECRET),
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await sibling?.stop();
    await hub?.stop();
    await llm?.stop();
    await graph?.stop();
  });

  async function person(url = hub.url) {
    const session = await openSession(url);
    const client = await WidgetClient.connect(url, { token: session.token });
    clients.push(client);
    return { ...session, client };
  }

  /** What the MCP client's request handler does: askPerson for the conversation, with the server's request. */
  function ask(
    conversationId: string,
    form: Form,
    message: string,
    extra: Partial<Pick<AskPersonRequest, "signal" | "jobId" | "owner">> = {},
  ): { message: string; answer: Promise<ElicitResult> } {
    const unique = `${message} [${++asked}]`;
    const answer = askPerson(hub.ctx, {
      conversationId,
      server: "clinic",
      tool: "clinic_book",
      toolCallId: `call_elicit_${asked}`,
      owner: "test-process",
      message: unique,
      requestedSchema: form,
      ...extra,
    });
    return { message: unique, answer };
  }

  const tap = (client: WidgetClient, title: string, payload: string) =>
    client.socket.emitWithAck("send", { text: title, clientId: `tap-${Math.random()}`, payload });

  /** The newest question the widget shows whose text includes `text`. */
  const shown = (client: WidgetClient, text: string, nth = 0) =>
    eventually(
      () => client.agentMessages().filter((message) => message.text.includes(text))[nth],
      `the question ${JSON.stringify(text)}`,
    );

  /** The model's requests that carry an elicitation notice for this call. */
  const toldModel = (callId: string) =>
    eventually(
      () =>
        llm.requests
          .flatMap((req) => hubNotices(req))
          .find((notice) => notice.tool_call_id === callId && notice.server === "clinic"),
      "the model told of the elicitation",
    );

  it("a boolean is asked with Yes and No buttons; a tap answers it, starts no turn, and the model is told with the next one", async () => {
    const { client, conversationId } = await person();
    await client.send("hello", "hello-1");
    await eventually(() => client.agentMessages().find((m) => m.text === "ok"), "the first reply");
    await hub.settled();
    const { message, answer } = ask(conversationId, confirmForm, "Book Tuesday 10:00?");
    const question = await shown(client, message);
    expect(question.text).toContain("Book it");
    expect(question.buttons?.map((b) => b.title)).toEqual(["Yes", "No"]);
    const before = llm.requests.length;

    // A forged payload is refused: only the question's own buttons answer it.
    expect(await tap(client, "Yes", `elicit:${crypto.randomUUID()}:0:yes`)).toMatchObject({ error: expect.anything() });
    expect(await tap(client, "Yes", question.buttons![0]!.payload!)).toMatchObject({ id: expect.any(String) });
    expect(await answer).toEqual({ action: "accept", content: { confirm: true } });
    await hub.settled();
    expect(llm.requests.length).toBe(before);
    // Answered: its buttons are stale.
    expect(await tap(client, "No", question.buttons![1]!.payload!)).toMatchObject({ error: expect.anything() });

    await client.send("thanks", "hello-2");
    const notice = await toldModel(`call_elicit_${asked}`);
    expect(notice).toMatchObject({
      tool: "clinic_book",
      asked: message,
      outcome: "answered",
      answers: { confirm: true },
    });
    const req = llm.requests.at(-1)!;
    expect(lastUserText(req)).toBe("thanks");
    // The question and the tap are told as the notice, not as the agent's words and the person's.
    expect(req.messages.some((m) => m.role === "assistant" && m.text.includes(message))).toBe(false);
    expect(req.messages.some((m) => m.role === "user" && m.text === "Yes")).toBe(false);
  });

  it("a choice of three is asked with one button each and answered by typing an option's title", async () => {
    const { client, conversationId } = await person();
    const { message, answer } = ask(conversationId, therapistForm, "Who would you like to see?");
    const question = await shown(client, message);
    expect(question.buttons?.map((b) => b.title)).toEqual(["Dr. Rojas", "Dr. Núñez", "Dr. Soto"]);
    await client.send("dr. nuñez", "typed-1");
    expect(await answer).toEqual({ action: "accept", content: { therapist: "nunez" } });
  });

  it("a form of several fields is asked one field at a time, required first; a bad number is asked again; an optional one is skipped", async () => {
    const { client, conversationId } = await person();
    const { message, answer } = ask(conversationId, patientForm, "We need a few details.");
    // Asked in the server's order, the optional one last.
    const first = await shown(client, message);
    expect(first.text).toContain("Age (1 of 3)");
    expect(first.text).toContain("whole number from 0 to 120");
    expect(first.buttons ?? []).toEqual([]);
    await client.send("thirty", "form-1");
    const again = await shown(client, "Age (1 of 3)", 1);
    expect(again.text).toMatch(/^That is not a number I can read\./);
    expect(again.text).not.toContain(message);
    await client.send("30", "form-2");
    const second = await shown(client, "Full name (2 of 3): As on the insurance card");
    expect(second.text).not.toContain('reply "skip"');
    await client.send("Ana Pérez", "form-3");
    const third = await shown(client, "Anything else (3 of 3)");
    expect(third.text).toContain('reply "skip"');
    await client.send("skip", "form-4");
    expect(await answer).toEqual({ action: "accept", content: { name: "Ana Pérez", age: 30 } });
    const row = await hub.db.elicitation.findFirstOrThrow({ where: { conversationId } });
    expect(row).toMatchObject({ state: "answered", answers: { name: "Ana Pérez", age: 30 } });
  });

  it('"cancel" declines, and the model is told they declined', async () => {
    const { client, conversationId } = await person();
    const { message, answer } = ask(conversationId, patientForm, "Your details, please.");
    await shown(client, message);
    await client.send("Cancel", "cancel-1");
    expect(await answer).toEqual({ action: "decline" });
    await client.send("what now?", "cancel-2");
    expect(await toldModel(`call_elicit_${asked}`)).toMatchObject({ outcome: "declined" });
  });

  it("an aborted request is cancelled: the person is told the question is withdrawn, their next words go to the model", async () => {
    const { client, conversationId } = await person();
    const controller = new AbortController();
    const { message, answer } = ask(conversationId, confirmForm, "Shall I go on?", { signal: controller.signal });
    await shown(client, message);
    controller.abort();
    expect(await answer).toEqual({ action: "cancel" });
    await shown(client, "withdrawn");
    await client.send("yes", "after-abort");
    await eventually(() => llm.requests.find((req) => lastUserText(req) === "yes"), "the model given the words");
    expect(await toldModel(`call_elicit_${asked}`)).toMatchObject({ outcome: "cancelled" });
    await eventually(() => client.agentMessages().filter((m) => m.text === "ok").length > 0, "the model's reply");
  });

  it("a cancelled job's questions are withdrawn; so are a stopped process's", async () => {
    const { client, conversationId } = await person();
    const jobId = crypto.randomUUID();
    const ofJob = ask(conversationId, confirmForm, "Confirm the booking?", { jobId });
    await shown(client, ofJob.message);
    expect(await cancelElicitations(hub.ctx, jobId)).toBe(1);
    expect(await ofJob.answer).toEqual({ action: "cancel" });

    const owned = ask(conversationId, confirmForm, "Confirm again?", { owner: "process-b" });
    await shown(client, owned.message);
    expect(await cancelOwnedElicitations(hub.ctx, "process-a")).toBe(0);
    expect(await cancelOwnedElicitations(hub.ctx, "process-b")).toBe(1);
    expect(await owned.answer).toEqual({ action: "cancel" });
  });

  it("a question whose waiting process is gone answers nothing: the person's words go to the model", async () => {
    const { client, conversationId } = await person();
    /** What a process that died leaves: the row, not watched for a minute. */
    const abandon = () =>
      hub.ctx.sql.query(
        `UPDATE "Elicitation" SET "watchedAt" = "watchedAt" - interval '1 minute'
         WHERE "conversationId" = $1::uuid AND state = 'asking'`,
        [conversationId],
      );
    const first = ask(conversationId, confirmForm, "Still there?");
    await shown(client, first.message);
    await abandon();
    // The person's next turn finds it abandoned: it is withdrawn, and their words are the model's.
    await client.send("no", "gone-1");
    expect(await first.answer).toEqual({ action: "cancel" });
    await eventually(() => llm.requests.find((req) => lastUserText(req) === "no"), "the model given the words");

    // At start-up (or by the sweep), without waiting for the person.
    const second = ask(conversationId, confirmForm, "Still there now?");
    await shown(client, second.message);
    expect(await cancelAbandonedElicitations(hub.ctx)).toBe(0);
    await abandon();
    expect(await cancelAbandonedElicitations(hub.ctx)).toBe(1);
    expect(await second.answer).toEqual({ action: "cancel" });
  });

  it("WhatsApp: three options come as reply buttons, a tap answers; a boolean's Yes and No too", async () => {
    const who = "56987654321";
    expect((await graph.whatsappInbound(who, "hi")).status).toBe(200);
    const conversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { channel: "whatsapp", contact: who } }),
      "the conversation",
    );
    await eventually(() => graph.sent.find((m) => m.to === who && m.text === "ok"), "the first reply");
    const buttons = (text: string) =>
      eventually(
        () => graph.sent.find((m: SentMessage) => m.to === who && m.interactive?.body.includes(text))?.interactive,
        "the question with its buttons",
      );

    const choice = ask(conversation.id, therapistForm, "Who would you like to see?");
    const sent = await buttons(choice.message);
    expect(sent.type).toBe("button");
    expect(sent.choices.map((c) => c.title)).toEqual(["Dr. Rojas", "Dr. Núñez", "Dr. Soto"]);
    const before = llm.requests.length;
    expect((await graph.whatsappInbound(who, "Dr. Soto", { kind: "button_reply" })).status).toBe(200);
    expect(await choice.answer).toEqual({ action: "accept", content: { therapist: "soto" } });

    const yesNo = ask(conversation.id, confirmForm, "Book it now?");
    expect((await buttons(yesNo.message)).choices.map((c) => c.title)).toEqual(["Yes", "No"]);
    expect((await graph.whatsappInbound(who, "No", { kind: "button_reply" })).status).toBe(200);
    expect(await yesNo.answer).toEqual({ action: "accept", content: { confirm: false } });
    await hub.settled();
    expect(llm.requests.length).toBe(before);
  });

  it("an answer taken by another hub process reaches the process waiting for it", async () => {
    sibling = spawnHub(hub.siblingEnv({ PORT: "0", LOG_LEVEL: "warn" }));
    await sibling.waitFor("chat-delivery-hub is running");
    const { client, conversationId } = await person(sibling.url());
    const { message, answer } = ask(conversationId, patientForm, "Details for the other process.");
    // Asked here, routed to the person's socket on the other process.
    await shown(client, message);
    await client.send("41", "other-1");
    await shown(client, "Full name (2 of 3)");
    await client.send("Luis Soto", "other-2");
    await shown(client, "Anything else (3 of 3)");
    await client.send("Mornings only", "other-3");
    expect(await answer).toEqual({
      action: "accept",
      content: { name: "Luis Soto", age: 41, note: "Mornings only" },
    });
  });

  it("a URL-mode request is declined without asking", async () => {
    const { conversationId } = await person();
    const result = await askPerson(hub.ctx, {
      conversationId,
      server: "clinic",
      owner: "test-process",
      mode: "url",
      message: "Sign in",
    });
    expect(result).toEqual({ action: "decline" });
    expect(await hub.db.elicitation.count({ where: { conversationId } })).toBe(0);
  });
});

describe("reading the person's words against a field", () => {
  const [choice, age, day, mail, picks, agree] = formFields({
    type: "object",
    properties: {
      color: { type: "string", enum: ["red", "green", "no"], enumNames: ["Red", "Green", "No colour"] },
      age: { type: "integer", minimum: 18 },
      day: { type: "string", format: "date" },
      mail: { type: "string", format: "email" },
      picks: {
        type: "array",
        items: {
          anyOf: [
            { const: "a", title: "Alpha" },
            { const: "b", title: "Beta" },
          ],
        },
      },
      agree: { type: "boolean" },
    },
    required: ["color", "age", "day", "mail", "picks", "agree"],
  });

  it.each([
    ["GREEN", choice, { kind: "value", value: "green" }],
    ["3", choice, { kind: "value", value: "no" }],
    ["no", choice, { kind: "value", value: "no" }],
    ["blue", choice, { kind: "invalid" }],
    ["17", age, { kind: "invalid", hint: "It must be at least 18." }],
    ["18.5", age, { kind: "invalid" }],
    ["no", age, { kind: "decline" }],
    ["2026-02-30", day, { kind: "invalid" }],
    ["2026-02-28", day, { kind: "value", value: "2026-02-28" }],
    ["ana@example.org", mail, { kind: "value", value: "ana@example.org" }],
    ["ana at example", mail, { kind: "invalid" }],
    ["beta, 1", picks, { kind: "value", value: ["b", "a"] }],
    ["gamma", picks, { kind: "invalid" }],
    ["¡SÍ!", agree, { kind: "value", value: true }],
    ["no", agree, { kind: "value", value: false }],
    ["stop", agree, { kind: "decline" }],
    ["skip", agree, { kind: "invalid" }],
  ] as const)("row %#: %j", (typed, field, reading) => {
    expect(readAnswer(field!, typed, undefined)).toMatchObject(reading);
  });
});
