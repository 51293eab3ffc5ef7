// Every JSON endpoint, fuzzed with what clients and attackers send (fast-check): any JSON, nesting
// thousands of levels deep, NUL characters, lone UTF-16 surrogates, `__proto__` keys, wrong types, huge
// strings, text that is not JSON. The answer is always a 2xx or a 4xx with a JSON error naming its code —
// never a 5xx — and the hub keeps working afterwards.
import { createHmac } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession } from "./support/widget-client.js";

const APP_SECRET = "meta-app-secret-for-fuzz";
const RUNS = Number(process.env.FUZZ_RUNS ?? 60);

/** Strings a client may send, lone surrogates and NUL included. */
const anyString = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.constantFrom("\u0000", "a\u0000b", "\ud800", "\udfff", "x\ud83d", "__proto__", "", " ", "x".repeat(70_000)),
);
const anyKey = fc.oneof(anyString, fc.constantFrom("__proto__", "constructor", "prototype", "toString"));

const { value: hostile } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    anyString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(anyKey, tie("value"), { maxKeys: 4 }),
  ),
}));

/** A body as text: hostile JSON, a deeply nested one, or something that is not JSON at all. */
function bodies(shaped: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  return fc.oneof(
    shaped.map((value) => JSON.stringify(value) ?? "null"),
    hostile.map((value) => JSON.stringify(value) ?? "null"),
    fc.integer({ min: 60, max: 5000 }).map((n) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`),
    fc.integer({ min: 60, max: 5000 }).map((n) => `${"[".repeat(n)}${"]".repeat(n)}`),
    fc.constantFrom("{not json", "", "null", "[]", '"text"', "\u0000", '{"a":1}garbage'),
  );
}

/** Objects with the endpoint's own keys, holding hostile values, so validation has to look inside. */
const shapedAs = (keys: string[]) => fc.record(Object.fromEntries(keys.map((key) => [key, hostile])));

describe("fuzzing every JSON endpoint", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  let conversationId: string;
  let jobId: string;
  let callbackPath: string;
  const seen = new Map<number, number>();

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: { META_APP_SECRET: APP_SECRET, LOG_LEVEL: "error" },
    });
    conversationId = await hub.conversation();
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "fuzz", area: "Ñuñoa" },
    });
    jobId = started.body.job.id;
    callbackPath = new URL(backend.job(jobId).callbackUrl).pathname;
    visitor.Authorization = `Bearer ${(await openSession(hub.url)).token}`;
    const made = await hub.api("POST", "/v1/members", { id: "fuzz-member", name: "Fuzz" }, CONSOLE_API_KEY);
    member.Authorization = `Bearer ${made.body.key as string}`;
  });
  afterAll(async () => {
    await hub?.stop();
    await backend?.stop();
  });

  async function send(method: string, path: string, body: string, headers: Record<string, string> = {}) {
    const res = await fetch(`${hub.url}${path}`, {
      method,
      headers: { "Content-Type": "application/json", ...headers },
      body,
    });
    seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
    const text = await res.text();
    expect(res.status, `${method} ${path} ${body.slice(0, 200)} → ${text.slice(0, 300)}`).toBeLessThan(500);
    if (res.status >= 400) {
      expect(JSON.parse(text).error.code, text).toEqual(expect.any(String));
      expect(text).not.toMatch(/\n\s+at /); // no stack trace
    }
  }

  const agent = { Authorization: `Bearer ${HUB_API_KEY}` };
  const human = { Authorization: `Bearer ${CONSOLE_API_KEY}` };
  /** A widget session's token, once the hub runs. */
  const visitor: Record<string, string> = {};
  /** A team member's own key, once the hub runs. */
  const member: Record<string, string> = {};
  const endpoints: { name: string; method: string; path: () => string; keys: string[]; headers?: object }[] = [
    {
      name: "create conversation",
      method: "POST",
      path: () => "/v1/conversations",
      keys: ["channel", "contact", "name"],
      headers: agent,
    },
    {
      name: "agent message",
      method: "POST",
      path: () => `/v1/conversations/${conversationId}/messages`,
      keys: ["text"],
      headers: agent,
    },
    {
      name: "tool call",
      method: "POST",
      path: () => `/v1/conversations/${conversationId}/tool-calls`,
      keys: ["tool", "arguments", "toolCallId"],
      headers: agent,
    },
    { name: "job message", method: "POST", path: () => `/v1/jobs/${jobId}/messages`, keys: ["text"], headers: agent },
    {
      name: "person's reach",
      method: "PUT",
      path: () => "/v1/people/fuzz-person/reach/whatsapp",
      keys: ["contact", "account", "consent"],
      headers: agent,
    },
    { name: "cancel", method: "POST", path: () => `/v1/jobs/${jobId}/cancel`, keys: ["reason"], headers: agent },
    {
      name: "takeover",
      method: "POST",
      path: () => `/v1/conversations/${conversationId}/takeover`,
      keys: ["agent"],
      headers: human,
    },
    {
      name: "human message",
      method: "POST",
      path: () => `/v1/conversations/${conversationId}/human-messages`,
      keys: ["text", "agent"],
      headers: human,
    },
    {
      name: "human message by a canned reply",
      method: "POST",
      path: () => `/v1/conversations/${conversationId}/human-messages`,
      keys: ["canned", "variables", "agent"],
      headers: human,
    },
    {
      name: "private note",
      method: "POST",
      path: () => `/v1/conversations/${conversationId}/notes`,
      keys: ["text", "forAgent"],
      headers: human,
    },
    {
      name: "canned reply",
      method: "PUT",
      path: () => "/v1/canned-replies/fuzz",
      keys: ["title", "text"],
      headers: human,
    },
    {
      name: "handback",
      method: "POST",
      path: () => `/v1/conversations/${conversationId}/handback`,
      keys: [],
      headers: human,
    },
    {
      name: "close",
      method: "POST",
      path: () => `/v1/conversations/${conversationId}/close`,
      keys: [],
      headers: human,
    },
    {
      name: "widget session",
      method: "POST",
      path: () => "/widget/sessions",
      keys: ["channel", "visitorId", "identifier", "identifierHash", "name"],
    },
    {
      name: "web push subscription",
      method: "POST",
      path: () => "/widget/push-subscriptions",
      keys: ["subscription", "url"],
      headers: visitor,
    },
    {
      name: "push device",
      method: "POST",
      path: () => "/widget/devices",
      keys: ["platform", "token"],
      headers: visitor,
    },
    {
      name: "web push unsubscription",
      method: "DELETE",
      path: () => "/widget/push-subscriptions",
      keys: ["endpoint"],
      headers: visitor,
    },
    { name: "push device removal", method: "DELETE", path: () => "/widget/devices", keys: ["token"], headers: visitor },
    {
      name: "callback",
      method: "POST",
      path: () => callbackPath,
      keys: ["result", "message", "data", "progress", "notify"],
    },
    {
      name: "new member",
      method: "POST",
      path: () => "/v1/members",
      keys: ["id", "name", "role", "capacity", "teams"],
      headers: human,
    },
    {
      name: "member change",
      method: "PATCH",
      path: () => "/v1/members/fuzz-member",
      keys: ["name", "role", "capacity", "availability", "teams"],
      headers: human,
    },
    {
      name: "own availability",
      method: "PUT",
      path: () => "/v1/me/availability",
      keys: ["availability"],
      headers: member,
    },
    {
      name: "team",
      method: "PUT",
      path: () => "/v1/teams/fuzz-team",
      keys: [
        "name",
        "routing",
        "hours",
        "awayMessage",
        "firstResponseSeconds",
        "nextResponseSeconds",
        "isDefault",
        "members",
      ],
      headers: human,
    },
    { name: "unauthenticated API", method: "POST", path: () => "/v1/conversations", keys: ["channel", "contact"] },
  ];

  for (const endpoint of endpoints) {
    it(`${endpoint.name}: only 2xx or 4xx, whatever the body`, async () => {
      await fc.assert(
        fc.asyncProperty(bodies(shapedAs(endpoint.keys)), async (body) => {
          await send(endpoint.method, endpoint.path(), body, endpoint.headers as Record<string, string>);
        }),
        { numRuns: RUNS },
      );
    });
  }

  it("query strings: only 2xx or 4xx", async () => {
    const paths = [
      `/v1/conversations/${conversationId}/messages`,
      `/v1/conversations/${conversationId}/jobs`,
      "/v1/conversations",
      `/v1/conversations/${conversationId}/timeline`,
    ];
    const param = fc.constantFrom("after", "limit", "status", "channel", "control", "held", "waiting", "__proto__");
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...paths),
        fc.array(fc.tuple(param, anyString), { maxLength: 4 }),
        async (path, pairs) => {
          const query = pairs.map(([key, value]) => `${key}=${encodeURIComponent(value.toWellFormed())}`).join("&");
          const res = await fetch(`${hub.url}${path}?${query}`, { headers: human });
          expect(res.status, `${path}?${query}`).toBeLessThan(500);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("signed Meta webhooks: only 2xx or 4xx (never a 5xx Meta would retry for days)", async () => {
    const object = fc.constantFrom("whatsapp_business_account", "instagram", "page", "unknown");
    const shaped = fc.record({ object, entry: hostile });
    await fc.assert(
      fc.asyncProperty(bodies(shaped), async (body) => {
        const signature = `sha256=${createHmac("sha256", APP_SECRET).update(body).digest("hex")}`;
        await send("POST", "/webhooks/meta", body, { "X-Hub-Signature-256": signature });
      }),
      { numRuns: RUNS },
    );
  });

  it("after all of it, the hub still serves a plain request", async () => {
    const created = await hub.api("POST", "/v1/conversations", { channel: "web", contact: "after-the-fuzz" });
    expect(created.status).toBe(201);
    // The fuzz reached past validation as well as stopping at it.
    expect([...seen.keys()].some((status) => status < 300)).toBe(true);
    expect(seen.get(400)).toBeGreaterThan(0);
  });
});
