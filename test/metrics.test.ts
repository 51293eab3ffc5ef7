// /metrics counts every routing decision with its label, held ones included: a result that arrives while a
// human has the conversation is held before any reply exists, and is counted all the same.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHubProcess, type SpawnedHub } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY } from "./support/test-hub.js";
import { TOOL_KEY, ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

describe("delivery metrics", () => {
  let backend: ToolBackend;
  let hub: SpawnedHub;

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await startHubProcess({
      tools: { match_therapists: matchTherapists },
      env: { CLINIC_API: backend.url, CLINIC_API_KEY: TOOL_KEY, LOG_LEVEL: "warn" },
    });
  });
  afterAll(async () => {
    await hub?.dispose();
    await backend?.stop();
  });

  /** The value of one series of hub_deliveries_total, 0 when the hub has not counted it. */
  async function deliveries(channel: string, decision: string): Promise<number> {
    const text = await (await fetch(`${hub.url}/metrics`)).text();
    const line = text
      .split("\n")
      .find((row) => row.startsWith(`hub_deliveries_total{channel="${channel}",decision="${decision}"} `));
    return line ? Number(line.split(" ")[1]) : 0;
  }

  it('a result held while a human has the conversation is counted as decision="held", then as stored once handed back', async () => {
    const created = await hub.api("POST", "/v1/conversations", { channel: "web", contact: "metrics-visitor" });
    const id = created.body.conversation.id as string;
    const taken = await hub.api(
      "POST",
      `/v1/conversations/${id}/takeover`,
      { agent: { id: "h1", name: "Marta" } },
      CONSOLE_API_KEY,
    );
    expect(taken.status).toBe(200);

    const call = await hub.api("POST", `/v1/conversations/${id}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "anxiety", area: "Ñuñoa" },
    });
    expect(call.status).toBe(202);
    const jobId = call.body.job.id as string;
    expect((await backend.post(jobId, { result: "ok", message: "2 found", data: { therapists: [] } })).status).toBe(
      200,
    );

    await eventually(async () => (await deliveries("web", "held")) === 1, 'hub_deliveries_total{decision="held"} 1');
    const timeline = await hub.api("GET", `/v1/conversations/${id}/timeline`, undefined, CONSOLE_API_KEY);
    expect(timeline.body.held).toHaveLength(1);
    expect(await deliveries("web", "stored")).toBe(0);

    // Handed back: the held result goes to a turn, and its reply (no widget connected) is stored.
    const back = await hub.api("POST", `/v1/conversations/${id}/handback`, undefined, CONSOLE_API_KEY);
    expect(back.status).toBe(200);
    await eventually(
      async () => (await deliveries("web", "stored")) === 1,
      'hub_deliveries_total{decision="stored"} 1',
    );
    expect(await deliveries("web", "held")).toBe(1);
  });
});
