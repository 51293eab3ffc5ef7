// Calls that carry secrets never follow a redirect: a tool backend's job start (its key, the callback URL)
// and cancel request, and a turn request to the agent runtime (the conversation, signed). Each server below
// answers 307 pointing at a second one; the second must receive nothing, and each call fails the way a
// failing answer does — the start refused, the cancel retried, the turn retried — naming the redirect.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { TOOL_KEY } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

interface Received {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
}

async function listen(handler: (req: IncomingMessage, received: Received) => [number, Record<string, string>]) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const entry = { method: req.method ?? "", path: req.url ?? "", headers: req.headers };
      received.push(entry);
      const [status, headers] = handler(req, entry);
      res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(JSON.stringify({ ok: true }));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return { server, received, host: `127.0.0.1:${port}`, url: `http://127.0.0.1:${port}` };
}

describe("no redirects on calls that carry secrets", () => {
  let elsewhere: Awaited<ReturnType<typeof listen>>;
  let redirecting: Awaited<ReturnType<typeof listen>>;
  /** Whether the backend accepts job starts (202) or redirects them too; cancels and turns always redirect. */
  let acceptStarts = false;
  let hub: TestHub;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    elsewhere = await listen(() => [200, {}]);
    redirecting = await listen((req) => {
      if (req.method === "POST" && req.url === "/vatio/match" && acceptStarts) return [202, {}];
      return [307, { Location: `${elsewhere.url}/collect${req.url}` }];
    });
    process.env.CLINIC_API = redirecting.url;
    process.env.CLINIC_API_KEY = TOOL_KEY;
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: { AGENT_URL: `${redirecting.url}/turn`, AGENT_SECRET: "agent-secret-for-tests", TURN_RETRY_BASE_MS: "100" },
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    for (const { server } of [redirecting, elsewhere]) {
      server.closeAllConnections();
      server.close();
    }
  });

  const redirectReason = (who: string) => `${who} answered 307 (redirect to ${elsewhere.host}), which is not followed`;

  /** The hub's log lines (JSON) with this message. */
  const logged = (msg: string) =>
    hub.logs
      .flatMap((chunk) => chunk.split("\n"))
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === msg);

  it("a job start, a cancel request and a turn answered with a redirect fail, naming it, and nothing reaches the other host", async () => {
    // The job start: refused as the backend failing, with the job failed.
    const conversationId = await hub.conversation();
    acceptStarts = false;
    const refused = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "redirect me", area: "Ñuñoa" },
    });
    expect(refused.status).toBe(502);
    expect(refused.body.error).toMatchObject({ code: "backend_failed", message: redirectReason("the backend") });
    const failed = await hub.db.job.findFirstOrThrow({ where: { conversationId } });
    expect(failed).toMatchObject({ status: "failed", error: redirectReason("the backend") });

    // The cancel request: still owed, tried again and again.
    acceptStarts = true;
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "then cancel me", area: "Ñuñoa" },
    });
    expect(started.status).toBe(202);
    const jobId = started.body.job.id as string;
    expect((await hub.api("POST", `/v1/jobs/${jobId}/cancel`)).status).toBe(200);
    const cancelPath = `/vatio/jobs/${jobId}`;
    await eventually(
      () => redirecting.received.filter((req) => req.method === "DELETE" && req.path === cancelPath).length >= 3,
      "the cancel request tried three times",
    );
    expect((await hub.db.job.findUniqueOrThrow({ where: { id: jobId } })).cancelRequest).toBe("pending");
    expect(logged("cancel request failed; will retry").filter((line) => line.job_id === jobId)[0]?.reason).toBe(
      redirectReason("the backend"),
    );

    // The turn: the person's message is not answered by whatever the redirect points at; the turn is retried.
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    await client.send("is anyone there?", "redirect-turn-1");
    await eventually(
      () => redirecting.received.filter((req) => req.path === "/turn").length >= 2,
      "the turn tried twice",
    );
    // (Identical failures are logged once per 10 s: the failed start's turn may have said it first.)
    const turnFailures = logged("turn failed; will retry").map((line) => (line.err as { message?: string }).message);
    expect(turnFailures).toContain(redirectReason("the agent runtime"));

    // Nothing was re-sent: not the start's key and callback URL, not the cancel, not the signed turn.
    expect(elsewhere.received).toEqual([]);
  });
});
