// A fake agent runtime over real HTTP: checks the hub's signature, records each turn, answers one
// message that names every input in order, can be made to fail for a while, and can hold turns until a
// test releases them.
import { createHmac, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import type { TurnInput, TurnRequest } from "../../src/agent/agent-port.js";

export const AGENT_SECRET = "agent-secret-for-tests";

export function describeInput(input: TurnInput): string {
  switch (input.type) {
    case "user_message":
      return `you said: ${input.text}`;
    case "tool_result":
      return `result: ${(input.result as { message?: string }).message}`;
    case "tool_failed":
      return `failed (${input.reason}): ${input.message}`;
    case "tool_expired":
      return `expired (${input.reason}): ${input.tool}`;
    case "progress":
      return `progress: ${input.text}`;
    case "handback":
      return "back from the human";
  }
}

export class AgentRuntime {
  readonly turns: TurnRequest[] = [];
  /** Turns received, before their answer (which `hold()` or `delayMs` may hold back). */
  readonly started: TurnRequest[] = [];
  /** Answer 503 to this many turns before answering normally. */
  failNext = 0;
  failures = 0;
  badSignatures = 0;
  /** Answers a turn itself (files, buttons…) instead of the one message naming every input; undefined: as usual. */
  respond: ((request: TurnRequest) => unknown) | undefined;
  /** How long each turn takes to answer (makes overlapping turns visible if the lease failed). */
  delayMs = 0;
  /** Held turns: per conversation (or "*" for every one), the gate a turn waits on before answering. */
  private readonly gates = new Map<string, Promise<void>>();
  /** When each answered turn started and ended, per conversation. */
  readonly spans: { conversationId: string; start: number; end: number }[] = [];
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    const app = express();
    app.use(express.raw({ type: "application/json", limit: "5mb" }));
    app.post("/turn", async (req, res) => {
      const start = Date.now();
      const raw = req.body as Buffer;
      const expected = Buffer.from(`sha256=${createHmac("sha256", AGENT_SECRET).update(raw).digest("hex")}`);
      const given = Buffer.from(req.get("X-Hub-Signature-256") ?? "");
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        this.badSignatures += 1;
        return void res.status(401).json({ error: "bad signature" });
      }
      if (this.failNext > 0) {
        this.failNext -= 1;
        this.failures += 1;
        return void res.status(503).json({ error: "down for maintenance" });
      }
      const request = JSON.parse(raw.toString()) as TurnRequest;
      this.started.push(request);
      const gate = this.gates.get(request.conversation.id) ?? this.gates.get("*");
      if (gate) await gate;
      if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      this.turns.push(request);
      this.spans.push({ conversationId: request.conversation.id, start, end: Date.now() });
      const own = this.respond?.(request);
      res.json(own ?? { messages: [{ text: request.inputs.map(describeInput).join(" | ") }] });
    });
    this.server = app.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/turn`;
    return this;
  }

  /**
   * Holds the turns of one conversation (every conversation when none is named): they are received (see
   * `started`) but not answered until the returned function is called.
   */
  hold(conversationId = "*"): () => void {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    this.gates.set(conversationId, gate);
    return () => {
      if (this.gates.get(conversationId) === gate) this.gates.delete(conversationId);
      release();
    };
  }

  startedOf(conversationId: string): TurnRequest[] {
    return this.started.filter((turn) => turn.conversation.id === conversationId);
  }

  turnsOf(conversationId: string): TurnRequest[] {
    return this.turns.filter((turn) => turn.conversation.id === conversationId);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
