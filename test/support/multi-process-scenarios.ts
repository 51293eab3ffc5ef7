// Several hub processes on one PostgreSQL and one Redis behave as one hub: a widget on one process gets
// a result posted to another, and two worker processes never run turns of one conversation at once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_SECRET, AgentRuntime } from "./agent-runtime.js";
import { spawnHub, type HubProcess } from "./hub-process.js";
import { eventually } from "./services.js";
import { io } from "socket.io-client";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./test-hub.js";
import { TOOL_KEY, ToolBackend, startToolBackend } from "./tool-backend.js";
import { matchTherapists } from "./tool-files.js";
import { openSession, WidgetClient } from "./widget-client.js";

export function defineMultiProcessTests(database: "postgresql" | "pgbouncer"): void {
  describe(`several hub processes (${database})`, () => {
    let backend: ToolBackend;
    let agent: AgentRuntime;
    let web: TestHub; // this process: HTTP and sockets only, no workers
    let siblings: HubProcess[] = [];
    let siblingUrl = "";
    const clients: WidgetClient[] = [];

    beforeAll(async () => {
      backend = await startToolBackend();
      agent = await new AgentRuntime().start();
      agent.delayMs = 40;
      web = await TestHub.start({
        database,
        tools: { match_therapists: matchTherapists },
        env: { HUB_ROLE: "web", AGENT_URL: agent.url, AGENT_SECRET },
      });
      // Info logs: each process's "delivery decision" lines show which turns it ran.
      const shared = { CLINIC_API: backend.url, CLINIC_API_KEY: TOOL_KEY, LOG_LEVEL: "info" };
      siblings = [
        spawnHub(web.siblingEnv({ ...shared, HUB_ROLE: "all", PORT: "0" })),
        spawnHub(web.siblingEnv({ ...shared, HUB_ROLE: "worker", PORT: "0" })),
      ];
      await Promise.all(siblings.map((sibling) => sibling.waitFor("chat-delivery-hub is running")));
      siblingUrl = siblings[0]!.url();
    });
    afterAll(async () => {
      for (const client of clients) client.close();
      await Promise.all(siblings.map((sibling) => sibling.stop()));
      await web?.stop();
      await backend?.stop();
      await agent?.stop();
    });

    it("a result posted to one process reaches a widget connected to another", async () => {
      const session = await openSession(web.url);
      const client = await WidgetClient.connect(web.url, { token: session.token });
      clients.push(client);
      // The job is started through the other process, so the backend posts its callback there.
      const started = await fetch(`${siblingUrl}/v1/conversations/${session.conversationId}/tool-calls`, {
        method: "POST",
        headers: { Authorization: `Bearer ${HUB_API_KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ tool: "match_therapists", arguments: { reason: "two processes", area: "Ñuñoa" } }),
      });
      expect(started.status).toBe(202);
      const { job } = (await started.json()) as { job: { id: string } };
      expect(backend.job(job.id).callbackUrl.startsWith(`${siblingUrl}/callbacks/`)).toBe(true);
      await backend.post(job.id, { progress: "halfway there" });
      await eventually(() => client.progress.find((p) => p.jobId === job.id), "progress across processes");
      await backend.post(job.id, { result: "ok", message: "found across processes" });
      const reply = await eventually(
        () => client.agentMessages().find((m) => m.text.includes("found across processes")),
        "the result",
      );
      await eventually(
        async () => (await web.db.message.findUniqueOrThrow({ where: { id: reply.id } })).status === "delivered",
        "delivered",
      );
      // The job's start and end, committed on the other process, reached this widget too.
      await eventually(
        () => client.jobs.some((event) => event.jobId === job.id && event.status === "succeeded"),
        "end",
      );
      expect(client.jobs.filter((event) => event.jobId === job.id).map((event) => event.status)).toEqual([
        "running",
        "succeeded",
      ]);
    });

    it("the console hears a result posted to another process", async () => {
      const consoleSocket = io(`${web.url}/console`, {
        auth: { key: CONSOLE_API_KEY },
        transports: ["websocket"],
        forceNew: true,
      });
      const heard: { conversationId: string; message: { role: string; text: string | null } }[] = [];
      consoleSocket.on("messages", ({ changes }) => heard.push(...changes));
      await new Promise<void>((resolve) => consoleSocket.once("connect", () => resolve()));
      try {
        const session = await openSession(web.url);
        const started = await fetch(`${siblingUrl}/v1/conversations/${session.conversationId}/tool-calls`, {
          method: "POST",
          headers: { Authorization: `Bearer ${HUB_API_KEY}`, "Content-Type": "application/json" },
          body: JSON.stringify({ tool: "match_therapists", arguments: { reason: "console across", area: "Ñuñoa" } }),
        });
        const { job } = (await started.json()) as { job: { id: string } };
        await backend.post(job.id, { result: "ok", message: "heard across processes" });
        await eventually(
          () =>
            heard.find(
              (e) =>
                e.conversationId === session.conversationId &&
                e.message.role === "tool_result" &&
                e.message.text === "heard across processes",
            ),
          "the console event from the other process",
        );
      } finally {
        consoleSocket.close();
      }
    });

    async function burst(send: (client: WidgetClient, count: number) => Promise<void>) {
      const session = await openSession(web.url);
      const client = await WidgetClient.connect(web.url, { token: session.token });
      clients.push(client);
      const count = 25;
      await send(client, count);
      await eventually(
        async () => {
          const items = await web.db.turnInput.findMany({ where: { conversationId: session.conversationId } });
          return items.length === count && items.every((item) => item.state === "answered");
        },
        "every input answered",
        60_000,
      );
      const turns = agent.turnsOf(session.conversationId);
      const said = turns.flatMap((turn) => turn.inputs.map((input) => (input as { text: string }).text));
      const sent = (
        await web.db.message.findMany({
          where: { conversationId: session.conversationId, role: "user" },
          orderBy: { seq: "asc" },
        })
      ).map((m) => m.text);
      const spans = agent.spans
        .filter((span) => span.conversationId === session.conversationId)
        .sort((a, b) => a.start - b.start);
      for (let i = 1; i < spans.length; i++) expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end);
      const replies = await eventually(
        () => client.agentMessages().length === turns.length && client.agentMessages(),
        "every reply",
      );
      expect(new Set(replies.map((m) => m.id)).size).toBe(turns.length);
      return { said, sent, turns };
    }

    it("a burst of messages for one conversation, worked by two worker processes, runs as ordered turns that never overlap", async () => {
      const { said, sent, turns } = await burst(async (client, count) => {
        for (let i = 1; i <= count; i++) await client.send(`burst ${i}`, `b-${i}`);
      });
      expect(said).toEqual(sent); // every input, once, in the order the person sent it
      expect(turns.length).toBeGreaterThan(1);
    });

    it("concurrent inputs are each answered exactly once, by turns that never overlap", async () => {
      const { said, sent } = await burst(async (client, count) => {
        await Promise.all(Array.from({ length: count }, (_, i) => client.send(`parallel ${i + 1}`, `p-${i + 1}`)));
      });
      expect([...said].sort()).toEqual([...sent].sort());
      expect(new Set(said).size).toBe(said.length);
    });

    it("both worker processes run turns (the work is shared, not left to one)", async () => {
      // Which worker takes a hand-off is up to the queue, so the bursts above may have gone to one of them.
      // Waves of new conversations (one message each, sent at once) go on until both have run a turn; a
      // process that never takes one fails after eight waves (80 hand-offs).
      const ranTurns = (sibling: HubProcess) => sibling.output().stdout.includes('"msg":"delivery decision"');
      for (let wave = 0; wave < 8 && !siblings.every(ranTurns); wave++) {
        const sessions = await Promise.all(Array.from({ length: 10 }, () => openSession(web.url)));
        const wavers = await Promise.all(sessions.map((s) => WidgetClient.connect(web.url, { token: s.token })));
        clients.push(...wavers);
        await Promise.all(wavers.map((client, i) => client.send(`wave ${wave} ${i}`, `w-${wave}-${i}`)));
        await eventually(() => wavers.every((client) => client.agentMessages().length > 0), "every wave's reply");
      }
      for (const sibling of siblings) expect(sibling.output().stdout).toContain('"msg":"delivery decision"');
    });
  });
}
