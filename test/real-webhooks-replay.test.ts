// 117 real webhook bodies from other projects (WhatsApp, Instagram, Messenger), adapted as their SOURCES.md
// says, signed, posted to the running hub, then posted all again (Meta's retries), then once more batched.
// For each file, the outcome the inbound table of docs/operations.md promises: the person's messages recorded once and
// answered once, edits and deletions applied to the message they name, statuses on the right message,
// echoes and standby messages recorded but never answered, other accounts' deliveries acknowledged and
// left alone, Messenger answered — and every delivery answered 200.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph } from "./support/fake-graph.js";
import {
  batch,
  loadRealWebhooks,
  realWebhooksAvailable,
  realWebhooksDir,
  withInstagramAccount,
  withPhoneNumberId,
  type JsonObject,
  type RealWebhook,
  type WebhookBody,
} from "./support/real-webhooks.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";

const APP_SECRET = "app-secret-for-replay";
const NUMBER = "4000000001";
const OTHER_NUMBER = "4000000009";
const IG = "17841400000000301";
const OTHER_IG = "17841400000000309";
const PAGE = "100000000000301";
const STATUS_TARGETS = ["A", "B", "C", "D", "E", "F", "G", "H"];

const available = realWebhooksAvailable();
if (!available) console.warn(`real webhooks not found in ${realWebhooksDir()}: the replay test is skipped`);

type Json = Record<string, unknown>;
const obj = (value: unknown): Json =>
  value && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {};
const arr = (value: unknown): Json[] => (Array.isArray(value) ? value.map(obj) : []);

/** What the fixture itself says each event is, read from Meta's shapes (not through the hub's parser). */
function eventsOf(file: RealWebhook) {
  const out: { kind: string; id: string; target?: string }[] = [];
  for (const entry of file.body.entry) {
    for (const change of arr(entry.changes)) {
      const value = obj(change.value);
      for (const m of arr(value.messages)) {
        const type = String(m.type);
        if (type === "reaction")
          out.push({ kind: "reaction", id: String(m.id), target: String(obj(m.reaction).message_id) });
        else if (type === "revoke")
          out.push({ kind: "delete", id: String(m.id), target: String(obj(m.revoke).original_message_id) });
        else if (type === "edit")
          out.push({ kind: "edit", id: String(m.id), target: String(obj(m.edit).original_message_id) });
        else if (type === "system") out.push({ kind: "record", id: String(m.id) });
        else if (change.field === "messages" && m.id !== undefined && obj(value.metadata).phone_number_id !== undefined)
          out.push({ kind: "input", id: String(m.id) });
      }
      for (const e of arr(value.message_echoes)) {
        const type = String(e.type);
        out.push({ kind: type === "revoke" ? "delete" : type === "edit" ? "edit" : "echo", id: String(e.id) });
      }
      for (const s of arr(value.statuses)) out.push({ kind: "status", id: String(s.id) });
    }
    for (const item of arr(entry.messaging)) {
      const message = obj(item.message);
      if (item.message === undefined) continue;
      if (message.is_deleted === true)
        out.push({ kind: "delete", id: String(message.mid), target: String(message.mid) });
      else if (message.is_echo === true) out.push({ kind: "echo", id: String(message.mid) });
      else out.push({ kind: "input", id: String(message.mid) });
    }
    for (const item of arr(entry.standby)) {
      const message = obj(item.message);
      if (message.mid !== undefined)
        out.push({ kind: message.is_echo === true ? "echo" : "standby", id: String(message.mid) });
    }
  }
  return out;
}

describe.skipIf(!available)("replaying real Meta webhooks", () => {
  let graph: FakeGraph;
  let hub: TestHub;
  let agent: AgentRuntime;
  let files: RealWebhook[];
  const answers: { file: string; status: number }[] = [];
  const targets: Record<string, string> = {};
  /** The hub's own id of each target's message (a 131047 takes its wamid away to send it again). */
  const targetIds: Record<string, string> = {};

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    graph = await new FakeGraph({
      appSecret: APP_SECRET,
      phoneNumberId: NUMBER,
      otherPhoneNumberIds: [OTHER_NUMBER],
      igAccountId: IG,
      otherIgAccountIds: [OTHER_IG],
      pageId: PAGE,
    }).start();
    hub = await TestHub.start({
      env: {
        AGENT_URL: agent.url,
        AGENT_SECRET,
        TURN_RETRY_BASE_MS: "150",
        META_APP_SECRET: APP_SECRET,
        WA_PHONE_NUMBER_ID: NUMBER,
        WA_ACCESS_TOKEN: graph.waToken,
        IG_ACCOUNT_ID: IG,
        IG_ACCESS_TOKEN: graph.igToken,
        FB_PAGE_ID: PAGE,
        FB_PAGE_ACCESS_TOKEN: graph.pageToken,
        GRAPH_API_URL: graph.url,
        IG_GRAPH_API_URL: graph.url,
        GRAPH_API_VERSION: graph.version,
        META_STATUS_WAIT_MS: "300",
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;

    // The status files point at messages the hub really sent: one reply per target letter.
    for (const letter of STATUS_TARGETS) {
      const who = `5698800000${STATUS_TARGETS.indexOf(letter)}`;
      // A few seconds before the statuses (Meta's times are in seconds): a 131047 then closes the window.
      await graph.whatsappInbound(who, `hola ${letter}`, { at: new Date(Date.now() - 5000) });
      targets[letter] = (await eventually(() => graph.sent.find((m) => m.to === who), `the reply for ${letter}`)).id;
      targetIds[letter] = (
        await eventually(() => hub.db.message.findUnique({ where: { externalId: targets[letter] } }))
      ).id;
    }
    files = loadRealWebhooks({
      whatsappPhoneNumberId: NUMBER,
      instagramAccountId: IG,
      pageId: PAGE,
      now: new Date(),
      run: `r${Date.now()}`,
      statusTargets: targets,
    });
    // Statuses of one message in the order Meta sent them.
    const ordered = [...files].sort((a, b) => (a.statusTarget?.order ?? 0) - (b.statusTarget?.order ?? 0));
    const replay = [...files.filter((f) => !f.statusTarget?.order), ...ordered.filter((f) => f.statusTarget?.order)];
    // The people of the fixtures wrote just now: their windows are open at the fake too.
    for (const file of files) {
      const channel = file.channel === "page" ? "messenger" : file.channel;
      for (const contact of file.contacts) graph.setLastInbound(channel, contact, new Date());
    }
    for (const pass of [1, 2]) {
      for (const file of replay)
        answers.push({ file: `${file.file} (pass ${pass})`, status: await graph.postWebhook(file.body) });
      await settle();
    }
    // Meta batches: every WhatsApp delivery once more, in one body.
    const whatsapp = files.filter((f) => f.object === "whatsapp_business_account" && !f.keepIds).map((f) => f.body);
    answers.push({ file: "batched WhatsApp", status: await graph.postWebhook(batch(whatsapp)) });
    await settle();
  }, 180_000);
  afterAll(async () => {
    await hub?.stop();
    await graph?.stop();
    await agent?.stop();
  });

  async function settle(): Promise<void> {
    await eventually(
      async () => (await hub.db.webhookEvent.count({ where: { processedAt: null } })) === 0,
      "every delivery processed",
      30_000,
    );
    do {
      await graph.settled();
      await hub.settled();
    } while (!graph.idle);
  }

  const message = (externalId: string) => hub.db.message.findUnique({ where: { externalId } });
  const byFile = (name: string) => files.find((f) => f.file === name)!;

  it("answers every delivery 200, and processes every one", async () => {
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(answers).toHaveLength(files.length * 2 + 1);
    expect(await hub.db.webhookEvent.count({ where: { processedAt: null } })).toBe(0);
  });

  it("records each of the person's messages once, with readable text, and answers it exactly once", async () => {
    const inputs = files.flatMap((file) =>
      eventsOf(file)
        .filter((e) => e.kind === "input")
        .map((e) => ({ file, ...e })),
    );
    expect(inputs.length).toBeGreaterThan(60);
    for (const input of inputs) {
      const rows = await hub.db.message.findMany({ where: { externalId: input.id } });
      expect(rows, `${input.file.file}: ${input.id}`).toHaveLength(1);
      expect(rows[0]!.role).toBe("user");
      expect(rows[0]!.text?.trim(), `${input.file.file}: text`).toBeTruthy();
      const turnInputs = await hub.db.turnInput.findMany({ where: { messageId: rows[0]!.id } });
      expect(turnInputs, `${input.file.file}: one input`).toHaveLength(1);
    }
    // Answered once, whatever the retries and the batch: each input by one committed reply (or withdrawn
    // when the person deleted it), and every committed reply answers inputs of its own turn. (The agent
    // may be asked again when a message is deleted while it composes: that reply is then discarded.)
    const conversations = [
      ...new Set(
        (await hub.db.message.findMany({ where: { externalId: { in: inputs.map((i) => i.id) } } })).map(
          (m) => m.conversationId,
        ),
      ),
    ];
    const turnInputs = await hub.db.turnInput.findMany({
      where: { conversationId: { in: conversations }, kind: "user_message" },
    });
    for (const input of turnInputs) {
      expect(["answered", "superseded", "awaiting_reply"], input.key).toContain(input.state);
      if (input.state === "superseded") expect(input.reason).toBe("deleted");
    }
    const answeredBy = new Set(turnInputs.map((input) => input.turnId).filter(Boolean));
    const replies = await hub.db.message.findMany({ where: { conversationId: { in: conversations }, role: "agent" } });
    for (const reply of replies) expect(answeredBy.has(reply.turnId), reply.text ?? "").toBe(true);
    // Every reply went out once: no wamid twice, no text sent twice to one person in one conversation turn.
    const ids = graph.sent.map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("records echoes and standby messages without answering them", async () => {
    for (const file of files) {
      for (const event of eventsOf(file).filter((e) => e.kind === "echo" || e.kind === "standby")) {
        const row = await message(event.id);
        expect(row, `${file.file}: ${event.id}`).not.toBeNull();
        expect(row!.role).toBe(event.kind === "echo" ? "human" : "user");
        expect(await hub.db.turnInput.count({ where: { messageId: row!.id } })).toBe(0);
      }
    }
  });

  it("applies edits and deletions to the message they name, and withholds a deleted text from the agent", async () => {
    const image = await message(byFile("wa-pywa-edited-image.json").linkedTo!.id);
    expect(image).toMatchObject({ text: "[image] Updated image caption" });
    expect(image!.edits).toEqual([expect.objectContaining({ text: expect.stringContaining("[image]") })]);
    const igEdited = await message(byFile("ig-restfb-message-edit.json").linkedTo!.id);
    expect(igEdited).toMatchObject({ text: "hello, world!" });

    const revoked = await message(byFile("wa-pywa-deleted-revoke.json").linkedTo!.id);
    expect(revoked!.deletedAt).not.toBeNull();
    const unsent = await message(byFile("ig-chatwoot-unsend.json").linkedTo!.id);
    expect(unsent!.deletedAt).not.toBeNull();
    // The people write again: the agent's history for their next turn leaves the deleted messages out.
    const asked = agent.turns.length;
    await graph.whatsappInbound(
      (await hub.db.conversation.findUniqueOrThrow({ where: { id: revoked!.conversationId } })).contact,
      "una pregunta más",
    );
    await graph.instagramInbound(
      (await hub.db.conversation.findUniqueOrThrow({ where: { id: unsent!.conversationId } })).contact,
      "una pregunta más",
    );
    await eventually(() => agent.turns.length >= asked + 2, "the next turns");
    await settle();
    for (const turn of agent.turns.slice(asked)) {
      expect(turn.history.length).toBeGreaterThan(0);
      const ids = turn.history.map((entry) => entry.id);
      expect(ids).not.toContain(revoked!.id);
      expect(ids).not.toContain(unsent!.id);
    }
    // A deletion or a reaction is never a message of its own.
    for (const file of files) {
      for (const event of eventsOf(file).filter((e) => ["delete", "reaction", "edit"].includes(e.kind))) {
        if (event.id !== event.target) expect(await message(event.id), `${file.file}`).toBeNull();
      }
    }
    // React, then unreact: nothing left on the message.
    expect((await message(byFile("ig-restfb-reaction-react.json").linkedTo!.id))!.reaction).toBeNull();
  });

  it("puts each status on the message it names, never moving it backwards", async () => {
    const status = (letter: string) => hub.db.message.findUniqueOrThrow({ where: { id: targetIds[letter]! } });
    expect((await status("A")).status).toBe("read"); // sent, delivered, read, then "played"
    expect((await status("B")).status).toBe("read");
    expect((await status("C")).status).toBe("read");
    expect(await status("D")).toMatchObject({ status: "failed", statusReason: expect.stringMatching(/^131053/) });
    expect(await status("E")).toMatchObject({ status: "failed", statusReason: expect.stringMatching(/^130472/) });
    // 131047: Meta took it, then said the window had closed; it waits for the person (no template here).
    const f = await status("F");
    expect(f.status).toBe("awaiting_reply");
    expect((await status("G")).status).toBe("read"); // read, then delivered: stays read
    expect((await status("H")).status).toBe("sent");
    const metrics = await (await fetch(`${hub.url}/metrics`)).text();
    expect(
      Number(/hub_meta_statuses_dropped_total\{channel="whatsapp"\} (\d+)/.exec(metrics)?.[1] ?? 0),
    ).toBeGreaterThanOrEqual(2);
  });

  it("answers Messenger, and leaves alone what was sent to another number or account of the app", async () => {
    const messenger = byFile("page-restfb-messenger-quick-reply.json");
    const row = await message(messenger.messageIds[0]!);
    expect(row).toMatchObject({ role: "user", text: "quick reply text (payload: PAYLOAD_QUICK_REPLY)" });
    const conversation = await hub.db.conversation.findUniqueOrThrow({ where: { id: row!.conversationId } });
    expect(conversation).toMatchObject({ channel: "messenger", account: PAGE });
    expect(graph.sent.find((m) => m.channel === "messenger" && m.to === conversation.contact)).toMatchObject({
      from: PAGE,
      text: "you said: quick reply text (payload: PAYLOAD_QUICK_REPLY)",
    });

    const before = graph.attempts.length;
    const elsewhere: WebhookBody[] = [
      withPhoneNumberId(byFile("wa-pywa-text.json").body, OTHER_NUMBER),
      withInstagramAccount(byFile("ig-chatwoot-text.json").body, OTHER_IG),
    ];
    for (const body of elsewhere) expect(await graph.postWebhook(body)).toBe(200);
    await settle();
    expect(await hub.db.conversation.count({ where: { account: { in: [OTHER_NUMBER, OTHER_IG] } } })).toBe(0);
    expect(graph.attempts.length).toBe(before);
    const ids = elsewhere.flatMap((body) =>
      body.entry.flatMap((entry: JsonObject) => [
        ...arr(arr(entry.changes)[0]?.value && obj(arr(entry.changes)[0]!.value).messages).map((m) => String(m.id)),
        ...arr(entry.messaging).map((m) => String(obj(m.message).mid)),
      ]),
    );
    for (const id of ids) expect(await message(id)).toBeNull();
  });
});
