// A person's right to be forgotten (docs/operations.md, Erasure): POST /v1/conversations/{id}/erase and
// `hub erase` leave nothing of the person in any table of the database — every table is listed and every row
// cast to text and searched for their words, name, number and device — and keep a tombstone; erasing is
// idempotent (one event); a late result for one of the conversation's jobs is answered 410 and never
// delivered, on any process; what would add to the conversation is refused. PostgreSQL and the embedded
// database.
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { visitorLabel } from "../src/channels/widget/visitor-id.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeFcm } from "./support/fake-fcm.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { hubCommand, spawnHub, type CommandRun } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { apiCall, CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";
import { postCallback, startToolBackend, TOOL_KEY, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const APP_SECRET = "app-secret-for-tests";

/** A person with words, a name and a number nobody else in the database has. */
function person() {
  const tag = randomBytes(5).toString("hex");
  return {
    text: `my diagnosis is ${tag}-secret`,
    name: `Valentina ${tag}`,
    phone: `569${String(Math.floor(Math.random() * 1e8)).padStart(8, "0")}`,
    reason: `panic attacks ${tag}`,
    result: `therapist ${tag}-found`,
    progress: `searching near ${tag}-home`,
    file: `prescription-${tag}.png`,
    note: `team note about ${tag}-private`,
  };
}

describe.each(["postgresql", "embedded"] as const)("erasure (%s)", (database) => {
  let graph: FakeGraph;
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let fcm: FakeFcm;
  let hub: TestHub;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    graph = await new FakeGraph({ appSecret: APP_SECRET }).start();
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    fcm = await FakeFcm.start();
    hub = await TestHub.start({
      database,
      tools: { match_therapists: matchTherapists },
      env: {
        AGENT_URL: agent.url,
        AGENT_SECRET,
        ...metaEnvFor(graph, APP_SECRET),
        FCM_SERVICE_ACCOUNT: JSON.stringify(fcm.serviceAccount),
        FCM_BASE_URL: fcm.url,
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await graph?.stop();
    await backend?.stop();
    await agent?.stop();
    await fcm?.stop();
  });

  const asConsole = (method: string, route: string, body?: unknown) => hub.api(method, route, body, CONSOLE_API_KEY);

  /** Every table of the hub's schema, each row cast to text: where any of the needles is found. */
  async function foundAnywhere(needles: string[]): Promise<string[]> {
    const tables = await hub.ctx.sql.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables
       WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
    );
    // The search can fail only if it looks: the tables the person's data was in are among those searched.
    expect(tables.map((table) => table.name)).toEqual(
      expect.arrayContaining(["Conversation", "Message", "Job", "JobProgress", "TurnInput", "WebhookEvent"]),
    );
    expect(tables.map((table) => table.name)).toEqual(
      expect.arrayContaining(["PushDevice", "PushSend", "Upload", "HubEvent", "ErasedJob", "ErasedMessage"]),
    );
    const found: string[] = [];
    for (const { name } of tables) {
      for (const needle of needles) {
        const [row] = await hub.ctx.sql.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${name.replaceAll('"', '""')}" t WHERE t::text LIKE $1`,
          [`%${needle}%`],
        );
        if (row!.n > 0) found.push(`${name}: ${needle}`);
      }
    }
    return found;
  }

  async function startJob(conversationId: string, reason: string): Promise<string> {
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason, area: "Ñuñoa" },
    });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }

  /** A job with arguments, progress and a result, and a second one still running; the running one's id. */
  async function jobsOf(conversationId: string, who: ReturnType<typeof person>): Promise<string> {
    const done = await startJob(conversationId, who.reason);
    expect((await backend.post(done, { progress: who.progress })).status).toBe(200);
    const answered = await backend.post(done, {
      result: "ok",
      message: who.result,
      data: { therapists: [{ name: who.result }] },
    });
    expect(answered.status).toBe(200);
    return startJob(conversationId, `${who.reason} again`);
  }

  /** A widget person with a name, messages, an upload, a push device and jobs. */
  async function widgetPerson(who: ReturnType<typeof person>) {
    const session = await openSession(hub.url, { name: who.name });
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    const device = fcm.device();
    const registered = await fetch(`${hub.url}/widget/devices`, {
      method: "POST",
      headers: { Authorization: `Bearer ${session.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ platform: "android", token: device }),
    });
    expect(registered.status).toBe(201);
    const uploaded = await fetch(`${hub.url}/widget/uploads?name=${encodeURIComponent(who.file)}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${session.token}`, "Content-Type": "image/png" },
      body: randomBytes(2000),
    });
    expect(uploaded.status).toBe(201);
    const upload = ((await uploaded.json()) as { upload: { id: string } }).upload;
    const sent = await client.socket.emitWithAck("send", {
      text: who.text,
      clientId: randomUUID(),
      attachments: [{ uploadId: upload.id }],
    });
    expect(sent).toEqual({ id: expect.any(String) });
    // The message's turn first: a result committed before it started would be answered in the same turn.
    await eventually(() => agent.turnsOf(session.conversationId).length >= 1, "the message's turn");
    const running = await jobsOf(session.conversationId, who);
    await eventually(() => agent.turnsOf(session.conversationId).length >= 2, "the agent's turns");
    await hub.settled();
    return { session, client, device, running, upload };
  }

  /** A WhatsApp person (through the Graph API stand-in) with a profile name, messages and jobs. */
  async function whatsappPerson(who: ReturnType<typeof person>) {
    expect((await graph.whatsappInbound(who.phone, who.text, { name: who.name })).status).toBe(200);
    const conversationId = await eventually(async () => {
      const [row] = await hub.ctx.sql.query<{ id: string }>(
        `SELECT id FROM "Conversation" WHERE channel = 'whatsapp' AND contact = $1`,
        [who.phone],
      );
      return row?.id;
    }, "the WhatsApp conversation");
    await eventually(() => agent.turnsOf(conversationId).length >= 1, "the message's turn");
    const running = await jobsOf(conversationId, who);
    await eventually(() => agent.turnsOf(conversationId).length >= 2, "the agent's turns");
    await hub.settled();
    await eventually(() => graph.sent.some((message) => message.to === who.phone), "a reply on WhatsApp");
    return { conversationId, running };
  }

  it("a widget conversation: nothing of the person is left in any table, the tombstone is", async () => {
    const who = person();
    const { session, device } = await widgetPerson(who);
    // The team's private note about the person (src/team/notes.ts).
    const noted = await hub.api(
      "POST",
      `/v1/conversations/${session.conversationId}/notes`,
      { text: who.note },
      CONSOLE_API_KEY,
    );
    expect(noted.status).toBe(201);
    const needles = [who.text, who.name, who.reason, who.result, who.progress, who.file, device, who.note];
    // The search finds the person before the erasure: it would find what an erasure left behind.
    expect(await foundAnywhere(needles)).toEqual(
      expect.arrayContaining([
        `Message: ${who.text}`,
        `Conversation: ${who.name}`,
        `Job: ${who.reason}`,
        `JobProgress: ${who.progress}`,
        `TurnInput: ${who.text}`,
        `Upload: ${who.file}`,
        `PushDevice: ${device}`,
        `ConversationNote: ${who.note}`,
      ]),
    );

    const erased = await asConsole("POST", `/v1/conversations/${session.conversationId}/erase`, {
      reason: "the person asked (ticket 1234)",
    });
    expect(erased.status).toBe(200);
    expect(erased.body).toEqual({
      erasure: {
        conversationId: session.conversationId,
        channel: "web",
        erasedAt: expect.any(String),
        by: "console",
        keyId: expect.stringMatching(/^CONSOLE_API_KEY:[0-9a-f]{12}$/),
        reason: "the person asked (ticket 1234)",
      },
    });
    expect(JSON.stringify(erased.body)).not.toContain(CONSOLE_API_KEY);

    expect(await foundAnywhere(needles)).toEqual([]);
    for (const table of ["Message", "Job", "TurnInput", "Upload", "PushDevice"]) {
      const [row] = await hub.ctx.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${table}" WHERE "conversationId" = $1::uuid`,
        [session.conversationId],
      );
      expect(row!.n, table).toBe(0);
    }
    const conversation = await hub.db.conversation.findUniqueOrThrow({ where: { id: session.conversationId } });
    expect(conversation).toMatchObject({
      contact: `erased:${session.conversationId}`,
      name: null,
      userId: null,
      humanAgent: null,
      erasure: { by: "console", keyId: erased.body.erasure.keyId, reason: "the person asked (ticket 1234)" },
    });
    expect(conversation.erasedAt?.toISOString()).toBe(erased.body.erasure.erasedAt);
    const events = await hub.db.hubEvent.findMany({ where: { conversationId: session.conversationId } });
    expect(events).toEqual([
      expect.objectContaining({
        type: "conversation.erased",
        channel: "web",
        payload: {
          conversationId: session.conversationId,
          channel: "web",
          erasedAt: erased.body.erasure.erasedAt,
          by: "console",
        },
      }),
    ]);

    // The timeline is the tombstone alone.
    const timeline = await hub.api("GET", `/v1/conversations/${session.conversationId}/timeline`);
    expect(timeline.status).toBe(200);
    expect(timeline.body).toMatchObject({ messages: [], held: [], jobs: [] });
    expect(timeline.body.conversation).toMatchObject({ name: null, erasure: erased.body.erasure });
    expect(JSON.stringify(timeline.body)).not.toContain(who.name);
  });

  it("a WhatsApp conversation: its webhook deliveries go too, and the person writing again starts a new conversation", async () => {
    const who = person();
    const other = person();
    const { conversationId } = await whatsappPerson(who);
    // Someone else on the same number of the hub: nothing of theirs goes.
    const kept = await whatsappPerson(other);
    expect(await foundAnywhere([who.phone, who.text, who.name])).toEqual(
      expect.arrayContaining([`WebhookEvent: ${who.phone}`, `WebhookEvent: ${who.text}`, `Conversation: ${who.phone}`]),
    );

    const erased = await hub.api("POST", `/v1/conversations/${conversationId}/erase`);
    expect(erased.status).toBe(200);
    expect(erased.body.erasure).toEqual({
      conversationId,
      channel: "whatsapp",
      erasedAt: expect.any(String),
      by: "agent",
      keyId: expect.stringMatching(/^HUB_API_KEY:[0-9a-f]{12}$/),
    });
    expect(await foundAnywhere([who.phone, who.text, who.name, who.reason, who.result, who.progress])).toEqual([]);
    expect(await foundAnywhere([other.phone, other.text, other.name])).toEqual(
      expect.arrayContaining([`WebhookEvent: ${other.phone}`, `Message: ${other.text}`, `Conversation: ${other.name}`]),
    );
    expect((await hub.api("GET", `/v1/conversations/${kept.conversationId}/messages`)).body.messages).not.toEqual([]);

    // The same person writes again: a new conversation, the tombstone untouched.
    expect((await graph.whatsappInbound(who.phone, "hello again", { name: who.name })).status).toBe(200);
    const fresh = await eventually(async () => {
      const [row] = await hub.ctx.sql.query<{ id: string }>(
        `SELECT id FROM "Conversation" WHERE channel = 'whatsapp' AND contact = $1`,
        [who.phone],
      );
      return row?.id;
    }, "a new conversation");
    expect(fresh).not.toBe(conversationId);
    await hub.settled();
    const tombstone = await hub.api("GET", `/v1/conversations/${conversationId}/messages`);
    expect(tombstone.body.messages).toEqual([]);
  });

  it("what an erased conversation received cannot come back: Meta's redeliveries, reactions and statuses are ignored, a new message starts a new conversation", async () => {
    const who = person();
    const { conversationId } = await whatsappPerson(who);
    const delivery = (needle: string) =>
      structuredClone(graph.webhooks.find((posted) => JSON.stringify(posted.body).includes(needle))!.body) as {
        entry: { changes?: { value: { messages: Record<string, unknown>[] } }[]; messaging?: unknown[] }[];
      };
    const whatsappBody = delivery(who.text);
    const wamid = String(whatsappBody.entry[0]!.changes![0]!.value.messages[0]!.id);
    const reply = graph.sent.find((message) => message.to === who.phone)!;
    // Instagram and Messenger people, with the agent's answer.
    const igPerson = `17${String(Math.floor(Math.random() * 1e14)).padStart(14, "0")}`;
    const fbPerson = `26${String(Math.floor(Math.random() * 1e14)).padStart(14, "0")}`;
    const igText = `${who.text} on instagram`;
    const fbText = `${who.text} on messenger`;
    expect((await graph.instagramInbound(igPerson, igText)).status).toBe(200);
    const fbMid = (await graph.messengerInbound(fbPerson, fbText)).id;
    const conversationOf = (channel: string, contact: string) =>
      hub.ctx.sql
        .query<{ id: string }>(`SELECT id FROM "Conversation" WHERE channel = $1 AND contact = $2`, [channel, contact])
        .then((rows) => rows[0]?.id);
    const igConversation = await eventually(() => conversationOf("instagram", igPerson), "the Instagram conversation");
    const fbConversation = await eventually(() => conversationOf("messenger", fbPerson), "the Messenger conversation");
    await eventually(
      () => agent.turnsOf(igConversation).length > 0 && agent.turnsOf(fbConversation).length > 0,
      "the agent's turns",
    );
    await hub.settled();
    const instagramBody = delivery(igText);
    const messengerBody = delivery(fbText);
    for (const id of [conversationId, igConversation, fbConversation])
      expect((await hub.api("POST", `/v1/conversations/${id}/erase`)).status).toBe(200);
    const sentBefore = graph.sent.length;
    const ignoredBefore = await erasedIgnored();

    // Meta redelivers each delivery as it was, and the person reacts to the erased message; Meta reports the
    // erased reply read.
    const reaction = structuredClone(whatsappBody);
    const { timestamp } = reaction.entry[0]!.changes![0]!.value.messages[0]!;
    reaction.entry[0]!.changes![0]!.value.messages[0] = {
      from: who.phone,
      id: `${wamid}-reaction`,
      timestamp,
      type: "reaction",
      reaction: { message_id: wamid, emoji: "\u2764\ufe0f" },
    };
    const fbReaction = structuredClone(messengerBody);
    fbReaction.entry[0]!.messaging = [
      {
        sender: { id: fbPerson },
        recipient: { id: graph.pageId },
        timestamp: Date.now(),
        reaction: { mid: fbMid, action: "react", emoji: "\u2764\ufe0f", reaction: "love" },
      },
    ];
    for (const body of [whatsappBody, whatsappBody, instagramBody, messengerBody, reaction, fbReaction])
      expect(await graph.postWebhook(body)).toBe(200);
    expect(await graph.whatsappStatus(reply.id, "read")).toBe(200);
    await eventually(async () => {
      const [row] = await hub.ctx.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "WebhookEvent" WHERE "processedAt" IS NULL`,
      );
      return row!.n === 0;
    }, "the redeliveries processed");
    await hub.settled();

    // Nothing came back: no conversation of theirs, nothing of theirs anywhere, nothing sent to them.
    expect(await conversationOf("whatsapp", who.phone)).toBeUndefined();
    expect(await conversationOf("instagram", igPerson)).toBeUndefined();
    expect(await conversationOf("messenger", fbPerson)).toBeUndefined();
    expect(await foundAnywhere([who.phone, who.text, who.name, igPerson, fbPerson])).toEqual([]);
    expect(graph.sent.length).toBe(sentBefore);
    // Each counted as ignored, with its reason.
    expect(await erasedIgnored()).toEqual({
      whatsapp: ignoredBefore.whatsapp + 4,
      instagram: ignoredBefore.instagram + 1,
      messenger: ignoredBefore.messenger + 2,
    });

    // The person writing anew is a new conversation, answered.
    expect((await graph.whatsappInbound(who.phone, "hello again", { name: who.name })).status).toBe(200);
    const fresh = await eventually(() => conversationOf("whatsapp", who.phone), "a new conversation");
    expect(fresh).not.toBe(conversationId);
    await eventually(() => agent.turnsOf(fresh).length > 0, "the agent's turn");
    await hub.settled();
    expect(graph.sent.length).toBeGreaterThan(sentBefore);
  });

  /** hub_meta_events_ignored_total{reason="erased_message"}, per Meta channel. */
  async function erasedIgnored(): Promise<Record<"whatsapp" | "instagram" | "messenger", number>> {
    const text = await (await fetch(`${hub.url}/metrics`)).text();
    const count = (channel: string) =>
      Number(
        new RegExp(`hub_meta_events_ignored_total\\{channel="${channel}",reason="erased_message"\\} (\\d+)`).exec(
          text,
        )?.[1] ?? 0,
      );
    return { whatsapp: count("whatsapp"), instagram: count("instagram"), messenger: count("messenger") };
  }

  it("erasing again answers the same tombstone and writes no second event; bad requests are named", async () => {
    const id = await hub.conversation("web", `erase-twice-${randomUUID()}`);
    const first = await hub.api("POST", `/v1/conversations/${id}/erase`, { reason: "asked" });
    expect(first.status).toBe(200);
    // Another key, another reason: the first erasure stands.
    const again = await asConsole("POST", `/v1/conversations/${id}/erase`, { reason: "asked twice" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await hub.db.hubEvent.count({ where: { conversationId: id, type: "conversation.erased" } })).toBe(1);
    // A message that was already on its way in when the conversation was erased: erasing again removes it.
    await hub.ctx.sql.query(
      `INSERT INTO "Message" (id, "conversationId", role, text, "createdAt", "updatedAt")
       VALUES ($1::uuid, $2::uuid, 'user', 'a straggler', now(), now())`,
      [randomUUID(), id],
    );
    const third = await hub.api("POST", `/v1/conversations/${id}/erase`);
    expect(third.body).toEqual(first.body);
    expect(await hub.db.message.count({ where: { conversationId: id } })).toBe(0);
    expect(await hub.db.hubEvent.count({ where: { conversationId: id, type: "conversation.erased" } })).toBe(1);

    // Two at once: one erasure, one event.
    const racing = await hub.conversation("web", `erase-race-${randomUUID()}`);
    const answers = await Promise.all(
      [HUB_API_KEY, CONSOLE_API_KEY, HUB_API_KEY].map((key) =>
        hub.api("POST", `/v1/conversations/${racing}/erase`, undefined, key),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(new Set(answers.map((answer) => JSON.stringify(answer.body))).size).toBe(1);
    expect(await hub.db.hubEvent.count({ where: { conversationId: racing, type: "conversation.erased" } })).toBe(1);

    const unknown = await hub.api("POST", `/v1/conversations/${randomUUID()}/erase`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("not_found");
    const malformed = await hub.api("POST", `/v1/conversations/not-an-id/erase`);
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details).toEqual([{ field: "id", message: expect.any(String) }]);
    const live = await hub.conversation("web", `erase-bad-${randomUUID()}`);
    const extra = await hub.api("POST", `/v1/conversations/${live}/erase`, { reason: "x", everything: true });
    expect(extra.status).toBe(400);
    expect(extra.body.error.details).toEqual([{ field: "everything", message: "unknown field" }]);
    const badReason = await hub.api("POST", `/v1/conversations/${live}/erase`, { reason: 42 });
    expect(badReason.status).toBe(400);
    expect(badReason.body.error.details).toEqual([expect.objectContaining({ field: "reason" })]);
    const noKey = await hub.api("POST", `/v1/conversations/${live}/erase`, undefined, "wrong-key");
    expect(noKey.status).toBe(401);
    // None of those erased it.
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: live } })).erasedAt).toBeNull();
  });

  it("after erasure a late result is answered 410 and never delivered; nothing more is taken for it", async () => {
    const who = person();
    const { session, client, running } = await widgetPerson(who);
    const progressBefore = client.progress.length;
    const messagesBefore = client.messages.length;
    const erased = await hub.api("POST", `/v1/conversations/${session.conversationId}/erase`);
    expect(erased.status).toBe(200);
    // The open socket is closed, and the token opens nothing any more.
    await eventually(() => !client.socket.connected, "the widget socket closed");
    const refused = await new Promise<Error>((resolve) => {
      const retry = new WidgetClient(hub.url, { token: session.token });
      retry.socket.once("connect_error", (error) => (retry.close(), resolve(error)));
    });
    expect(refused.message).toBe("erased");

    const late = await postCallback(backend.job(running).callbackUrl, { result: "ok", message: who.result });
    expect(late.status).toBe(410);
    expect(late.body).toEqual({ error: { code: "erased", message: expect.stringContaining("erased") } });
    const progress = await postCallback(backend.job(running).callbackUrl, { progress: who.progress });
    expect(progress.status).toBe(410);
    // An unknown job is still 404: the two are told apart.
    const forged = backend.job(running).callbackUrl.replace(/\/callbacks\/.*/, "/callbacks/abc.def");
    expect((await postCallback(forged, { result: "ok" })).status).toBe(404);
    await hub.settled();
    expect(await foundAnywhere([who.result, who.progress, who.text])).toEqual([]);
    expect(client.progress.length).toBe(progressBefore);
    expect(client.messages.length).toBe(messagesBefore);
    expect(await hub.db.message.count({ where: { conversationId: session.conversationId } })).toBe(0);

    const id = session.conversationId;
    const toolCall = await hub.api("POST", `/v1/conversations/${id}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "more", area: "Ñuñoa" },
    });
    expect(toolCall.status).toBe(410);
    expect(toolCall.body.error.code).toBe("erased");
    expect((await hub.api("POST", `/v1/conversations/${id}/messages`, { text: "hello?" })).status).toBe(410);
    expect((await asConsole("POST", `/v1/conversations/${id}/takeover`, { agent: "h1" })).status).toBe(410);
    expect((await asConsole("POST", `/v1/conversations/${id}/human-messages`, { text: "hi" })).status).toBe(410);
    expect((await asConsole("POST", `/v1/conversations/${id}/close`)).status).toBe(410);
    const upload = await fetch(`${hub.url}/widget/uploads`, {
      method: "POST",
      headers: { Authorization: `Bearer ${session.token}`, "Content-Type": "image/png" },
      body: randomBytes(10),
    });
    expect(upload.status).toBe(410);
    const device = await fetch(`${hub.url}/widget/devices`, {
      method: "POST",
      headers: { Authorization: `Bearer ${session.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ platform: "ios", token: fcm.device() }),
    });
    expect(device.status).toBe(410);
    expect(await hub.db.message.count({ where: { conversationId: id } })).toBe(0);
    expect(await hub.db.upload.count({ where: { conversationId: id } })).toBe(0);
    expect(await hub.db.pushDevice.count({ where: { conversationId: id } })).toBe(0);
    // The same visitor asking for a session again gets a new conversation, made when they write (the id their
    // conversation would be given is the erased one's: another is chosen).
    const next = await openSession(hub.url, { visitorId: session.visitorId, start: false });
    expect(next).toMatchObject({ status: 201 });
    expect(next.conversationId).not.toBe(id);
    const over = await WidgetClient.connect(hub.url, { token: next.token });
    clients.push(over);
    expect(await over.send("starting over", randomUUID())).toEqual({ id: expect.any(String) });
    expect(await hub.db.conversation.findUniqueOrThrow({ where: { id: next.conversationId } })).toMatchObject({
      erasedAt: null,
      contact: visitorLabel(session.visitorId),
    });

    // Still refused after a restart: the erased job ids are in the database.
    await hub.restart();
    const afterRestart = await postCallback(backend.job(running).callbackUrl, { result: "ok", message: who.result });
    expect(afterRestart.status).toBe(410);
  });

  it("hub erase by conversation and by contact, with clear words for what is already erased or matches nothing", async () => {
    const who = person();
    const first = await whatsappPerson(who);
    // A second conversation of the same number, on a conversation the agent runtime created for it.
    const second = await hub.api("POST", "/v1/conversations", { channel: "web", contact: who.phone });
    const one = await hub.conversation("web", `cli-one-${randomUUID()}`);
    await hub.api("POST", `/v1/conversations/${one}/messages`, { text: `for ${who.name}` });
    await hub.settled();

    const runs: Record<string, CommandRun> = {};
    const commands = async () => {
      const env = hub.siblingEnv({});
      runs.one = await hubCommand(["erase", "--conversation", one, "--reason", "asked by phone"], env);
      runs.again = await hubCommand(["erase", "--conversation", one], env);
      runs.contact = await hubCommand(["erase", "--contact", `whatsapp:+${who.phone}`], env);
      runs.none = await hubCommand(["erase", "--contact", `whatsapp:${who.phone}`], env);
      runs.unknown = await hubCommand(["erase", "--conversation", randomUUID()], env);
      runs.malformed = await hubCommand(["erase", "--conversation", "nope"], env);
      runs.badChannel = await hubCommand(["erase", "--contact", "fax:123"], env);
      runs.both = await hubCommand(["erase", "--conversation", one, "--contact", `web:${who.phone}`], env);
      runs.flag = await hubCommand(["erase", "--everything"], env);
      runs.nothing = await hubCommand(["erase"], env);
    };
    // The embedded database belongs to the hub that runs on it: the command works on it while none does.
    if (database === "embedded") {
      const held = await hubCommand(["erase", "--conversation", one], hub.siblingEnv({}));
      expect(held.code).toBe(1);
      expect(held.stderr).toContain("erase through that hub's API (POST /v1/conversations/{id}/erase)");
      await hub.restart(commands);
    } else await commands();

    expect(runs.one).toMatchObject({ code: 0, stderr: "" });
    expect(runs.one!.stdout).toMatch(new RegExp(`^erased ${one} \\(web\\) at \\S+\\n$`));
    expect(runs.again).toMatchObject({ code: 0, stderr: "" });
    expect(runs.again!.stdout).toContain(`${one} was already erased`);
    expect(runs.again!.stdout).toContain("by cli (asked by phone): nothing to do");
    expect(runs.contact).toMatchObject({ code: 0, stderr: "" });
    expect(runs.contact!.stdout).toContain(`erased ${first.conversationId} (whatsapp)`);
    expect(runs.contact!.stdout).not.toContain(second.body.conversation.id);
    expect(runs.none!.code).toBe(1);
    expect(runs.none!.stderr).toBe(
      `hub: no conversation of whatsapp:${who.phone} to erase (none, or all already erased)\n`,
    );
    expect(runs.unknown!.code).toBe(1);
    expect(runs.unknown!.stderr).toMatch(/^hub: no conversation [0-9a-f-]{36}\n$/);
    expect(runs.malformed!.code).toBe(1);
    expect(runs.malformed!.stderr).toContain("--conversation takes a conversation id");
    expect(runs.badChannel!.code).toBe(1);
    expect(runs.badChannel!.stderr).toContain("--contact takes <channel>:<contact>");
    expect(runs.both!.code).toBe(1);
    expect(runs.both!.stderr).toContain("--conversation and --contact cannot go together");
    expect(runs.flag!.code).toBe(2);
    expect(runs.flag!.stderr).toContain("Unknown option '--everything'");
    expect(runs.nothing!.code).toBe(1);
    expect(runs.nothing!.stderr).toContain("hub erase needs --conversation <id> or --contact <channel>:<contact>");

    const tombstone = await hub.db.conversation.findUniqueOrThrow({ where: { id: one } });
    expect(tombstone.erasure).toEqual({ by: "cli", reason: "asked by phone" });
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: first.conversationId } })).erasure).toEqual({
      by: "cli",
    });
    // The web conversation that only carries the number as its contact is another channel's: left as it was.
    expect(
      (await hub.db.conversation.findUniqueOrThrow({ where: { id: second.body.conversation.id } })).erasedAt,
    ).toBeNull();
    expect(await hub.db.hubEvent.count({ where: { conversationId: one, type: "conversation.erased" } })).toBe(1);
    expect(await foundAnywhere([who.text, who.name, who.reason])).toEqual([]);
    // Eleven commands, each a process of its own, and on the embedded database a restart: a minute under load.
  }, 180_000);
});

describe("erasure across two hub processes (postgresql)", () => {
  let backend: ToolBackend;
  let hub: TestHub;

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await TestHub.start({ tools: { match_therapists: matchTherapists } });
  });
  afterAll(async () => {
    await hub?.stop();
    await backend?.stop();
  });

  it("erased on one process, the late result posted to the other is answered 410 and never delivered", async () => {
    const sibling = spawnHub(
      hub.siblingEnv({ PORT: "0", LOG_LEVEL: "warn", CLINIC_API: backend.url, CLINIC_API_KEY: TOOL_KEY }),
    );
    try {
      await sibling.waitFor("chat-delivery-hub is running");
      const siblingUrl = sibling.url();
      const id = await hub.conversation("web", `two-processes-${randomUUID()}`);
      const started = await apiCall(siblingUrl, "POST", `/v1/conversations/${id}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: "two processes", area: "Ñuñoa" },
      });
      expect(started.status).toBe(202);
      const jobId = started.body.job.id as string;
      const erased = await hub.api("POST", `/v1/conversations/${id}/erase`);
      expect(erased.status).toBe(200);
      const callback = backend.job(jobId).callbackUrl;
      expect(new URL(callback).origin).toBe(new URL(siblingUrl).origin);
      const late = await postCallback(callback, { result: "ok", message: "late two-processes result" });
      expect(late.status).toBe(410);
      expect((late.body as { error: { code: string } }).error.code).toBe("erased");
      expect(await hub.db.message.count({ where: { conversationId: id } })).toBe(0);
      expect(await hub.db.job.count({ where: { id: jobId } })).toBe(0);
      const again = await apiCall(siblingUrl, "POST", `/v1/conversations/${id}/erase`);
      expect(again.body).toEqual(erased.body);
    } finally {
      await sibling.stop();
    }
  });
});
