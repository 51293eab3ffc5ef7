// A small, typed agent runtime for the hub: it answers turns (the `agentTurn` webhook of
// /v1/openapi.json) and starts a slow tool through the agent-runtime API. Replace `plan()` and the texts
// with your model's calls; keep the checks.
//
//   AGENT_SECRET=s3cret npx tsx examples/agent-runtime.ts          # listens on :4000
//   AGENT_URL=http://localhost:4000/turn AGENT_SECRET=s3cret npm start
//
// It needs HUB_URL (default http://localhost:3000) and HUB_API_KEY (default: read from ./data/secrets.json,
// where the hub keeps the key it generated).
import { createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { TurnInput, TurnReply } from "../src/agent/agent-port.js";
import { turnRequestSchema } from "../src/agent/agent-port.js";

export interface RuntimeOptions {
  hubUrl: string;
  hubApiKey: string;
  /** The hub's AGENT_SECRET; without it requests are not checked (fine on a laptop, never in production). */
  agentSecret: string | undefined;
  /** The async tool to start for a person's request, and how its arguments are made from their words. */
  tool: { name: string; arguments: (text: string) => Record<string, unknown> };
}

const MAX_AGE_MS = 5 * 60_000;

/** Verifies a turn request: signature over the raw body, then age and replay of `requestId`. */
export class TurnVerifier {
  private readonly seen = new Map<string, number>();
  constructor(private readonly secret: string | undefined) {}

  check(
    raw: Buffer,
    signature: string | undefined,
    now = Date.now(),
  ): { ok: true; body: unknown } | { ok: false; why: string } {
    if (this.secret) {
      const expected = Buffer.from(`sha256=${createHmac("sha256", this.secret).update(raw).digest("hex")}`);
      const given = Buffer.from(signature ?? "");
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        return { ok: false, why: "bad signature" };
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString("utf8"));
    } catch {
      return { ok: false, why: "not JSON" };
    }
    const { requestId, sentAt } = (body ?? {}) as { requestId?: unknown; sentAt?: unknown };
    const sent = typeof sentAt === "string" ? Date.parse(sentAt) : NaN;
    if (typeof requestId !== "string" || Number.isNaN(sent)) return { ok: false, why: "no requestId or sentAt" };
    if (Math.abs(now - sent) > MAX_AGE_MS) return { ok: false, why: "too old" };
    for (const [id, at] of this.seen) if (now - at > MAX_AGE_MS) this.seen.delete(id);
    if (this.seen.has(requestId)) return { ok: false, why: "replayed" };
    this.seen.set(requestId, now);
    return { ok: true, body };
  }
}

export function startAgentRuntime(options: RuntimeOptions, port = 4000): Promise<Server> {
  const verifier = new TurnVerifier(options.agentSecret);

  async function hub(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${options.hubUrl}/v1${path}`, {
      method,
      headers: { Authorization: `Bearer ${options.hubApiKey}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json().catch(() => null) };
  }

  /** What to say for one input. This is where a model would be called. */
  async function answer(conversationId: string, input: TurnInput): Promise<string[]> {
    switch (input.type) {
      case "user_message": {
        // The person's message id makes the tool call idempotent: a retried turn starts no second job.
        const call = await hub("POST", `/conversations/${conversationId}/tool-calls`, {
          tool: options.tool.name,
          arguments: options.tool.arguments(input.text),
          toolCallId: `msg-${input.messageId}`,
        });
        if (call.status === 202) {
          const { message } = call.body as { message: string | null };
          return [message ?? "I've started on that; I'll write as soon as it's ready."];
        }
        return ["I couldn't start that just now. Could you try again in a moment?"];
      }
      case "tool_result": {
        const result = input.result as { message?: string; data?: unknown };
        return [result.message ?? `Here is what ${input.tool} found: ${JSON.stringify(result.data)}`];
      }
      case "tool_failed":
        return input.reason === "cancelled" ? [] : [`That didn't work out (${input.message}). Shall I try again?`];
      case "tool_expired":
        // Stale: the hub did not pass it on. Offer a fresh run rather than an old answer.
        return [`What I found with ${input.tool} earlier is out of date now. Shall I look again?`];
      case "progress":
        return [input.text];
      case "handback":
        return [];
    }
  }

  const server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method !== "POST" || req.url !== "/turn") return send(404, { error: "POST /turn" });
    const checked = verifier.check(await readBody(req), req.headers["x-hub-signature-256"] as string | undefined);
    if (!checked.ok) return send(401, { error: checked.why });
    const parsed = turnRequestSchema.safeParse(checked.body);
    if (!parsed.success) return send(400, { error: "not a turn request" });
    try {
      const texts: string[] = [];
      for (const input of parsed.data.inputs) texts.push(...(await answer(parsed.data.conversation.id, input)));
      const reply: TurnReply = { messages: texts.map((text) => ({ text })) };
      send(200, reply);
    } catch {
      // The hub retries the turn with backoff; nothing is lost.
      send(503, { error: "try again" });
    }
  });
  return new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(server)));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function keyFromDataFolder(): string {
  const secrets = JSON.parse(readFileSync("data/secrets.json", "utf8")) as { hubApiKey?: string };
  if (!secrets.hubApiKey) throw new Error("set HUB_API_KEY (no key in data/secrets.json)");
  return secrets.hubApiKey;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const port = Number(process.env.PORT ?? 4000);
  await startAgentRuntime(
    {
      hubUrl: process.env.HUB_URL ?? "http://localhost:3000",
      hubApiKey: process.env.HUB_API_KEY ?? keyFromDataFolder(),
      agentSecret: process.env.AGENT_SECRET,
      tool: { name: "demo_search", arguments: (text) => ({ query: text }) },
    },
    port,
  );
  process.stdout.write(`agent runtime on http://127.0.0.1:${port}/turn\n`);
}
