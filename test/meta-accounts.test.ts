// One hub, several Meta accounts (docs/operations.md "Meta webhooks"): two WhatsApp numbers, two Instagram accounts
// and a Facebook page, each with its own token, declared in META_ACCOUNTS. Replies leave from the account
// the person wrote to; a WhatsApp person is one conversation whether Meta names them by number or BSUID;
// edits, deletions and reactions change the message they name; long replies are split, in order.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph } from "./support/fake-graph.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

const APP_SECRET = "app-secret-for-accounts";
const N1 = "3000000001";
const N2 = "3000000002";
const IG1 = "17841400000000101";
const IG2 = "17841400000000102";
const PAGE = "100000000000201";
const HOUR = 3_600_000;

describe("several Meta accounts on one hub", () => {
  let graph: FakeGraph;
  let hub: TestHub;
  let agent: AgentRuntime;
  let backend: ToolBackend;
  let person = 0;
  const nextPerson = () => `5697000${String(++person).padStart(4, "0")}`;

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    graph = await new FakeGraph({
      appSecret: APP_SECRET,
      phoneNumberId: N1,
      otherPhoneNumberIds: [N2],
      igAccountId: IG1,
      otherIgAccountIds: [IG2],
      pageId: PAGE,
      // Each account its own token: a reply sent with another account's token is refused (190).
      tokens: { [N1]: "token-n1", [N2]: "token-n2", [IG1]: "token-ig1", [IG2]: "token-ig2", [PAGE]: "token-page" },
    }).start();
    const accounts = [
      { channel: "whatsapp", id: N1, token: "token-n1" },
      { channel: "whatsapp", id: N2, token: "token-n2" },
      { channel: "instagram", id: IG1, token: "token-ig1" },
      { channel: "instagram", id: IG2, token: "token-ig2" },
      { channel: "messenger", id: PAGE, token: "token-page" },
    ];
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: {
        AGENT_URL: agent.url,
        AGENT_SECRET,
        TURN_RETRY_BASE_MS: "150",
        META_APP_SECRET: APP_SECRET,
        META_ACCOUNTS: JSON.stringify(accounts),
        GRAPH_API_URL: graph.url,
        IG_GRAPH_API_URL: graph.url,
        GRAPH_API_VERSION: graph.version,
        META_STATUS_WAIT_MS: "300",
        // The hub-wide template, with a parameter filled from the result like a tool's.
        WA_TEMPLATE_NAME: "results_ready",
        WA_TEMPLATE_COMPONENTS: JSON.stringify([{ type: "body", parameters: ["$result.message"] }]),
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    await hub?.stop();
    await graph?.stop();
    await agent?.stop();
    await backend?.stop();
  });

  const sentTo = (to: string) => graph.sent.filter((message) => message.to === to);
  const conversationOf = (channel: string, contact: string, account?: string) =>
    eventually(
      () => hub.db.conversation.findFirst({ where: { channel, contact, ...(account ? { account } : {}) } }),
      `the ${channel} conversation of ${contact}`,
    );
  async function settle(): Promise<void> {
    do {
      await graph.settled();
      await hub.settled();
    } while (!graph.idle);
  }
  async function startJob(conversationId: string, reason: string): Promise<string> {
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason, area: "Ñuñoa" },
    });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }
  const metric = async (pattern: RegExp) => {
    const text = await (await fetch(`${hub.url}/metrics`)).text();
    return Number(pattern.exec(text)?.[1] ?? 0);
  };
  const whatsappBody = (account: string, who: string, message: Record<string, unknown>) => ({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "waba",
        changes: [
          {
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: "15550000000", phone_number_id: account },
              contacts: [{ profile: { name: "Ana" }, wa_id: who }],
              messages: [{ from: who, timestamp: String(Math.floor(Date.now() / 1000)), ...message }],
            },
          },
        ],
      },
    ],
  });

  it("the same person writing to two WhatsApp numbers has two conversations, each answered from its own number", async () => {
    const who = nextPerson();
    await graph.whatsappInbound(who, "hola norte", { phoneNumberId: N2 });
    await eventually(() => sentTo(who)[0], "the reply from the second number");
    await graph.whatsappInbound(who, "hola centro", { phoneNumberId: N1 });
    await eventually(() => sentTo(who)[1], "the reply from the first number");
    await settle();
    expect(sentTo(who).map((m) => [m.from, m.text])).toEqual([
      [N2, "you said: hola norte"],
      [N1, "you said: hola centro"],
    ]);
    const north = await conversationOf("whatsapp", who, N2);
    const centre = await conversationOf("whatsapp", who, N1);
    expect(north.id).not.toBe(centre.id);
    // The API and the console show which account a conversation is on.
    const read = await hub.api("GET", `/v1/conversations/${north.id}`);
    expect(read.body.conversation).toMatchObject({ channel: "whatsapp", account: N2, contact: who });
    const listed = await hub.api("GET", "/v1/conversations?channel=whatsapp", undefined, CONSOLE_API_KEY);
    expect(listed.body.conversations.find((c: { id: string }) => c.id === north.id)).toMatchObject({ account: N2 });

    // A late result for the second number's conversation also leaves from it.
    const jobId = await startJob(north.id, "norte");
    await backend.post(jobId, { result: "ok", message: "3 found up north" });
    await eventually(() => sentTo(who)[2], "the result");
    expect(sentTo(who)[2]).toMatchObject({ from: N2, text: "result: 3 found up north" });
    expect(graph.rejected.filter((r) => r.to === who)).toEqual([]);
  });

  it("Instagram: each account answers its own people, with its own token", async () => {
    const who = `igsid-${nextPerson()}`;
    await graph.instagramInbound(who, "hola cuenta dos", { accountId: IG2 });
    const reply = await eventually(() => sentTo(who)[0], "the reply");
    expect(reply).toMatchObject({ channel: "instagram", from: IG2, text: "you said: hola cuenta dos" });
    expect((await conversationOf("instagram", who)).account).toBe(IG2);
  });

  it("a conversation started through the API belongs to the channel's first account, or the one it names; an unknown one is refused", async () => {
    const first = await hub.api("POST", "/v1/conversations", { channel: "whatsapp", contact: nextPerson() });
    expect(first.body.conversation.account).toBe(N1);
    const named = await hub.api("POST", "/v1/conversations", {
      channel: "whatsapp",
      contact: nextPerson(),
      account: N2,
    });
    expect(named.body.conversation.account).toBe(N2);
    const unknown = await hub.api("POST", "/v1/conversations", {
      channel: "whatsapp",
      contact: nextPerson(),
      account: "999",
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details).toEqual([expect.objectContaining({ field: "account" })]);
  });

  describe("Messenger", () => {
    it("answers the person's message inside the window, as a RESPONSE from the page", async () => {
      const psid = `psid-${nextPerson()}`;
      await graph.messengerInbound(psid, "hola página");
      const reply = await eventually(() => sentTo(psid)[0], "the reply");
      expect(reply).toMatchObject({ channel: "messenger", from: PAGE, text: "you said: hola página" });
      expect(reply.tag).toBeUndefined();
    });

    it("a button tap (postback) reaches the agent as its title and payload", async () => {
      const psid = `psid-${nextPerson()}`;
      await graph.messengerPostback(psid, "Get started");
      const reply = await eventually(() => sentTo(psid)[0], "the reply");
      expect(reply.text).toBe("you said: Get started (payload: GET_STARTED)");
    });

    it("outside the window a result waits for the person; a human may answer with the HUMAN_AGENT tag for 7 days", async () => {
      const psid = `psid-${nextPerson()}`;
      await graph.messengerInbound(psid, "¿me avisan?", { at: new Date(Date.now() - 48 * HOUR) });
      const conversation = await conversationOf("messenger", psid);
      await settle();
      expect(graph.attempts.filter((a) => a.to === psid)).toEqual([]);
      const jobId = await startJob(conversation.id, "later");
      await backend.post(jobId, { result: "ok", message: "found" });
      await settle();
      const waiting = await hub.db.message.findMany({ where: { conversationId: conversation.id, role: "agent" } });
      expect(waiting.map((m) => [m.status, m.statusReason])).toEqual([
        ["awaiting_reply", "window_closed_messenger"],
        ["awaiting_reply", "window_closed_messenger"],
      ]);
      const human = await hub.api(
        "POST",
        `/v1/conversations/${conversation.id}/human-messages`,
        { text: "Hola, soy Marta" },
        CONSOLE_API_KEY,
      );
      expect(human.status).toBe(201);
      const sent = await eventually(() => sentTo(psid)[0], "the human's reply");
      expect(sent).toMatchObject({ text: "Hola, soy Marta", tag: "HUMAN_AGENT" });
    });
  });

  describe("a WhatsApp person known by a business-scoped user id", () => {
    it("with only a BSUID: one conversation under it, answered with `recipient`; once Meta gives their number too, the same conversation, answered at the number", async () => {
      const bsuid = `CL.${Date.now()}${person}`;
      const number = nextPerson();
      await graph.whatsappInbound({ userId: bsuid }, "sin número");
      const first = await eventually(() => sentTo(bsuid)[0], "the reply to the BSUID");
      expect(first).toMatchObject({ from: N1, text: "you said: sin número" });
      const conversation = await conversationOf("whatsapp", bsuid);
      expect(conversation.userId).toBe(bsuid);

      await graph.whatsappInbound({ waId: number, userId: bsuid }, "ahora con número");
      const second = await eventually(() => sentTo(number)[0], "the reply to the number");
      expect(second.text).toBe("you said: ahora con número");
      await settle();
      const all = await hub.db.conversation.findMany({ where: { channel: "whatsapp", account: N1, userId: bsuid } });
      expect(all.map((c) => [c.id, c.contact])).toEqual([[conversation.id, number]]);
      expect(await hub.db.message.count({ where: { conversationId: conversation.id, role: "user" } })).toBe(2);

      // A later message naming only the BSUID still finds that conversation.
      await graph.whatsappInbound({ userId: bsuid }, "otra vez sin número");
      await eventually(() => sentTo(number)[1], "the third reply, at the number");
      expect(await hub.db.conversation.count({ where: { userId: bsuid } })).toBe(1);
    });
  });

  describe("changes to earlier messages", () => {
    /** A person who wrote once and was answered, then taken over by a human: what they say next waits. */
    async function answeredThenHeld(who: string, first: string) {
      await graph.whatsappInbound(who, first);
      await eventually(() => sentTo(who)[0], "the first reply");
      await settle();
      const conversation = await conversationOf("whatsapp", who);
      await hub.api("POST", `/v1/conversations/${conversation.id}/takeover`, { agent: "h1" }, CONSOLE_API_KEY);
      return conversation;
    }
    /** The turns of a conversation, and what was said to the agent in them (a text, or the input's type). */
    const turnsOf = (conversationId: string) => {
      const turns = agent.turns.filter((t) => t.conversation.id === conversationId);
      const said = turns.flatMap((t) => t.inputs.map((i) => (i.type === "user_message" ? i.text : i.type)));
      return { turns, said };
    };

    it("an edit replaces the text (the old one kept), a reaction is recorded on the message, an older one arriving late changes nothing; neither runs a turn", async () => {
      const who = nextPerson();
      const { id } = await graph.whatsappInbound(who, "nos vemos a las 5");
      await eventually(() => sentTo(who)[0], "the reply");
      await settle();
      const conversation = await conversationOf("whatsapp", who);
      const turnsBefore = agent.turns.filter((t) => t.conversation.id === conversation.id).length;

      const edit = whatsappBody(N1, who, {
        id: `wamid.edit-${who}`,
        type: "edit",
        edit: { original_message_id: id, message: { type: "text", text: { body: "nos vemos a las 6" } } },
      });
      expect(await graph.postWebhook(edit)).toBe(200);
      expect(await graph.postWebhook(edit)).toBe(200); // Meta's retry changes nothing more
      const reply = sentTo(who)[0]!;
      const reaction = whatsappBody(N1, who, {
        id: `wamid.react-${who}`,
        type: "reaction",
        reaction: { message_id: reply.id, emoji: "👍" },
      });
      expect(await graph.postWebhook(reaction)).toBe(200);
      await settle();

      const edited = await hub.db.message.findUniqueOrThrow({ where: { externalId: id } });
      expect(edited.text).toBe("nos vemos a las 6");
      expect(edited.editedAt).not.toBeNull();
      expect(edited.edits).toEqual([expect.objectContaining({ text: "nos vemos a las 5" })]);
      expect((await hub.db.message.findUniqueOrThrow({ where: { externalId: reply.id } })).reaction).toBe("👍");
      expect(agent.turns.filter((t) => t.conversation.id === conversation.id)).toHaveLength(turnsBefore);
      expect(sentTo(who)).toHaveLength(1);

      // Withdrawn: the reaction is gone.
      const unreact = whatsappBody(N1, who, {
        id: `wamid.unreact-${who}`,
        type: "reaction",
        reaction: { message_id: reply.id, emoji: "" },
      });
      await graph.postWebhook(unreact);
      await settle();
      expect((await hub.db.message.findUniqueOrThrow({ where: { externalId: reply.id } })).reaction).toBeNull();

      // Meta's deliveries come in any order: a reaction and an edit made a minute ago, arriving only now,
      // leave the later withdrawal and the later text alone; a reaction made after them is applied.
      const secondsAgo = (s: number) => String(Math.floor(Date.now() / 1000) - s);
      const lateReaction = whatsappBody(N1, who, {
        id: `wamid.late-react-${who}`,
        timestamp: secondsAgo(60),
        type: "reaction",
        reaction: { message_id: reply.id, emoji: "😮" },
      });
      const lateEdit = whatsappBody(N1, who, {
        id: `wamid.late-edit-${who}`,
        timestamp: secondsAgo(60),
        type: "edit",
        edit: { original_message_id: id, message: { type: "text", text: { body: "nos vemos a las 4" } } },
      });
      expect(await graph.postWebhook(lateReaction)).toBe(200);
      expect(await graph.postWebhook(lateEdit)).toBe(200);
      await settle();
      expect((await hub.db.message.findUniqueOrThrow({ where: { externalId: reply.id } })).reaction).toBeNull();
      expect((await hub.db.message.findUniqueOrThrow({ where: { externalId: id } })).text).toBe("nos vemos a las 6");
      const laterReaction = whatsappBody(N1, who, {
        id: `wamid.later-react-${who}`,
        timestamp: secondsAgo(-1),
        type: "reaction",
        reaction: { message_id: reply.id, emoji: "❤️" },
      });
      expect(await graph.postWebhook(laterReaction)).toBe(200);
      await settle();
      expect((await hub.db.message.findUniqueOrThrow({ where: { externalId: reply.id } })).reaction).toBe("❤️");
      expect(agent.turns.filter((t) => t.conversation.id === conversation.id)).toHaveLength(turnsBefore);
    });

    it("a deleted message is withheld from the agent: never answered if it was waiting, and left out of the history", async () => {
      const who = nextPerson();
      // While a human has the conversation the person's next message waits (held)…
      const conversation = await answeredThenHeld(who, "primero");
      const { id: secret } = await graph.whatsappInbound(who, "mi clave es 1234");
      await settle();
      expect(
        (await hub.db.turnInput.findFirstOrThrow({ where: { key: { contains: "user:" }, state: "held" } }))
          .conversationId,
      ).toBe(conversation.id);
      // …and the person deletes it before anyone answered.
      const revoke = whatsappBody(N1, who, {
        id: `wamid.revoke-${who}`,
        type: "revoke",
        revoke: { original_message_id: secret },
      });
      expect(await graph.postWebhook(revoke)).toBe(200);
      await settle();
      const deleted = await hub.db.message.findUniqueOrThrow({ where: { externalId: secret } });
      expect(deleted.deletedAt).not.toBeNull();
      const input = await hub.db.turnInput.findFirstOrThrow({ where: { messageId: deleted.id } });
      expect(input).toMatchObject({ state: "superseded", reason: "deleted" });

      await hub.api("POST", `/v1/conversations/${conversation.id}/handback`, undefined, CONSOLE_API_KEY);
      await eventually(() => sentTo(who)[1], "the reply after the hand-back");
      await graph.whatsappInbound(who, "gracias");
      await eventually(() => sentTo(who)[2], "the last reply");
      const { turns, said } = turnsOf(conversation.id);
      expect(said).toEqual(["primero", "handback", "gracias"]);
      for (const turn of turns) expect(JSON.stringify(turn.history)).not.toContain("1234");
      // The history is there, oldest first, with what the person said before (a missing one would pass above).
      const last = turns.at(-1)!.history.map((entry) => entry.text);
      expect(last.indexOf("primero")).toBeGreaterThanOrEqual(0);
      expect(last.indexOf("primero")).toBeLessThan(last.indexOf("gracias"));
    });

    it("a change that comes before the message it names is applied once the message is in; one whose message never comes is dropped after META_STATUS_WAIT_MS", async () => {
      const who = nextPerson();
      // Held by a human, so what the person says waits: a deletion applied late still keeps it from the agent.
      const conversation = await answeredThenHeld(who, "hola");
      const ignored = (reason: string) =>
        metric(new RegExp(`hub_meta_events_ignored_total\\{channel="whatsapp",reason="${reason}"\\} (\\d+)`));
      const ignoredBefore = await ignored("edit_of_unknown_message");
      const at = new Date(Date.now() - 2000);
      const [edited, deleted] = [`wamid.early-edit-${who}`, `wamid.early-delete-${who}`];
      // The edit and the deletion are taken first (this hub's workers take deliveries at once, and Meta's
      // come in any order); the messages they name only after.
      expect(
        await graph.postWebhook(
          whatsappBody(N1, who, {
            id: `wamid.edit-${who}`,
            type: "edit",
            edit: { original_message_id: edited, message: { type: "text", text: { body: "a las 7, no a las 6" } } },
          }),
        ),
      ).toBe(200);
      expect(
        await graph.postWebhook(
          whatsappBody(N1, who, {
            id: `wamid.revoke-${who}`,
            type: "revoke",
            revoke: { original_message_id: deleted },
          }),
        ),
      ).toBe(200);
      expect(
        await graph.postWebhook(
          whatsappBody(N1, who, {
            id: `wamid.lost-${who}`,
            type: "edit",
            edit: { original_message_id: `wamid.never-${who}`, message: { type: "text", text: { body: "?" } } },
          }),
        ),
      ).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await graph.whatsappInbound(who, "a las 6", { id: edited, at });
      await graph.whatsappInbound(who, "mi clave es 4321", { id: deleted, at });
      await settle();

      const edit = await hub.db.message.findUniqueOrThrow({ where: { externalId: edited } });
      expect(edit.text).toBe("a las 7, no a las 6");
      expect(edit.edits).toEqual([expect.objectContaining({ text: "a las 6" })]);
      const gone = await hub.db.message.findUniqueOrThrow({ where: { externalId: deleted } });
      expect(gone.deletedAt).not.toBeNull();
      expect(await hub.db.turnInput.findFirstOrThrow({ where: { messageId: gone.id } })).toMatchObject({
        state: "superseded",
        reason: "deleted",
      });
      // The one whose message never came: retried for the wait, then dropped and counted.
      expect(await ignored("edit_of_unknown_message")).toBe(ignoredBefore + 1);

      await hub.api("POST", `/v1/conversations/${conversation.id}/handback`, undefined, CONSOLE_API_KEY);
      await eventually(() => sentTo(who)[1], "the reply after the hand-back");
      await settle();
      const { turns, said } = turnsOf(conversation.id);
      expect(said).toEqual(["hola", "a las 7, no a las 6", "handback"]);
      for (const turn of turns) expect(JSON.stringify(turn.history)).not.toContain("4321");
    });
  });

  it("a reply longer than the channel allows is split at sentence ends into messages sent in order, none over the limit", async () => {
    const who = nextPerson();
    const sentences = Array.from({ length: 150 }, (_, i) => `Sentence number ${i + 1} of the long answer.`);
    const long = sentences.join(" ");
    expect(long.length).toBeGreaterThan(4096);
    expect(long.length).toBeLessThan(8000);
    await graph.whatsappInbound(who, long.slice(0, 4090));
    await eventually(() => sentTo(who).length >= 2, "two parts");
    await settle();
    const parts = sentTo(who).map((m) => m.text ?? "");
    expect(parts).toHaveLength(2);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(4096);
    expect(parts[0]).toMatch(/\.$/);
    expect(parts.join(" ")).toBe(`you said: ${long.slice(0, 4090)}`);

    const igsid = `igsid-${nextPerson()}`;
    const medium = sentences.slice(0, 50).join(" ");
    await graph.instagramInbound(igsid, medium);
    await eventually(() => sentTo(igsid).length >= 2, "the parts");
    await settle();
    const igParts = sentTo(igsid).map((m) => m.text ?? "");
    expect(igParts).toHaveLength(2);
    for (const part of igParts) expect(part.length).toBeLessThanOrEqual(1000);
    expect(igParts.join(" ")).toBe(`you said: ${medium}`);
  });

  it("the hub-wide template fills its parameters from the result", async () => {
    const who = nextPerson();
    // Started through the API: the person never wrote, so only a template can reach them.
    const created = await hub.api("POST", "/v1/conversations", { channel: "whatsapp", contact: who });
    const jobId = await startJob(created.body.conversation.id as string, "template");
    await backend.post(jobId, { result: "ok", message: "2 therapists found" });
    const template = await eventually(() => sentTo(who).find((m) => m.type === "template"), "the template");
    expect(template.template).toEqual({
      name: "results_ready",
      language: "en",
      components: [{ type: "body", parameters: [{ type: "text", text: "2 therapists found" }] }],
    });
  });

  it("a status for a message the hub never sent waits briefly, then is dropped and counted", async () => {
    const dropped = /hub_meta_statuses_dropped_total\{channel="whatsapp"\} (\d+)/;
    const before = await metric(dropped);
    await graph.whatsappStatus(`wamid.never-sent-${Date.now()}`, "delivered");
    await eventually(async () => (await metric(dropped)) === before + 1, "the status dropped", 10_000);
    await eventually(
      async () => (await hub.db.webhookEvent.count({ where: { processedAt: null } })) === 0,
      "every delivery processed",
    );
  });
});
