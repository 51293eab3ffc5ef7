// Calls that carry secrets never follow a redirect: a tool backend's job start (its key, the callback URL)
// and cancel request, and a turn request to the agent runtime (the conversation, signed). Each server below
// answers 307 pointing at a second one; the second must receive nothing, and each call fails the way a
// failing answer does — the start refused, the cancel retried, the turn retried — naming the redirect.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { graphClient } from "../src/channels/meta/graph-client.js";
import { RESULT_MAX_BYTES } from "../src/jobs/backend-call.js";
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

async function listen(
  handler: (req: IncomingMessage, received: Received) => [number, Record<string, string>, string?],
) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const entry = { method: req.method ?? "", path: req.url ?? "", headers: req.headers };
      received.push(entry);
      const [status, headers, body] = handler(req, entry);
      res
        .writeHead(status, { "Content-Type": "application/json", ...headers })
        .end(body ?? JSON.stringify({ ok: true }));
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
  /** A body the backend answers job starts with, 200, instead (no Content-Length: it is counted as read). */
  let hugeAnswer: string | undefined;
  let hub: TestHub;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    elsewhere = await listen(() => [200, {}]);
    redirecting = await listen((req) => {
      if (req.method === "POST" && req.url === "/vatio/match" && hugeAnswer) return [200, {}, hugeAnswer];
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
    expect(
      logged(
        "cancel request not delivered; it is sent again later (with backoff) until the backend answers below 500",
      ).filter((line) => line.job_id === jobId)[0]?.reason,
    ).toBe(redirectReason("the backend"));

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

  it("the Graph API client follows no redirect: the send fails naming it, and the token goes nowhere else", async () => {
    const before = elsewhere.received.length;
    const answer = await graphClient(redirecting.url, "v23.0", "graph-token-for-tests").post("1234/messages", {
      messaging_product: "whatsapp",
      to: "56911112222",
      text: { body: "hello" },
    });
    expect(answer).toMatchObject({
      ok: false,
      error: { httpStatus: 307, title: redirectReason("the Graph API") },
    });
    expect(elsewhere.received.slice(before)).toEqual([]);
  });

  it("a backend answer over 1 MiB is a failure naming the limit; a result over 1 MiB posted to the callback is a 413 JSON error", async () => {
    const conversationId = await hub.conversation();
    // Over the limit by a little, as one JSON value the tool would otherwise map as its result.
    hugeAnswer = JSON.stringify({ message: "here", data: "x".repeat(RESULT_MAX_BYTES) });
    try {
      const refused = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: "answer too much", area: "Ñuñoa" },
      });
      expect(refused.status).toBe(502);
      expect(refused.body.error).toMatchObject({
        code: "backend_failed",
        message: `the backend's answer is larger than 1 MiB (${RESULT_MAX_BYTES} bytes), which is not read`,
      });
    } finally {
      hugeAnswer = undefined;
    }

    acceptStarts = true;
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "post too much", area: "Ñuñoa" },
    });
    expect(started.status).toBe(202);
    const start = redirecting.received.filter((req) => req.method === "POST" && req.path === "/vatio/match").at(-1)!;
    const callbackUrl = String(start.headers["x-vatio-callback-url"]);
    const tooMuch = await fetch(callbackUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ result: "ok", message: "x".repeat(RESULT_MAX_BYTES) }),
    });
    expect(tooMuch.status).toBe(413);
    expect(await tooMuch.json()).toEqual({
      error: { code: "payload_too_large", message: "the body is larger than 1024 KiB" },
    });
    // The job still runs: a result within the limit is taken.
    const fine = await fetch(callbackUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ result: "ok", message: "fits" }),
    });
    expect(fine.status).toBe(200);
  });
});
