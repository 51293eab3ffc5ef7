// Every transition of delivery state (src/delivery/delivery-state.ts, its modules in src/delivery/state/), on
// the real PostgreSQL: what it moves, what it must leave alone (the guards that keep a racing transition from
// undoing another), and the one change event each publishes.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createChanges, type Change } from "../src/delivery/changes.js";
import { metaStatusRules } from "../src/channels/meta/meta-statuses.js";
import type { DeliveryState } from "../src/delivery/delivery-state.js";
import { deliveryState } from "../src/delivery/state/sql-delivery-state.js";
import type { TurnInputRow } from "../src/delivery/rows.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";

describe("delivery state transitions", () => {
  let hub: TestHub;
  let state: DeliveryState;
  const published: Change[] = [];
  const at = new Date("2026-11-30T10:00:00Z");

  beforeAll(async () => {
    hub = await TestHub.start();
    const changes = createChanges();
    changes.subscribe((change) => published.push(change));
    state = deliveryState(hub.ctx.sql, changes, () => at, metaStatusRules);
  });
  afterAll(async () => {
    await hub?.stop();
  });
  beforeEach(() => {
    published.length = 0;
  });

  async function conversation(fields: { channel?: string; control?: string; lastInboundAt?: Date } = {}) {
    return hub.db.conversation.create({
      data: { id: randomUUID(), channel: fields.channel ?? "web", contact: randomUUID(), ...fields },
    });
  }

  /** An input with its timeline entry, as a callback or the person's message commits it. */
  async function input(
    conversationId: string,
    inputState = "pending",
    kind = "tool_result",
    fields: { expiresAt?: Date; payload?: Record<string, string> } = {},
  ): Promise<TurnInputRow> {
    const messageId = randomUUID();
    await hub.db.message.create({
      data: {
        id: messageId,
        conversationId,
        role: kind === "progress" ? "progress" : "tool_result",
        text: "found",
        status: inputState,
      },
    });
    const row = await hub.db.turnInput.create({
      data: {
        id: randomUUID(),
        conversationId,
        key: `test:${randomUUID()}`,
        kind,
        messageId,
        payload: fields.payload ?? {},
        state: inputState,
        expiresAt: fields.expiresAt ?? null,
      },
    });
    return { ...row, seq: row.seq } as unknown as TurnInputRow;
  }

  const inputState = async (id: string) => (await hub.db.turnInput.findUniqueOrThrow({ where: { id } })).state;
  const message = (id: string) => hub.db.message.findUniqueOrThrow({ where: { id } });
  const changedIds = () =>
    published.flatMap((change) => (change.type === "messages" ? change.messages : [])).map((m) => m.id);

  it("holdInputs holds pending inputs and their entries while a human has the conversation, and nothing otherwise", async () => {
    const human = await conversation({ control: "human" });
    const held = await input(human.id);
    expect(await state.holdInputs(human.id, [held])).toBe(1);
    expect(await inputState(held.id)).toBe("held");
    expect((await message(held.messageId!)).status).toBe("held");
    expect(published).toHaveLength(1);
    expect(changedIds()).toEqual([held.messageId]);

    published.length = 0;
    const agent = await conversation();
    const kept = await input(agent.id);
    expect(await state.holdInputs(agent.id, [kept])).toBeUndefined();
    expect(await inputState(kept.id)).toBe("pending");
    expect(published).toHaveLength(0);
  });

  it("supersedeProgress retires pending progress only", async () => {
    const c = await conversation();
    const progress = await input(c.id, "pending", "progress");
    const answered = await input(c.id, "answered", "progress");
    await state.supersedeProgress(c.id, [progress, answered]);
    expect(await inputState(progress.id)).toBe("superseded");
    expect(await inputState(answered.id)).toBe("answered");
    expect(changedIds()).toEqual([progress.messageId]);
  });

  it("commitReply answers its inputs with the reply, or writes nothing when one was answered meanwhile", async () => {
    const c = await conversation();
    const a = await input(c.id);
    const b = await input(c.id);
    const turnId = randomUUID();
    const committed = await state.commitReply({
      conversationId: c.id,
      turnId,
      inputs: [a, b],
      texts: ["one", "two"],
      jobId: null,
    });
    if (committed === "superseded") throw new Error("expected a reply");
    expect(committed.replies.map((reply) => [reply.text, reply.status])).toEqual([
      ["one", "pending"],
      ["two", "pending"],
    ]);
    const row = await hub.db.turnInput.findUniqueOrThrow({ where: { id: a.id } });
    expect(row).toMatchObject({ state: "answered", turnId, replyId: committed.replies[0]!.id });
    expect(published).toHaveLength(1);

    published.length = 0;
    const fresh = await input(c.id);
    const again = await state.commitReply({
      conversationId: c.id,
      turnId: randomUUID(),
      inputs: [fresh, a],
      texts: ["late"],
      jobId: null,
    });
    expect(again).toBe("superseded");
    expect(await inputState(fresh.id)).toBe("pending");
    expect(await hub.db.message.count({ where: { conversationId: c.id, text: "late" } })).toBe(0);
    expect(published).toHaveLength(0);
  });

  it("recordDecision records the decision on the reply and its inputs; a guarded one is stale once the conversation changed", async () => {
    const c = await conversation();
    const a = await input(c.id);
    const committed = await state.commitReply({
      conversationId: c.id,
      turnId: randomUUID(),
      inputs: [a],
      texts: ["hi"],
      jobId: null,
    });
    if (committed === "superseded") throw new Error("expected a reply");
    const reply = committed.replies[0]!;
    published.length = 0;
    const recorded = await state.recordDecision(reply, { status: "stored", decision: "stored", reason: "no_socket" });
    expect(recorded).not.toBe("stale");
    expect((await message(reply.id)).status).toBe("stored");
    expect((await message(a.messageId!)).status).toBe("stored");
    expect(published).toHaveLength(1);
    expect(changedIds().sort()).toEqual([reply.id, a.messageId].sort());

    // A read message is never moved back by a later decision.
    await state.markRead(c.id, reply.id);
    await state.recordDecision(reply, { status: "delivered", decision: "live", reason: null });
    expect((await message(reply.id)).status).toBe("read");

    // Decided on the agent's control, but a human took over meanwhile: stale, nothing written.
    const b = await input(c.id);
    const second = await state.commitReply({
      conversationId: c.id,
      turnId: randomUUID(),
      inputs: [b],
      texts: ["wait"],
      jobId: null,
    });
    if (second === "superseded") throw new Error("expected a reply");
    await hub.db.conversation.update({ where: { id: c.id }, data: { control: "human" } });
    published.length = 0;
    const stale = await state.recordDecision(
      second.replies[0]!,
      { status: "awaiting_reply", decision: "awaiting_reply", reason: "window_closed" },
      { control: "agent", lastInboundAt: null },
    );
    expect(stale).toBe("stale");
    expect((await message(second.replies[0]!.id)).status).toBe("pending");
    expect(published).toHaveLength(0);
  });

  it("commitInbound records the person's message once, moves the window only forward and releases what waited for them", async () => {
    const sentAt = new Date("2026-11-30T09:00:00Z");
    const c = await conversation({ channel: "whatsapp", lastInboundAt: new Date("2026-11-28T09:00:00Z") });
    const waiting = await input(c.id, "awaiting_reply");
    const direct = await hub.db.message.create({
      data: { id: randomUUID(), conversationId: c.id, role: "agent", text: "direct", status: "awaiting_reply" },
    });
    const turnReply = await hub.db.message.create({
      data: {
        id: randomUUID(),
        conversationId: c.id,
        role: "agent",
        text: "composed",
        status: "awaiting_reply",
        turnId: randomUUID(),
      },
    });
    const first = await state.commitInbound({
      conversationId: c.id,
      text: "hello",
      externalId: `wamid.${randomUUID()}`,
      sentAt,
    });
    if ("refused" in first) throw new Error("a message without a payload was refused");
    expect(first.created).toBe(true);
    expect(await inputState(waiting.id)).toBe("pending");
    expect((await message(direct.id)).status).toBe("pending");
    expect((await message(turnReply.id)).status).toBe("superseded");
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: c.id } })).lastInboundAt).toEqual(sentAt);
    const inputs = await hub.db.turnInput.findMany({ where: { conversationId: c.id, kind: "user_message" } });
    expect(inputs).toHaveLength(1);
    expect(published).toHaveLength(1);

    // Meta's retry of the same message: nothing new.
    published.length = 0;
    const retry = await state.commitInbound({
      conversationId: c.id,
      text: "hello",
      externalId: first.message.externalId!,
      sentAt,
    });
    expect(retry).toMatchObject({ created: false, message: { id: first.message.id } });
    expect(await hub.db.turnInput.count({ where: { conversationId: c.id, kind: "user_message" } })).toBe(1);
    expect(published).toHaveLength(0);

    // An older message delivered late does not move the window back.
    await state.commitInbound({
      conversationId: c.id,
      text: "older",
      externalId: `wamid.${randomUUID()}`,
      sentAt: new Date("2026-11-29T09:00:00Z"),
    });
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: c.id } })).lastInboundAt).toEqual(sentAt);
  });

  it("releaseOnHandback gives the agent back its conversation, held inputs and a handback input; nothing when the agent has it", async () => {
    const c = await conversation({ control: "human" });
    await hub.db.conversation.update({ where: { id: c.id }, data: { humanAgent: { id: "h1", name: "Marta" } } });
    const held = await input(c.id, "held");
    const heldDirect = await hub.db.message.create({
      data: { id: randomUUID(), conversationId: c.id, role: "agent", text: "direct", status: "held" },
    });
    const released = await state.releaseOnHandback(c.id);
    expect(released).toMatchObject({ id: c.id, control: "agent", humanAgent: null });
    expect(await inputState(held.id)).toBe("pending");
    expect((await message(heldDirect.id)).status).toBe("pending");
    const handback = await hub.db.turnInput.findMany({ where: { conversationId: c.id, kind: "handback" } });
    expect(handback.map((row) => row.payload)).toEqual([{ by: "h1" }]);
    expect(published).toHaveLength(1);

    published.length = 0;
    expect(await state.releaseOnHandback(c.id)).toBeUndefined();
    expect(await hub.db.turnInput.count({ where: { conversationId: c.id, kind: "handback" } })).toBe(1);
    expect(published).toHaveLength(0);
  });

  it("takeOver takes a conversation unless another human has it; handToTeam only takes it from the agent, keeping the first reason", async () => {
    const c = await conversation();
    const marta = { id: "h1", name: "Marta" };
    expect(await state.takeOver(c.id, marta)).toMatchObject({ control: "human", humanAgent: marta });
    expect(await state.takeOver(c.id, marta)).toMatchObject({ humanAgent: marta });
    expect(await state.takeOver(c.id, { id: "h2", name: "Jon" })).toBeUndefined();
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: c.id } })).humanAgent).toEqual(marta);

    const handed = await conversation();
    expect(await state.handToTeam(handed.id, "asked for a person")).toMatchObject({
      control: "human",
      humanAgent: null,
      handoffReason: "asked for a person",
      handoffAt: at,
    });
    expect(await state.handToTeam(handed.id, "again")).toBeUndefined();
    expect(await state.handToTeam(c.id, "a human has it")).toBeUndefined();
    // Handed to the team with nobody on it: anyone's to take, the reason kept for the console.
    expect(await state.takeOver(handed.id, { id: "h2", name: "Jon" })).toMatchObject({
      humanAgent: { id: "h2", name: "Jon" },
      handoffReason: "asked for a person",
    });
    // Control changes are published by the caller's effects with what the transition returned.
    expect(published).toHaveLength(0);
  });

  it("markReceived delivers only what was sent, up to the confirmed message, if stored or live; markRead reads up to a message, and knows unknown ids", async () => {
    const c = await conversation();
    const make = (status: string) =>
      hub.db.message.create({ data: { id: randomUUID(), conversationId: c.id, role: "agent", text: status, status } });
    const stored = await make("stored");
    const pending = await make("pending");
    const notSent = await make("stored");
    const afterUpTo = await make("stored");
    expect(await state.markReceived(c.id, [stored.id, pending.id, afterUpTo.id], notSent.id)).toBe(true);
    expect((await message(stored.id)).status).toBe("delivered");
    expect((await message(pending.id)).status).toBe("pending");
    expect((await message(notSent.id)).status).toBe("stored");
    expect((await message(afterUpTo.id)).status).toBe("stored");
    expect(changedIds()).toEqual([stored.id]);
    expect(await state.markReceived(c.id, [afterUpTo.id], randomUUID())).toBe(false);
    expect((await message(afterUpTo.id)).status).toBe("stored");

    published.length = 0;
    const later = await make("live");
    expect(await state.markRead(c.id, stored.id)).toBe(true);
    expect((await message(stored.id)).status).toBe("read");
    expect((await message(later.id)).status).toBe("live");
    expect(await state.markRead(c.id, randomUUID())).toBe(false);
    expect(published).toHaveLength(1);
  });

  /** A reply of a fresh turn, pending as routing finds it, answering one result (its timeline entry beside it). */
  async function pendingReply(conversationId: string) {
    const answered = await input(conversationId);
    const committed = await state.commitReply({
      conversationId,
      turnId: randomUUID(),
      inputs: [answered],
      texts: ["found two"],
      jobId: null,
    });
    if (committed === "superseded") throw new Error("expected a reply");
    return { reply: committed.replies[0]!, entry: answered.messageId! };
  }

  it("a read receipt for a message whose delivery is still being confirmed takes effect when its delivery is recorded, acked or not", async () => {
    const c = await conversation();
    await hub.db.pushDevice.create({
      data: { id: randomUUID(), conversationId: c.id, platform: "android", address: `fcm-${randomUUID()}` },
    });
    // Read before the ack's decision commits: the turn still routes the reply (it is not skipped as read) …
    const acked = await pendingReply(c.id);
    expect(await state.markRead(c.id, acked.reply.id)).toBe(true);
    expect((await message(acked.reply.id)).status).toBe("pending");
    // … and the delivery it records is the read the person sent, on the reply and on what it answered.
    const recorded = await state.recordDecision(acked.reply, { status: "delivered", decision: "live", reason: null });
    expect(recorded).toMatchObject({ message: { status: "read", decision: "live" }, pushesOwed: 0 });
    expect(await message(acked.reply.id)).toMatchObject({ status: "read", decision: "live" });
    expect((await message(acked.entry)).status).toBe("read");

    // Read, but no socket acked in time: read all the same, and no push is owed for it.
    const unacked = await pendingReply(c.id);
    await state.markRead(c.id, unacked.reply.id);
    expect(
      await state.recordDecision(unacked.reply, { status: "stored", decision: "live", reason: null }),
    ).toMatchObject({ message: { status: "read" }, pushesOwed: 0 });

    // A history confirmation of a reply still being pushed: delivered when its decision lands, no push owed …
    const confirmed = await pendingReply(c.id);
    expect(await state.markReceived(c.id, [confirmed.reply.id], confirmed.reply.id)).toBe(true);
    expect(
      await state.recordDecision(confirmed.reply, { status: "stored", decision: "live", reason: null }),
    ).toMatchObject({ message: { status: "delivered" }, pushesOwed: 0 });
    // … and confirmed, then read at once: read.
    const both = await pendingReply(c.id);
    await state.markReceived(c.id, [both.reply.id], both.reply.id);
    await state.markRead(c.id, both.reply.id);
    await state.markReceived(c.id, [both.reply.id], both.reply.id);
    await state.recordDecision(both.reply, { status: "delivered", decision: "live", reason: null });
    expect((await message(both.reply.id)).status).toBe("read");

    // Without any receipt, the same decision is what the channel said.
    const plain = await pendingReply(c.id);
    expect(await state.recordDecision(plain.reply, { status: "stored", decision: "live", reason: null })).toMatchObject(
      { message: { status: "stored" }, pushesOwed: 1 },
    );
  });

  it("a receipt is spent by the decision it met: a message held instead, and sent after the hand-back, is only delivered", async () => {
    const c = await conversation({ control: "human" });
    const direct = await hub.db.message.create({
      data: { id: randomUUID(), conversationId: c.id, role: "human", text: "hello", status: "pending" },
    });
    await state.markRead(c.id, direct.id);
    await state.recordDecision(direct, { status: "held", decision: "held", reason: "human_control" });
    expect((await message(direct.id)).status).toBe("held");
    expect(await state.releaseOnHandback(c.id)).toBeDefined();
    expect((await message(direct.id)).status).toBe("pending");
    await state.recordDecision(direct, { status: "delivered", decision: "live", reason: null });
    expect((await message(direct.id)).status).toBe("delivered");
  });

  for (const first of ["the decision", "the read"] as const) {
    it(`a read and the ack's decision racing on the message's row lock (${first} waiting first) end read, across connections`, async () => {
      const c = await conversation();
      const { reply } = await pendingReply(c.id);
      const locker = new pg.Client({ connectionString: hub.config.databaseUrl });
      await locker.connect();
      const waiting = async () => {
        // Inside a transaction the activity view is read once and kept: read it afresh each time.
        await locker.query("SELECT pg_stat_clear_snapshot()");
        const { rows } = await locker.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
        );
        return rows[0]!.n;
      };
      const started: { done: boolean; result: Promise<unknown> }[] = [];
      /** Starts one side and waits until it is answered or waits on the lock behind the others. */
      const start = async (work: () => Promise<unknown>) => {
        const side = { done: false, result: Promise.resolve() as Promise<unknown> };
        side.result = work().finally(() => (side.done = true));
        started.push(side);
        await eventually(
          async () => side.done || (await waiting()) === started.filter((s) => !s.done).length,
          `${started.length} waiting on the row lock or answered`,
        );
      };
      const decide = () => state.recordDecision(reply, { status: "delivered", decision: "live", reason: null });
      const read = () => state.markRead(c.id, reply.id);
      try {
        // Another connection holds the message's row, as a transaction still writing it would: both sides
        // take their snapshot while the reply is pending, then wait.
        await locker.query("BEGIN");
        await locker.query(`SELECT id FROM "Message" WHERE id = $1::uuid FOR UPDATE`, [reply.id]);
        await start(first === "the decision" ? decide : read);
        await start(first === "the decision" ? read : decide);
        await locker.query("COMMIT");
        await Promise.all(started.map((side) => side.result));
        expect(await message(reply.id)).toMatchObject({ status: "read", decision: "live" });
      } finally {
        await locker.query("ROLLBACK").catch(() => {});
        await locker.end();
      }
    });
  }

  it("a status never goes backwards: a read message stays read whatever late delivery news comes", async () => {
    const c = await conversation();
    const { reply } = await pendingReply(c.id);
    await state.recordDecision(reply, { status: "delivered", decision: "live", reason: null });
    await state.markRead(c.id, reply.id);
    expect((await message(reply.id)).status).toBe("read");
    // A late history confirmation, and a late decision (a routing retried after its first commit).
    expect(await state.markReceived(c.id, [reply.id], reply.id)).toBe(true);
    await state.recordDecision(reply, { status: "stored", decision: "live", reason: null });
    await state.recordDecision(reply, { status: "delivered", decision: "live", reason: null });
    expect((await message(reply.id)).status).toBe("read");
  });

  it("applyMetaStatus moves sent → delivered → read, never back; 131047 sends it again by the template path", async () => {
    const c = await conversation({ channel: "whatsapp" });
    const wamid = `wamid.${randomUUID()}`;
    const sent = await hub.db.message.create({
      data: { id: randomUUID(), conversationId: c.id, role: "agent", text: "hi", status: "sent", externalId: wamid },
    });
    const apply = (
      status: "sent" | "delivered" | "read" | "failed",
      rank: number,
      error?: { code: number; title: string },
    ) => state.applyMetaStatus({ externalId: wamid, status, rank, at, error });
    expect(await apply("read", 3)).toMatchObject({ outcome: "applied" });
    expect(await apply("delivered", 2)).toMatchObject({ outcome: "applied" });
    expect((await message(sent.id)).status).toBe("read");
    expect(published).toHaveLength(1);
    expect(
      await state.applyMetaStatus({ externalId: "wamid.unknown", status: "read", rank: 3, at, error: undefined }),
    ).toEqual({
      outcome: "unknown",
    });

    const wamid2 = `wamid.${randomUUID()}`;
    const outside = await hub.db.message.create({
      data: { id: randomUUID(), conversationId: c.id, role: "agent", text: "late", status: "sent", externalId: wamid2 },
    });
    const resend = await state.applyMetaStatus({
      externalId: wamid2,
      status: "failed",
      rank: 4,
      at,
      error: { code: 131047, title: "Re-engagement message" },
    });
    expect(resend).toMatchObject({ outcome: "resend", conversationId: c.id });
    expect(await message(outside.id)).toMatchObject({ status: "pending", externalId: null });
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: c.id } })).windowClosedAt).toEqual(at);
  });

  it("a template that failed fails what waited on it, and lets the next result try a template again", async () => {
    const c = await conversation({ channel: "whatsapp" });
    const waiting = await input(c.id, "awaiting_reply");
    const wamid = `wamid.${randomUUID()}`;
    await state.recordTemplate(c.id, { name: "results_ready", data: {}, externalId: wamid });
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: c.id } })).templateSentAt).toEqual(at);
    published.length = 0;
    const outcome = await state.applyMetaStatus({
      externalId: wamid,
      status: "failed",
      rank: 4,
      at,
      error: { code: 132001, title: "Template does not exist" },
    });
    expect(outcome).toMatchObject({ outcome: "applied", failed: true });
    expect(await inputState(waiting.id)).toBe("failed");
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: c.id } })).templateSentAt).toBeNull();
    expect(published).toHaveLength(1);
  });

  const past = new Date(at.getTime() - 60_000);
  const future = new Date(at.getTime() + 60_000);

  it("expireInputs expires results and failures past their expiry, each replaced by a tool_expired notice in the state it was in; nothing else moves", async () => {
    const c = await conversation({ control: "human" });
    const job = { jobId: randomUUID(), tool: "weekly_search", toolCallId: "call-1" };
    const due = await input(c.id, "pending", "tool_result", { expiresAt: past, payload: job });
    const heldFailure = await input(c.id, "held", "tool_failed", { expiresAt: past });
    const notYet = await input(c.id, "awaiting_reply", "tool_result", { expiresAt: future });
    const answered = await input(c.id, "answered", "tool_result", { expiresAt: past });
    const progress = await input(c.id, "pending", "progress", { expiresAt: past });
    const timeless = await input(c.id, "pending", "tool_result");
    const other = await conversation();
    const elsewhere = await input(other.id, "pending", "tool_result", { expiresAt: past });

    const notices = await state.expireInputs({ reason: "deliver_within", conversationId: c.id });
    expect(notices.map((notice) => [notice.kind, notice.state, notice.key])).toEqual([
      ["tool_expired", "pending", `expired:${due.id}`],
      ["tool_expired", "held", `expired:${heldFailure.id}`],
    ]);
    expect(notices[0]!.payload).toEqual({
      ...job,
      arrivedAt: due.createdAt.toISOString(),
      outcome: "succeeded",
      reason: "deliver_within",
    });
    expect(notices[1]!.payload).toMatchObject({ outcome: "failed" });
    for (const expired of [due, heldFailure]) {
      expect(await hub.db.turnInput.findUniqueOrThrow({ where: { id: expired.id } })).toMatchObject({
        state: "expired",
        decision: "expired",
        reason: "deliver_within",
      });
      expect(await message(expired.messageId!)).toMatchObject({
        status: "expired",
        decision: "expired",
        statusReason: "deliver_within",
      });
    }
    expect(await inputState(notYet.id)).toBe("awaiting_reply");
    expect(await inputState(answered.id)).toBe("answered");
    expect(await inputState(progress.id)).toBe("pending");
    expect(await inputState(timeless.id)).toBe("pending");
    expect(await inputState(elsewhere.id)).toBe("pending");
    expect(published).toHaveLength(1);
    expect(changedIds().sort()).toEqual([due.messageId, heldFailure.messageId].sort());

    // Once: a second pass finds nothing, and publishes nothing.
    published.length = 0;
    expect(await state.expireInputs({ reason: "deliver_within", conversationId: c.id })).toEqual([]);
    expect(published).toHaveLength(0);

    // A turn's own inputs only: the other conversation's is left to its turn (or the sweep).
    expect(await state.expireInputs({ reason: "deliver_within", inputIds: [notYet.id] })).toEqual([]);
    const swept = await state.expireInputs({ reason: "deliver_within" });
    expect(swept.map((notice) => notice.key)).toContain(`expired:${elsewhere.id}`);

    // In a closed conversation a result expires whatever its expiry, its notice waiting for the person.
    const closed = await state.expireInputs({ reason: "conversation_closed", inputIds: [notYet.id, timeless.id] });
    expect(closed.map((notice) => [notice.key, notice.state])).toEqual([
      [`expired:${notYet.id}`, "awaiting_reply"],
      [`expired:${timeless.id}`, "awaiting_reply"],
    ]);
    expect((await message(timeless.messageId!)).statusReason).toBe("conversation_closed");
  });

  it("closeConversation closes once: the agent has it back, results expire with notices waiting for the person, progress and hand-backs are dropped, unsent replies superseded", async () => {
    const c = await conversation({ control: "human" });
    await hub.db.conversation.update({ where: { id: c.id }, data: { humanAgent: { id: "h1", name: "Marta" } } });
    const held = await input(c.id, "held", "tool_result");
    const waiting = await input(c.id, "awaiting_reply", "tool_failed");
    const progress = await input(c.id, "pending", "progress");
    const said = await hub.db.message.create({
      data: { id: randomUUID(), conversationId: c.id, role: "user", text: "hello?" },
    });
    const userInput = await hub.db.turnInput.create({
      data: {
        id: randomUUID(),
        conversationId: c.id,
        key: `user:${said.id}`,
        kind: "user_message",
        messageId: said.id,
        payload: { text: "hello?" },
        state: "pending",
      },
    });
    const handback = await hub.db.turnInput.create({
      data: { id: randomUUID(), conversationId: c.id, key: `handback:${randomUUID()}`, kind: "handback", payload: {} },
    });
    const reply = await hub.db.message.create({
      data: { id: randomUUID(), conversationId: c.id, role: "agent", text: "held reply", status: "held" },
    });
    // Answered by the reply the takeover held: not given either.
    const answeredByHeld = await input(c.id, "answered", "tool_result");
    await hub.db.turnInput.update({ where: { id: answeredByHeld.id }, data: { replyId: reply.id } });
    const answered = await input(c.id, "answered", "tool_result");

    const closed = await state.closeConversation(c.id);
    expect(closed).toMatchObject({ id: c.id, control: "agent", humanAgent: null, closedAt: at });
    for (const expired of [held, waiting, answeredByHeld]) {
      expect(await inputState(expired.id)).toBe("expired");
      expect(await message(expired.messageId!)).toMatchObject({
        status: "expired",
        statusReason: "conversation_closed",
      });
    }
    const notices = await hub.db.turnInput.findMany({ where: { conversationId: c.id, kind: "tool_expired" } });
    expect(notices.map((notice) => [notice.key, notice.state]).sort()).toEqual(
      [
        [`expired:${held.id}`, "awaiting_reply"],
        [`expired:${waiting.id}`, "awaiting_reply"],
        [`expired:${answeredByHeld.id}`, "awaiting_reply"],
      ].sort(),
    );
    expect(await inputState(userInput.id)).toBe("awaiting_reply");
    expect(await inputState(progress.id)).toBe("superseded");
    expect((await message(progress.messageId!)).status).toBe("superseded");
    expect(await inputState(handback.id)).toBe("superseded");
    expect((await message(reply.id)).status).toBe("superseded");
    expect(await inputState(answered.id)).toBe("answered");
    expect(published).toHaveLength(1);
    expect(changedIds().sort()).toEqual(
      [held.messageId, waiting.messageId, answeredByHeld.messageId, progress.messageId, reply.id].sort(),
    );

    published.length = 0;
    expect(await state.closeConversation(c.id)).toBeUndefined();
    expect(published).toHaveLength(0);
    expect(await hub.db.turnInput.count({ where: { conversationId: c.id, kind: "tool_expired" } })).toBe(3);

    // A routing of the superseded reply that was already under way cannot bring its inputs back.
    await state.recordDecision(reply, {
      status: "awaiting_reply",
      decision: "awaiting_reply",
      reason: "window_closed",
    });
    expect(await inputState(answeredByHeld.id)).toBe("expired");
  });

  it("commitInbound reopens a closed conversation and releases what waited for the person, the notices among them", async () => {
    const c = await conversation();
    const result = await input(c.id, "pending", "tool_result");
    await state.closeConversation(c.id);
    const notice = await hub.db.turnInput.findFirstOrThrow({ where: { key: `expired:${result.id}` } });
    expect(notice.state).toBe("awaiting_reply");
    await state.commitInbound({ conversationId: c.id, text: "back", clientId: randomUUID() });
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: c.id } })).closedAt).toBeNull();
    expect(await inputState(notice.id)).toBe("pending");
    expect(await inputState(result.id)).toBe("expired");
  });
});
