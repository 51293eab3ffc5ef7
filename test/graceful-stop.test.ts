// SIGTERM (or Ctrl+C) while widgets and consoles are connected and a turn is running: the hub stops
// accepting, closes its sockets' transports so clients reconnect by themselves, lets the running turn
// finish or go back to the queue, and exits promptly. Nothing is lost: after a restart the clients are
// back on their own and the turn's reply arrives once.
import { io, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClientToServerEvents, ServerToClientEvents, WidgetMessage } from "../src/channels/widget/events.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { spawnHub, startHubProcess, type HubProcess, type SpawnedHub } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY } from "./support/test-hub.js";
import { openSession } from "./support/widget-client.js";

describe("stopping the hub", () => {
  let hub: SpawnedHub;
  let agent: AgentRuntime;
  let restarted: HubProcess | undefined;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    hub = await startHubProcess({ env: { AGENT_URL: agent.url, AGENT_SECRET, LOG_LEVEL: "info" } });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.close();
    await restarted?.stop();
    await hub?.dispose();
    await agent?.stop();
  });

  it("exits promptly with sockets open and a turn running; clients come back by themselves and nothing is lost", async () => {
    const session = await openSession(hub.url);
    const shown = new Map<string, WidgetMessage>();
    const reasons: string[] = [];
    // socket.io-client with its default options, like a browser tab left open.
    const widget: Socket<ServerToClientEvents, ClientToServerEvents> = io(`${hub.url}/widget`, {
      auth: { token: session.token },
    });
    sockets.push(widget);
    widget.on("history", ({ messages }) => messages.forEach((message) => shown.set(message.id, message)));
    widget.on("message", (message, ack) => {
      shown.set(message.id, message);
      ack({ ok: true });
    });
    widget.on("disconnect", (reason) => reasons.push(reason));
    const console = io(`${hub.url}/console`, { auth: { key: CONSOLE_API_KEY } });
    sockets.push(console);
    await eventually(() => widget.connected && console.connected, "both connected");

    // A turn that is still waiting for the agent runtime when the stop begins.
    agent.delayMs = 30_000;
    expect(await widget.timeout(10_000).emitWithAck("send", { text: "are you there?", clientId: "stop-1" })).toEqual({
      id: expect.any(String),
    });
    await eventually(() => agent.started.length === 1, "the turn running");

    hub.child.kill("SIGTERM");
    const code = await Promise.race([
      hub.exited,
      new Promise<"still running">((resolve) => setTimeout(() => resolve("still running"), 15_000)),
    ]);
    expect(code).toBe(0);
    // A transport close, not "io server disconnect": every client reconnects by itself after that.
    expect(reasons).toContain("transport close");
    expect(hub.output().stdout).toContain("stopped");

    agent.delayMs = 0;
    restarted = spawnHub(hub.env);
    await restarted.waitFor("chat-delivery-hub is running");
    await eventually(() => widget.connected && console.connected, "the clients back without help", 30_000);
    await eventually(
      () => [...shown.values()].some((message) => message.role === "agent" && message.text.includes("are you there?")),
      "the reply to the message sent before the stop",
      30_000,
    );
    const replies = [...shown.values()].filter((message) => message.text.includes("you said: are you there?"));
    expect(replies).toHaveLength(1);
  });
});
