// Two hub processes on one PostgreSQL and one Redis, both taking hand-offs and both sweeping every few hundred
// milliseconds: each conversation is assigned exactly once, whichever process handles it, and no member is
// ever given more than their capacity — also a member in two teams, whose capacity spans both.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnHub, type HubProcess } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { addMember, addTeam } from "./support/team-fixtures.js";
import { apiCall, TestHub } from "./support/test-hub.js";

const SWEEP_MS = "250";

describe("support team routing on two hub processes", () => {
  let hub: TestHub;
  let sibling: HubProcess;
  let urls: string[] = [];

  beforeAll(async () => {
    hub = await TestHub.start({ env: { OUTBOX_SWEEP_MS: SWEEP_MS } });
    sibling = spawnHub(hub.siblingEnv({ HUB_ROLE: "all", PORT: "0", OUTBOX_SWEEP_MS: SWEEP_MS }));
    await sibling.waitFor("chat-delivery-hub is running");
    urls = [hub.url, sibling.url()];
  });
  afterAll(async () => {
    await sibling?.stop();
    await hub?.stop();
  });

  /** Members' current loads, and their capacities. */
  async function loads(): Promise<{ id: string; assigned: number; capacity: number }[]> {
    return hub.ctx.sql.query<{ id: string; assigned: number; capacity: number }>(
      `SELECT m.id, m.capacity, (SELECT count(*)::int FROM "Conversation" c
         WHERE c."assigneeId" = m.id AND c.control = 'human') AS assigned
       FROM "Member" m ORDER BY m.id`,
    );
  }

  /** Per conversation: its assignment entries in the timeline (reason, assignee). */
  async function entries(ids: string[]): Promise<Map<string, { reason: string; assignee: string | null }[]>> {
    const rows = await hub.ctx.sql.query<{ conversationId: string; reason: string; assignee: string | null }>(
      `SELECT "conversationId", "statusReason" AS reason, data->'assignment'->'assignee'->>'id' AS assignee
       FROM "Message" WHERE "conversationId" = ANY($1::uuid[]) AND role = 'event' AND data->>'event' = 'assignment'
       ORDER BY seq`,
      [ids],
    );
    const byConversation = new Map<string, { reason: string; assignee: string | null }[]>(ids.map((id) => [id, []]));
    for (const row of rows)
      byConversation.get(row.conversationId)!.push({ reason: row.reason, assignee: row.assignee });
    return byConversation;
  }

  it("assigns each of many concurrent hand-offs once, never past a member's capacity", async () => {
    const now = new Date();
    for (const id of ["mp-ana", "mp-bo", "mp-cy", "mp-dee"])
      await addMember(hub.ctx.sql, { id, capacity: 3, seenAt: now });
    // Cy is in both teams: her three are three across both.
    await addTeam(hub.ctx.sql, { id: "mp-one", members: ["mp-ana", "mp-bo", "mp-cy"] });
    await addTeam(hub.ctx.sql, { id: "mp-two", routing: "least_loaded", members: ["mp-cy", "mp-dee"] });
    // Their consoles stay connected: presence, as the members' side keeps it.
    const presence = setInterval(() => {
      void hub.ctx.sql.query(`UPDATE "Member" SET "seenAt" = $1 WHERE id LIKE 'mp-%'`, [new Date()]);
    }, 2_000);
    try {
      const ids = await Promise.all(Array.from({ length: 30 }, () => hub.conversation()));
      // Every conversation is handed off twice at once, once through each process, to one team or the other.
      const answers = await Promise.all(
        ids.flatMap((id, i) =>
          urls.map((url) =>
            apiCall(url, "POST", `/v1/conversations/${id}/handoff`, {
              reason: `race ${i}`,
              team: i % 3 === 0 ? "mp-two" : "mp-one",
            }),
          ),
        ),
      );
      expect(answers.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([]);
      // Of each pair, one handed it off and the other found it already with the team.
      for (let i = 0; i < ids.length; i++) {
        const statuses = [answers[2 * i]!.body.handoff.status, answers[2 * i + 1]!.body.handoff.status];
        expect(
          statuses.filter((status) => status === "unchanged"),
          `conversation ${i}: ${statuses}`,
        ).toHaveLength(1);
      }
      // Twelve places: every one taken, nobody past three, the rest waiting.
      const first = await loads();
      expect(first.every((member) => member.assigned <= member.capacity)).toBe(true);
      expect(first.reduce((sum, member) => sum + member.assigned, 0)).toBe(12);

      // Room for everyone: the two processes' sweeps drain both queues, racing each other.
      await hub.ctx.sql.query(`UPDATE "Member" SET capacity = 10 WHERE id LIKE 'mp-%'`);
      await eventually(
        async () =>
          (await hub.db.conversation.count({ where: { id: { in: ids }, assigneeId: { not: null } } })) === ids.length,
        "every conversation assigned",
        30_000,
      );
      const after = await loads();
      expect(after.every((member) => member.assigned <= member.capacity)).toBe(true);
      expect(after.reduce((sum, member) => sum + member.assigned, 0)).toBe(30);
      // Once each: one hand-off entry per conversation, and exactly one assignment to a member.
      for (const [id, list] of await entries(ids)) {
        expect(
          list.filter((entry) => entry.reason === "handoff" || entry.reason === "queued"),
          id,
        ).toHaveLength(1);
        expect(
          list.filter((entry) => entry.assignee !== null),
          id,
        ).toHaveLength(1);
      }
      // And it is the assignee the conversation names.
      const rows = await hub.db.conversation.findMany({ where: { id: { in: ids } } });
      const assigned = await entries(ids);
      for (const row of rows)
        expect(assigned.get(row.id)!.find((entry) => entry.assignee)?.assignee).toBe(row.assigneeId);
    } finally {
      clearInterval(presence);
    }
  });
});
