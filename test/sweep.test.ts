// The sweep, on its own timer: whatever a crash or an outage left between a commit and its queue job is
// picked up without anyone asking — an input committed but never given a turn, and a reply written but
// never sent. (The end-to-end tests run with the sweep far away, so they prove the enqueue after each commit.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

describe("the sweep", () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await TestHub.start({ env: { OUTBOX_SWEEP_MS: "300" } });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("answers an input that was committed but never enqueued, once", async () => {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    await hub.strandInput(session.conversationId, "hello?");
    const reply = await eventually(() => client.agentMessages()[0], "the sweep to answer it");
    expect(reply.text).toBe("Hi! How can I help?");
    await hub.settled();
    expect(client.agentMessages()).toHaveLength(1);
    client.close();
  });

  it("sends a reply that was written but never sent", async () => {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    // A turn that committed its reply and died before routing it.
    const [stranded] = await hub.ctx.sql.query<{ id: string }>(
      `INSERT INTO "Message" (id, "conversationId", role, text, status, "createdAt", "updatedAt")
       VALUES (gen_random_uuid(), $1::uuid, 'agent', 'written before a crash', 'pending', $2, $2) RETURNING id`,
      [session.conversationId, new Date(Date.now() - 120_000)],
    );
    const shown = await eventually(() => client.agentMessages().find((m) => m.id === stranded!.id), "the reply sent");
    expect(shown.text).toBe("written before a crash");
    client.close();
  });
});
