// A worker process dies (kill -9) in the middle of its turns. Its conversations are not left silent until
// a long lease runs out: another worker takes them up within about the (short, renewed) turn lease, and
// every result is answered once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { spawnHub, type HubProcess } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, TOOL_KEY, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

const CONVERSATIONS = 6;

describe("a worker process killed mid-turn", () => {
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let web: TestHub;
  const workers: HubProcess[] = [];

  const spawnWorker = () => {
    const worker = spawnHub(
      web.siblingEnv({
        HUB_ROLE: "worker",
        PORT: "0",
        CLINIC_API: backend.url,
        CLINIC_API_KEY: TOOL_KEY,
        LOG_LEVEL: "warn",
        // The sweep finds a dead process's conversations once their lease has run out.
        OUTBOX_SWEEP_MS: "1000",
      }),
    );
    workers.push(worker);
    return worker;
  };

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    web = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      // This process only takes HTTP; turns run in the worker processes.
      env: { HUB_ROLE: "web", AGENT_URL: agent.url, AGENT_SECRET },
    });
  });
  afterAll(async () => {
    for (const worker of workers) if (worker.child.exitCode === null) worker.child.kill("SIGKILL");
    await web?.stop();
    await backend?.stop();
    await agent?.stop();
  });

  it("another worker answers its conversations soon after, each result once", async () => {
    const doomed = spawnWorker();
    await doomed.waitFor("chat-delivery-hub is running");
    agent.delayMs = 60_000; // the doomed worker's turns hang in the agent runtime until it dies

    const conversations: string[] = [];
    for (let i = 0; i < CONVERSATIONS; i++) {
      const conversationId = await web.conversation();
      const started = await web.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: `crash ${i}`, area: "Ñuñoa" },
      });
      expect((await backend.post(started.body.job.id, { result: "ok", message: `result ${i}` })).status).toBe(200);
      conversations.push(conversationId);
    }
    await eventually(() => agent.started.length >= CONVERSATIONS, "every turn in flight on the doomed worker");
    doomed.child.kill("SIGKILL");
    await doomed.exited;
    agent.delayMs = 0;

    const survivor = spawnWorker();
    await survivor.waitFor("chat-delivery-hub is running");
    // The old 60 s lease (and BullMQ's 30 s stall check) kept these silent for a minute or more.
    await eventually(
      async () => {
        const answered = await web.db.turnInput.count({
          where: { conversationId: { in: conversations }, kind: "tool_result", state: "answered" },
        });
        return answered === CONVERSATIONS;
      },
      "every conversation answered by the surviving worker",
      30_000,
    );
    for (const conversationId of conversations) {
      const replies = await web.db.message.findMany({ where: { conversationId, role: "agent" } });
      expect(replies).toHaveLength(1);
      expect(replies[0]!.text).toMatch(/^result: result \d$/);
    }
  });
});
