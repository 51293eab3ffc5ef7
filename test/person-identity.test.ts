// `$person.identifier` / `$person.channel`: the person's verified identity in a tool's request, filled by the hub
// and never by the model. The placeholder rules and the rendering on their own; then through a hub: an identified
// widget person (a session the integrator signed), WhatsApp people (a number, a BSUID alone) and a Messenger
// person writing in signed webhooks from the Graph API stand-in, an anonymous visitor, an erasure — with a tool
// backend that records every request it gets, and the model (the OpenAI stand-in) trying to name someone else.
import { once } from "node:events";
import { createHmac } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { personIdentifierOf, type PersonIdentity } from "../src/conversations/person-identity.js";
import { HubError } from "../src/errors.js";
import { parseToolFile } from "../src/tools/load-tools.js";
import { requirePersonIdentifier, toolNeedsPerson } from "../src/tools/person-placeholder.js";
import { renderCancelRequest, renderMessageRequest, renderToolRequest } from "../src/tools/render-request.js";
import type { Tool } from "../src/tools/tool-file.js";
import { lastUserText, toolCallsIn, toolMessagesFor, type FakeLlm } from "./support/fake-llm.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const IDENTITY_SECRET = "identity-secret-for-person-tests";
const APP_SECRET = "app-secret-for-person-tests";
const hashOf = (identifier: string) => createHmac("sha256", IDENTITY_SECRET).update(identifier).digest("hex");

/** A normal tool: the identity in the path, two headers and the body (a key the model is not offered). */
const lookupAccount = `
description: Looks up the person's account.
parameters:
  type: object
  properties:
    topic: { type: string }
request:
  method: POST
  base_url: "$env.ACCOUNT_API"
  path: /accounts/$person.identifier
  headers:
    X-Person-Id: "$person.identifier"
    X-Person-Channel: "$person.channel"
  body:
    topic:
    customer_id: "$person.identifier"
    nested: { who: "on $person.channel: $person.identifier" }
`;

/** An async tool: the job's id and the identity together; a cancel request must not carry the identity. */
const accountReport = `
description: Prepares the person's account report.
parameters:
  type: object
  properties:
    period: { type: string }
async:
  timeout: 10m
  cancel: { method: DELETE, path: /reports/$job.id }
  message: { method: POST, path: /reports/$job.id/messages }
request:
  method: POST
  base_url: "$env.ACCOUNT_API"
  path: /reports/$job.id
  headers:
    X-Person-Id: "$person.identifier"
    X-Fixed: fixed
  body:
    period:
    customer_id: "$person.identifier"
`;

/** A GET with the arguments as the query string: a parameter the path sets stays the hub's. */
const accountGet = `
description: Reads the person's account.
request:
  method: GET
  base_url: "$env.ACCOUNT_API"
  path: /lookup?customer=$person.identifier
`;

/** A tool with no `$person`: works for anyone. */
const weather = `
description: The weather.
request:
  method: POST
  base_url: "$env.ACCOUNT_API"
  path: /weather
`;

const tool = (name: string, text: string, env: Record<string, string> = {}): Tool => {
  const parsed = parseToolFile(name, `${name}.yml`, text, { envHas: (key) => key in env || key === "ACCOUNT_API" });
  if (!("tool" in parsed)) throw new Error(JSON.stringify(parsed.problems));
  return parsed.tool;
};
const env = (name: string) => ({ ACCOUNT_API: "http://accounts.test" })[name];
const widgetPerson: PersonIdentity = {
  identifier: "user-42",
  channel: "web",
  kind: "widget_identity",
  verified: true,
};
const problemsOf = (text: string) => {
  const parsed = parseToolFile("t", "t.yml", text, { envHas: () => true });
  return "problems" in parsed ? parsed.problems : [];
};

describe("$person placeholders in a tool file", () => {
  it("are accepted in the request's path, headers and body, and refused in base_url, the cancel path, the message and a template", () => {
    expect(problemsOf(lookupAccount)).toEqual([]);
    expect(problemsOf(accountReport)).toEqual([]);
    expect(problemsOf(accountGet)).toEqual([]);
    expect(problemsOf(lookupAccount.replace('"$env.ACCOUNT_API"', '"https://$person.identifier.example"'))).toEqual([
      {
        file: "t.yml",
        key: "request.base_url",
        reason: expect.stringContaining("$person.identifier is not filled in request.base_url"),
      },
    ]);
    expect(problemsOf(accountReport.replace("/reports/$job.id }", "/reports/$person.identifier }"))).toEqual([
      {
        file: "t.yml",
        key: "async.cancel.path",
        reason: expect.stringContaining("the person's identity goes with the start request only"),
      },
    ]);
    expect(
      problemsOf(
        accountReport.replace(
          "/reports/$job.id/messages }",
          "/reports/$job.id/messages, body: { who: $person.identifier } }",
        ),
      ),
    ).toMatchObject([{ key: "async.message.body.who" }]);
    const template = accountReport.replace(
      "  cancel:",
      '  whatsapp_template: { name: ready, language: en, components: [{ type: body, parameters: ["$person.identifier"] }] }\n  cancel:',
    );
    expect(problemsOf(template)).toMatchObject([{ key: "async.whatsapp_template.components.0.parameters.0" }]);
    // A field the hub does not fill is refused as any unknown placeholder is.
    expect(problemsOf(lookupAccount.replace('"$person.channel"', '"$person.name"'))).toEqual([
      {
        file: "t.yml",
        key: "request.headers.X-Person-Channel",
        reason: expect.stringContaining("$person.name is not a placeholder the hub fills here"),
      },
    ]);
  });

  it("refuses a parameter the model would be offered for a body key the identity fills", () => {
    const offered = lookupAccount.replace(
      "topic: { type: string }",
      "topic: { type: string }\n    customer_id: { type: string }",
    );
    expect(problemsOf(offered)).toEqual([
      {
        file: "t.yml",
        key: "parameters.properties.customer_id",
        reason: expect.stringContaining("filled by the hub with the person's verified identity"),
      },
    ]);
  });

  it("mark the tools that need the person; a call without one is 409 person_not_identified", () => {
    const lookup = tool("lookup_account", lookupAccount);
    expect(toolNeedsPerson(lookup)).toBe(true);
    expect(toolNeedsPerson(tool("weather", weather))).toBe(false);
    expect(toolNeedsPerson({ request: undefined, mcp: { ...mcpSource, personArgument: "customer" } })).toBe(true);
    expect(toolNeedsPerson({ request: undefined, mcp: mcpSource })).toBe(false);
    expect(requirePersonIdentifier(tool("weather", weather), undefined)).toBeUndefined();
    expect(requirePersonIdentifier(lookup, widgetPerson)).toBe(widgetPerson);
    const refused = (() => {
      try {
        requirePersonIdentifier(lookup, undefined);
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(HubError);
    expect(refused).toMatchObject({
      status: 409,
      code: "person_not_identified",
      message: "this tool needs the person's verified identity; the person is not identified",
    });
  });
});

const mcpSource = {
  server: "accounts",
  tool: "lookup",
  taskSupport: "forbidden" as const,
  syncBudgetMs: 1000,
  notifyProgress: false,
};

describe("rendering a request with the person", () => {
  it("fills path, headers and body with the person; arguments never override the hub's keys", () => {
    const request = renderToolRequest(
      tool("lookup_account", lookupAccount),
      { topic: "billing", customer_id: "user-1", nested: "user-1" },
      env,
      { person: widgetPerson },
    );
    expect(request.url).toBe("http://accounts.test/accounts/user-42");
    expect(request.headers).toMatchObject({ "X-Person-Id": "user-42", "X-Person-Channel": "web" });
    expect(JSON.parse(request.body!)).toEqual({
      topic: "billing",
      customer_id: "user-42",
      nested: { who: "on web: user-42" },
    });
  });

  it("encodes the identifier in the URL, and in a header when it is not visible ASCII", () => {
    const person = { ...widgetPerson, identifier: "josé/../admin?x=1" };
    const request = renderToolRequest(tool("lookup_account", lookupAccount), {}, env, { person });
    expect(request.url).toBe("http://accounts.test/accounts/jos%C3%A9%2F..%2Fadmin%3Fx%3D1");
    expect(request.headers["X-Person-Id"]).toBe("jos%C3%A9%2F..%2Fadmin%3Fx%3D1");
    expect(JSON.parse(request.body!).customer_id).toBe("josé/../admin?x=1");
    const plain = renderToolRequest(tool("lookup_account", lookupAccount), {}, env, {
      person: { ...widgetPerson, identifier: "Ana Díaz".replace("í", "i") },
    });
    expect(plain.headers["X-Person-Id"]).toBe("Ana Diaz");
  });

  it("keeps a query parameter the path sets over an argument of that name", () => {
    const request = renderToolRequest(tool("account_get", accountGet), { customer: "user-1", q: "x" }, env, {
      person: widgetPerson,
    });
    const url = new URL(request.url);
    expect(url.searchParams.getAll("customer")).toEqual(["user-42"]);
    expect(url.searchParams.get("q")).toBe("x");
  });

  it("refuses to render a request using $person without a person; the job id alone still works for others", () => {
    expect(() => renderToolRequest(tool("lookup_account", lookupAccount), {}, env)).toThrow(
      "this tool needs the person's verified identity",
    );
    const jobId = "4f0e5b1c-2d3a-4b5c-8d9e-0f1a2b3c4d5e";
    expect(renderToolRequest(tool("weather", weather), {}, env, jobId).url).toBe("http://accounts.test/weather");
    const report = renderToolRequest(tool("account_report", accountReport), { period: "may" }, env, {
      jobId,
      person: widgetPerson,
    });
    expect(report.url).toBe(`http://accounts.test/reports/${jobId}`);
  });

  it("leaves the identity out of the cancel and message requests (they name the job by its id)", () => {
    const jobId = "4f0e5b1c-2d3a-4b5c-8d9e-0f1a2b3c4d5e";
    const report = tool("account_report", accountReport);
    const cancel = renderCancelRequest(report, jobId, env)!;
    expect(cancel.headers).toEqual({ "X-Fixed": "fixed", "X-Vatio-Job-Id": jobId });
    const message = renderMessageRequest(report, jobId, "also June", env)!;
    expect(message.headers).not.toHaveProperty("X-Person-Id");
    expect(JSON.stringify(message)).not.toContain("$person");
  });
});

interface Received {
  method: string;
  path: string;
  query: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** A tool backend that records every request: normal tools answer at once, async ones accept. */
async function startRecorder(): Promise<{ url: string; received: Received[]; stop(): Promise<void> }> {
  const received: Received[] = [];
  const app = express();
  app.use(express.json());
  app.all(/.*/, (req, res) => {
    received.push({ method: req.method, path: req.path, query: req.query, headers: req.headers, body: req.body });
    if (req.path.startsWith("/reports/")) return void res.status(202).json({ message: "Preparing your report." });
    res.status(200).json({ message: "Found the account." });
  });
  const server: Server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe("through a hub", () => {
  let hub: TestHub;
  let graph: FakeGraph;
  let llm: FakeLlm;
  let backend: Awaited<ReturnType<typeof startRecorder>>;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    backend = await startRecorder();
    // The hub's tool environment is its process's (as startToolBackend does for $env.CLINIC_API).
    process.env.ACCOUNT_API = backend.url;
    graph = await new FakeGraph({ appSecret: APP_SECRET }).start();
    // The model always names someone else: the identity the backend gets must be the hub's anyway.
    llm = await startFakeOpenAI((req) => {
      const last = req.messages.at(-1)!;
      if (last.role === "tool" || !lastUserText(req).includes("balance")) return { text: "Done." };
      return { toolCalls: [{ name: "lookup_account", args: { topic: "billing", customer_id: "user-1" } }] };
    });
    hub = await TestHub.start({
      tools: { lookup_account: lookupAccount, account_report: accountReport, account_get: accountGet, weather },
      env: {
        WIDGET_IDENTITY_SECRET: IDENTITY_SECRET,
        AGENT_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: llm.apiKey,
        OPENAI_BASE_URL: llm.url,
        ...metaEnvFor(graph, APP_SECRET),
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await llm?.stop();
    await graph?.stop();
    await backend?.stop();
  });

  const identified = (identifier: string) => openSession(hub.url, { identifier, identifierHash: hashOf(identifier) });
  const callTool = (conversationId: string, name: string, args: Record<string, unknown>) =>
    hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, { tool: name, arguments: args });
  const receivedSince = (count: number) => backend.received.slice(count);

  /** The conversation a Meta webhook made for a person, once the hub has taken their message. */
  const metaConversation = (channel: string, contactOrUserId: string) =>
    eventually(async () => {
      const [row] = await hub.ctx.sql.query<{ id: string }>(
        `SELECT id FROM "Conversation" WHERE channel = $1 AND (contact = $2 OR "userId" = $2)
         AND "lastInboundAt" IS NOT NULL`,
        [channel, contactOrUserId],
      );
      return row?.id;
    }, `the ${channel} conversation`);

  it("sends an identified widget person's identifier, whatever the arguments say", async () => {
    const session = await identified("user-42");
    expect(await personIdentifierOf(hub.ctx.sql, session.conversationId)).toEqual({
      identifier: "user-42",
      channel: "web",
      kind: "widget_identity",
      verified: true,
    });
    const before = backend.received.length;
    const res = await callTool(session.conversationId, "lookup_account", {
      topic: "billing",
      customer_id: "user-1",
      nested: "user-1",
    });
    expect(res).toMatchObject({ status: 200, body: { result: { message: "Found the account." } } });
    const [got] = receivedSince(before);
    expect(got).toMatchObject({
      method: "POST",
      path: "/accounts/user-42",
      headers: { "x-person-id": "user-42", "x-person-channel": "web" },
      body: { topic: "billing", customer_id: "user-42", nested: { who: "on web: user-42" } },
    });
    // The recorded call keeps the model's arguments only: the identity is never in the timeline.
    const timeline = await hub.ctx.sql.query<{ role: string; data: unknown }>(
      `SELECT role, data FROM "Message" WHERE "conversationId" = $1::uuid ORDER BY "createdAt"`,
      [session.conversationId],
    );
    expect(timeline.map((row) => row.role)).toEqual(["tool_call", "tool_result"]);
    expect(timeline[0]!.data).toMatchObject({ arguments: { customer_id: "user-1" } });
    expect(JSON.stringify(timeline)).not.toContain("user-42");

    const query = await callTool(session.conversationId, "account_get", { customer: "user-1" });
    expect(query.status).toBe(200);
    expect(backend.received.at(-1)).toMatchObject({ method: "GET", path: "/lookup", query: { customer: "user-42" } });
  });

  it("starts an async tool's job with the identity, and calls it off without it", async () => {
    const session = await identified("user-77");
    const before = backend.received.length;
    const res = await callTool(session.conversationId, "account_report", { period: "may", customer_id: "user-1" });
    expect(res.status).toBe(202);
    const jobId = res.body.job.id as string;
    const [start] = receivedSince(before);
    expect(start).toMatchObject({
      path: `/reports/${jobId}`,
      headers: { "x-person-id": "user-77", "x-vatio-job-id": jobId },
      body: { period: "may", customer_id: "user-77" },
    });
    const cancel = await hub.api("POST", `/v1/jobs/${jobId}/cancel`, {}, CONSOLE_API_KEY);
    expect(cancel.status).toBeLessThan(300);
    const sent = await eventually(
      () => backend.received.find((each) => each.method === "DELETE" && each.path === `/reports/${jobId}`),
      "the cancel request",
    );
    expect(sent.headers["x-person-id"]).toBeUndefined();
    expect(sent.headers["x-fixed"]).toBe("fixed");
  });

  it("sends a WhatsApp person's number, a BSUID while they hide it, and a Messenger PSID", async () => {
    await graph.whatsappInbound("15551230001", "hello");
    const byNumber = await metaConversation("whatsapp", "15551230001");
    expect(await personIdentifierOf(hub.ctx.sql, byNumber)).toEqual({
      identifier: "15551230001",
      channel: "whatsapp",
      kind: "whatsapp_number",
      verified: true,
    });
    let before = backend.received.length;
    expect((await callTool(byNumber, "lookup_account", { topic: "orders" })).status).toBe(200);
    expect(receivedSince(before)[0]).toMatchObject({
      path: "/accounts/15551230001",
      headers: { "x-person-id": "15551230001", "x-person-channel": "whatsapp" },
      body: { customer_id: "15551230001" },
    });

    await graph.whatsappInbound({ userId: "US.1349120865530274" }, "hello");
    const byBsuid = await metaConversation("whatsapp", "US.1349120865530274");
    expect(await personIdentifierOf(hub.ctx.sql, byBsuid)).toMatchObject({
      identifier: "US.1349120865530274",
      kind: "whatsapp_bsuid",
    });

    await graph.messengerInbound("7001002003004005", "hello");
    const messenger = await metaConversation("messenger", "7001002003004005");
    before = backend.received.length;
    expect((await callTool(messenger, "lookup_account", {})).status).toBe(200);
    expect(receivedSince(before)[0]).toMatchObject({
      headers: { "x-person-id": "7001002003004005", "x-person-channel": "messenger" },
    });
  });

  it("refuses the call of an anonymous visitor with a clear error, and reaches no backend", async () => {
    const visitor = await openSession(hub.url);
    expect(await personIdentifierOf(hub.ctx.sql, visitor.conversationId)).toBeUndefined();
    const before = backend.received.length;
    const res = await callTool(visitor.conversationId, "lookup_account", { topic: "billing", customer_id: "user-42" });
    expect(res).toMatchObject({
      status: 409,
      body: {
        error: {
          code: "person_not_identified",
          message: "this tool needs the person's verified identity; the person is not identified",
        },
      },
    });
    // An async tool is refused before a job exists.
    expect((await callTool(visitor.conversationId, "account_report", {})).status).toBe(409);
    expect(await hub.db.job.count({ where: { conversationId: visitor.conversationId } })).toBe(0);
    // A tool without $person works for them.
    expect((await callTool(visitor.conversationId, "weather", {})).status).toBe(200);
    expect(receivedSince(before).map((each) => each.path)).toEqual(["/weather"]);
  });

  it("has no person for a conversation an agent runtime opened and no one wrote in", async () => {
    const widget = await hub.conversation("web", "user-42");
    expect(await personIdentifierOf(hub.ctx.sql, widget)).toBeUndefined();
    const whatsapp = await hub.conversation("whatsapp", "15551230099");
    expect(await personIdentifierOf(hub.ctx.sql, whatsapp)).toBeUndefined();
    expect((await callTool(whatsapp, "lookup_account", {})).status).toBe(409);
    expect(await personIdentifierOf(hub.ctx.sql, "not-a-uuid")).toBeUndefined();
  });

  it("has no person once the conversation is erased", async () => {
    const session = await identified("user-erased");
    expect(await personIdentifierOf(hub.ctx.sql, session.conversationId)).toMatchObject({ identifier: "user-erased" });
    const erased = await hub.api("POST", `/v1/conversations/${session.conversationId}/erase`, {}, CONSOLE_API_KEY);
    expect(erased.status).toBe(200);
    expect(await personIdentifierOf(hub.ctx.sql, session.conversationId)).toBeUndefined();
    expect((await callTool(session.conversationId, "lookup_account", {})).status).toBe(410);
  });

  it("the model's call carries the verified identity, and an anonymous visitor's model reads the refusal", async () => {
    const person = await identified("user-88");
    const client = await WidgetClient.connect(hub.url, { token: person.token });
    clients.push(client);
    const before = backend.received.length;
    await client.send("what is my balance?", "balance-1");
    const got = await eventually(
      () => receivedSince(before).find((each) => each.path === "/accounts/user-88"),
      "the call",
    );
    expect(got).toMatchObject({ headers: { "x-person-id": "user-88" }, body: { customer_id: "user-88" } });
    // The model was never offered the identity as a parameter.
    const offered = llm.requests.at(-1)!.tools.find((each) => each.name === "lookup_account")!;
    expect(JSON.stringify(offered.parameters)).not.toContain("customer_id");

    const visitor = await openSession(hub.url);
    const anonymous = await WidgetClient.connect(hub.url, { token: visitor.token });
    clients.push(anonymous);
    const requests = llm.requests.length;
    await anonymous.send("what is my balance?", "balance-2");
    const answer = await eventually(() => {
      for (const req of llm.requests.slice(requests)) {
        const call = toolCallsIn(req).at(-1);
        const reply = call && toolMessagesFor(req, call.id)[0];
        if (reply) return reply.content;
      }
      return undefined;
    }, "the model told the call was refused");
    expect(answer).toContain("this tool needs the person's verified identity; the person is not identified");
    expect(backend.received.slice(before).filter((each) => each.path.startsWith("/accounts/"))).toHaveLength(1);
  });
});
