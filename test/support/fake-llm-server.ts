// The HTTP skeleton both LLM stand-ins share: a real server on 127.0.0.1, one POST endpoint, headers checked
// before the body is read, refusals recorded with the body sent, the rest answered from the test's script.
// Each API supplies only what differs between providers: its checks, its parser and its formats.
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { FakeLlm, LlmAnswer, LlmRequest, LlmScript } from "./fake-llm.js";

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

export type Parsed = { ok: true; request: LlmRequest } | { ok: false; reply: Reply };

export interface LlmApi {
  /** The one endpoint, e.g. "/v1/chat/completions". */
  path: string;
  /** The refusal for a request's headers, or undefined when they pass. */
  checkHeaders(headers: IncomingHttpHeaders, apiKey: string): Reply | undefined;
  /** Normalizes a body the real API would accept, or gives the refusal it would send. */
  parse(body: unknown): Parsed;
  /** Renders a script's answer (a completion or a scripted error) in the API's format. */
  render(answer: LlmAnswer, request: LlmRequest): Reply;
  notFound(method: string, path: string): Reply;
  badJson(): Reply;
}

export async function startFakeLlm(api: LlmApi, script: LlmScript, apiKey: string): Promise<FakeLlm> {
  const fake: FakeLlm = {
    url: "",
    apiKey,
    requests: [],
    handlingMs: [],
    refusals: [],
    script,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  // The index in `requests` of the request being answered, when it passed validation.
  const respond = async (req: IncomingMessage, answered: { index?: number }): Promise<Reply> => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method !== "POST" || path !== api.path) return refuse(api.notFound(req.method ?? "GET", path));
    // Like the real APIs: a bad key is refused whatever the body holds.
    const headerRefusal = api.checkHeaders(req.headers, fake.apiKey);
    if (headerRefusal) return refuse(headerRefusal);
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return refuse(api.badJson());
    }
    const parsed = api.parse(body);
    if (!parsed.ok) return refuse(parsed.reply);
    const index = fake.requests.length;
    fake.requests.push(parsed.request);
    answered.index = index;
    let answer: LlmAnswer;
    try {
      answer = await fake.script(parsed.request, index);
    } catch (error) {
      // A script that throws is a test bug; answer as the API's own 500 so the failure is visible.
      answer = { error: { status: 500, message: `script failed: ${String(error)}` } };
    }
    return api.render(answer, parsed.request);
  };

  const refuse = (reply: Reply): Reply => {
    fake.refusals.push({ status: reply.status, body: reply.body });
    return reply;
  };

  const server = createServer((req, res) => {
    const arrived = performance.now();
    const answered: { index?: number } = {};
    void respond(req, answered).then(
      (reply) => {
        res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
        res.end(JSON.stringify(reply.body));
        if (answered.index !== undefined) fake.handlingMs[answered.index] = performance.now() - arrived;
      },
      () => res.destroy(),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Rough token counts for answers whose script gives no usage: about four characters a token. */
export function estimateTokens(value: unknown): number {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? "");
  return Math.max(1, Math.ceil(text.length / 4));
}

/** An id in the style the APIs use: a prefix and random base62 characters. */
export function randomId(prefix: string, length: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let id = prefix;
  for (let i = 0; i < length; i++) id += alphabet[Math.floor(Math.random() * alphabet.length)];
  return id;
}

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The `parse` refusal shorthand. */
export const refused = (reply: Reply): Parsed => ({ ok: false, reply });
