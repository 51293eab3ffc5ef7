// The OpenAPI document of /v1 against the hub itself: it lists exactly the routes that are mounted, its
// schemas are valid JSON Schema 2020-12, and what the running hub answers validates against them.
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { Router } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleRoutes } from "../src/server/routes/console.js";
import { erasureRoutes } from "../src/server/routes/erasure.js";
import { noteRoutes } from "../src/server/routes/notes.js";
import { personReachRoutes } from "../src/server/routes/person-reach.js";
import { v1Routes } from "../src/server/routes/v1.js";
import { teamRoutes } from "../src/server/routes/team.js";
import { TestHub, CONSOLE_API_KEY } from "./support/test-hub.js";
import { addMember } from "./support/team-fixtures.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { checkStock, matchTherapists, matchWithMessages } from "./support/tool-files.js";

interface Doc {
  openapi: string;
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: { "application/json": { schema: object } } }> }>
  >;
  components: { schemas: Record<string, object> };
  webhooks: Record<string, unknown>;
}

/** "get /conversations/:id" for every route an Express router mounts. */
function mountedRoutes(router: Router): string[] {
  return router.stack.flatMap((layer) =>
    layer.route
      ? Object.keys((layer.route as unknown as { methods: Record<string, boolean> }).methods).map(
          (method) => `${method} ${layer.route!.path}`,
        )
      : [],
  );
}

describe("the OpenAPI document", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  let doc: Doc;
  let ajv: Ajv2020;
  /** "post /conversations 201" for every documented answer a real response was validated against. */
  const validated = new Set<string>();

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await TestHub.start({
      tools: {
        match_therapists: matchTherapists,
        match_online: matchWithMessages,
        check_stock: checkStock,
        // The same backend, made only once a member of the team approves the call.
        match_approved: `${matchTherapists}\napproval: team\n`,
      },
      // A WhatsApp number to record a person's reach for (nothing is sent to it here).
      env: { WA_PHONE_NUMBER_ID: "1098765432", WA_ACCESS_TOKEN: "wa-token-for-the-document" },
    });
    const res = await fetch(`${hub.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    doc = (await res.json()) as Doc;
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema({ $id: "doc", components: doc.components });
  });
  afterAll(async () => {
    await hub?.stop();
    await backend?.stop();
  });

  /** Calls the hub and checks the answer against the document's schema for that path, method and status. */
  async function call(method: string, path: string, template: string, body?: unknown, key?: string) {
    const res = await hub.api(method, `/v1${path}`, body, key);
    const documented = doc.paths[template]?.[method.toLowerCase()]?.responses[String(res.status)];
    expect(documented, `${method} ${template} answered ${res.status}, which is not documented`).toBeDefined();
    const schema = documented!.content?.["application/json"].schema;
    if (schema) {
      const validate = ajv.compile({ $ref: `doc${(schema as { $ref: string }).$ref}` });
      expect(validate(res.body), `${method} ${template} ${res.status}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    }
    validated.add(`${method.toLowerCase()} ${template} ${res.status}`);
    return res;
  }

  it("is OpenAPI 3.1 with valid JSON Schema 2020-12 components and the agent-turn webhook", () => {
    expect(doc.openapi).toBe("3.1.0");
    for (const [id, schema] of Object.entries(doc.components.schemas)) {
      expect(() => ajv.getSchema(`doc#/components/schemas/${id}`), id).not.toThrow();
      expect(ajv.validateSchema(schema), `${id}: ${ajv.errorsText(ajv.errors)}`).toBe(true);
    }
    expect(doc.webhooks.agentTurn).toBeDefined();
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(["TurnRequest", "TurnReply"]));
  });

  it("documents exactly the routes mounted under /v1", () => {
    const mounted = [
      ...mountedRoutes(consoleRoutes(hub.ctx)),
      ...mountedRoutes(noteRoutes(hub.ctx)),
      ...mountedRoutes(erasureRoutes(hub.ctx)),
      ...mountedRoutes(personReachRoutes(hub.ctx)),
      ...mountedRoutes(v1Routes(hub.ctx)),
      ...mountedRoutes(teamRoutes(hub.ctx)),
    ].sort();
    const documented = Object.entries(doc.paths)
      .flatMap(([path, operations]) =>
        Object.keys(operations).map((method) => `${method} ${path.replace(/\{(\w+)\}/g, ":$1")}`),
      )
      .sort();
    expect(documented).toEqual(mounted);
  });

  it("describes the support team's answers: members, their keys, teams", async () => {
    const admin = CONSOLE_API_KEY;
    const members = "/members";
    const member = "/members/{id}";
    await call("PUT", "/teams/oa-team", "/teams/{id}", { name: "Support" }, admin);
    await call("PUT", "/teams/oa-team", "/teams/{id}", { name: "Support", isDefault: true }, admin);
    await call("PUT", "/teams/oa-team", "/teams/{id}", { name: "" }, admin);
    const made = await call("POST", members, members, { id: "oa-ana", name: "Ana", teams: ["oa-team"] }, admin);
    await call("POST", members, members, { id: "oa-ana", name: "Ana" }, admin);
    const own = made.body.key as string;
    await call("POST", members, members, { id: "oa-ben", name: "Ben" }, own);
    await call("GET", members, members, undefined, own);
    await call("GET", members, members);
    await call("GET", "/members/oa-ana", member, undefined, own);
    await call("GET", "/members/nobody", member, undefined, admin);
    await call("PATCH", "/members/oa-ana", member, { capacity: 2 }, admin);
    await call("GET", "/me", "/me", undefined, own);
    await call("PUT", "/me/availability", "/me/availability", { availability: "busy" }, own);
    await call("GET", "/teams", "/teams");
    await call("GET", "/teams/oa-team", "/teams/{id}", undefined, own);
    await call("POST", "/members/oa-ana/key", "/members/{id}/key", undefined, admin);
    await call("DELETE", "/members/oa-ana", member, undefined, admin);
    await call("DELETE", "/teams/oa-team", "/teams/{id}", undefined, admin);
    await call("DELETE", "/teams/oa-team", "/teams/{id}", undefined, admin);
  });

  it("describes what the running hub answers, success and error alike", async () => {
    const created = await call("POST", "/conversations", "/conversations", { channel: "web", contact: "oa-reader" });
    await call("POST", "/conversations", "/conversations", { channel: "web", contact: "oa-reader" });
    await call("POST", "/conversations", "/conversations", { channel: "carrier-pigeon", contact: "x" });
    const id = created.body.conversation.id as string;
    const conversation = "/conversations/{id}";
    await call("GET", `/conversations/${id}`, conversation);
    await call("GET", `/conversations/${crypto.randomUUID()}`, conversation);
    await call("GET", `/conversations/${id}`, conversation, undefined, "not-a-key");
    await call("POST", `/conversations/${id}/messages`, `${conversation}/messages`, { text: "Hello" });
    await call("POST", `/conversations/${id}/messages`, `${conversation}/messages`, { text: "" });

    const started = await call("POST", `/conversations/${id}/tool-calls`, `${conversation}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "anxiety", area: "Ñuñoa" },
      toolCallId: "call-1",
    });
    expect(started.status).toBe(202);
    backend.startMode = { kind: "immediate", body: { available: 3 } };
    const sync = await call("POST", `/conversations/${id}/tool-calls`, `${conversation}/tool-calls`, {
      tool: "check_stock",
      arguments: { sku: "A-1" },
    });
    expect(sync.status).toBe(200);
    backend.startMode = { kind: "accept" };
    await call("POST", `/conversations/${id}/tool-calls`, `${conversation}/tool-calls`, { tool: "no_such_tool" });

    const jobId = started.body.job.id as string;
    // A message to a running job: the backend's answer; a tool that takes none is a 409.
    const listening = await call("POST", `/conversations/${id}/tool-calls`, `${conversation}/tool-calls`, {
      tool: "match_online",
      arguments: { reason: "anxiety", area: "online" },
    });
    const messages = "/jobs/{id}/messages";
    await call("POST", `/jobs/${listening.body.job.id}/messages`, messages, { text: "also on Saturdays" });
    await call("POST", `/jobs/${listening.body.job.id}/messages`, messages, { text: "" });
    await call("POST", `/jobs/${jobId}/messages`, messages, { text: "hello" });
    await call("POST", `/jobs/${jobId}/cancel`, "/jobs/{id}/cancel", undefined, CONSOLE_API_KEY);
    await call("GET", `/conversations/${id}/messages?limit=50`, `${conversation}/messages`);
    await call("GET", `/conversations/${id}/messages?limit=0`, `${conversation}/messages`);
    await call("GET", `/conversations/${id}/jobs?status=running`, `${conversation}/jobs`);
    await call("GET", `/jobs/${jobId}`, "/jobs/{id}");
    await call("POST", `/jobs/${jobId}/cancel`, "/jobs/{id}/cancel");
    await call("GET", "/tools", "/tools");
    await call("POST", "/tools/reload", "/tools/reload");

    const waiting = await call("POST", `/conversations/${id}/tool-calls`, `${conversation}/tool-calls`, {
      tool: "match_approved",
      arguments: { reason: "anxiety", area: "Ñuñoa" },
    });
    const approval = `/jobs/${waiting.body.job.id as string}/approval`;
    await call("POST", approval, "/jobs/{id}/approval", { decision: "perhaps" }, CONSOLE_API_KEY);
    await call("POST", approval, "/jobs/{id}/approval", { decision: "approve" }, CONSOLE_API_KEY);
    await call("POST", approval, "/jobs/{id}/approval", { decision: "refuse" }, CONSOLE_API_KEY);
    await call(
      "POST",
      `/jobs/${crypto.randomUUID()}/approval`,
      "/jobs/{id}/approval",
      { decision: "refuse" },
      CONSOLE_API_KEY,
    );

    await call("GET", "/conversations?channel=web", "/conversations", undefined, CONSOLE_API_KEY);
    await call("GET", `/conversations/${id}/timeline`, `${conversation}/timeline`, undefined, CONSOLE_API_KEY);
    const agent = { id: "ana", name: "Ana" };
    await call("POST", `/conversations/${id}/takeover`, `${conversation}/takeover`, { agent }, CONSOLE_API_KEY);
    await call("POST", `/conversations/${id}/takeover`, `${conversation}/takeover`, { agent: "bo" }, CONSOLE_API_KEY);
    await call(
      "POST",
      `/conversations/${id}/human-messages`,
      `${conversation}/human-messages`,
      { text: "Hi, Ana here", agent },
      CONSOLE_API_KEY,
    );
    await call("POST", `/conversations/${id}/handback`, `${conversation}/handback`, undefined, CONSOLE_API_KEY);
    // A hand-off to the team (this hub has none: the console's, with nobody on it), and an admin's move.
    await call("POST", `/conversations/${id}/handoff`, `${conversation}/handoff`, { reason: "a rule matched" });
    await call("POST", `/conversations/${id}/handoff`, `${conversation}/handoff`, { reason: "" });
    await call("POST", `/conversations/${id}/assign`, `${conversation}/assign`, { member: null }, CONSOLE_API_KEY);
    await addMember(hub.ctx.sql, { id: "oa-bo", seenAt: null });
    await call("POST", `/conversations/${id}/assign`, `${conversation}/assign`, { member: "oa-bo" }, CONSOLE_API_KEY);
    await call("POST", `/conversations/${id}/handback`, `${conversation}/handback`, undefined, CONSOLE_API_KEY);
    // The team's notes and canned replies.
    const notes = `${conversation}/notes`;
    await call("POST", `/conversations/${id}/notes`, notes, { text: "VIP", forAgent: true }, CONSOLE_API_KEY);
    await call("POST", `/conversations/${id}/notes`, notes, { text: "" }, CONSOLE_API_KEY);
    await call("POST", `/conversations/${id}/notes`, notes, { text: "from the agent" });
    await call("GET", `/conversations/${id}/notes`, notes, undefined, CONSOLE_API_KEY);
    await call("GET", `/conversations/${crypto.randomUUID()}/notes`, notes);
    const canned = "/canned-replies/{id}";
    await call("PUT", "/canned-replies/thanks", canned, { title: "Thanks", text: "Thanks, {{name}}" }, CONSOLE_API_KEY);
    await call("PUT", "/canned-replies/thanks", canned, { title: "Thanks", text: "Thanks!" }, CONSOLE_API_KEY);
    await call("PUT", "/canned-replies/thanks", canned, { title: "", text: "Thanks!" }, CONSOLE_API_KEY);
    await call("GET", "/canned-replies", "/canned-replies", undefined, CONSOLE_API_KEY);
    await call("DELETE", "/canned-replies/thanks", canned, undefined, CONSOLE_API_KEY);
    await call("DELETE", "/canned-replies/thanks", canned, undefined, CONSOLE_API_KEY);
    await call("POST", `/conversations/${id}/close`, `${conversation}/close`, undefined, CONSOLE_API_KEY);
    await call("POST", `/conversations/${id}/close`, `${conversation}/close`);
    await call("POST", `/conversations/${crypto.randomUUID()}/close`, `${conversation}/close`);
    await hub.settled();

    const reach = "/people/{identifier}/reach/whatsapp";
    const consent = { at: new Date().toISOString(), source: "signup", text: "Results on WhatsApp, please." };
    await call("GET", "/people/oa-person/reach/whatsapp", reach);
    await call("PUT", "/people/oa-person/reach/whatsapp", reach, { contact: "+56 9 1234 5678", consent });
    await call("PUT", "/people/oa-person/reach/whatsapp", reach, { contact: "56912345678", consent });
    await call("PUT", "/people/oa-person/reach/whatsapp", reach, { contact: "nope", consent });
    await call("GET", "/people/oa-person/reach/whatsapp", reach);
    await call("DELETE", "/people/oa-person/reach/whatsapp", reach);
    await call("DELETE", "/people/nobody/reach/whatsapp", reach);

    const erase = `${conversation}/erase`;
    await call("POST", `/conversations/${id}/erase`, erase, { reason: "the person asked" }, CONSOLE_API_KEY);
    await call("POST", `/conversations/${id}/erase`, erase);
    await call("POST", `/conversations/${crypto.randomUUID()}/erase`, erase);
    await call("POST", `/conversations/not-an-id/erase`, erase);
    await call("POST", `/conversations/${id}/messages`, `${conversation}/messages`, { text: "still there?" });
    await call("POST", `/conversations/${id}/takeover`, `${conversation}/takeover`, { agent }, CONSOLE_API_KEY);
    await call("GET", `/conversations/${id}`, conversation);

    // Every success answer the document names was met by a real one.
    const successes = Object.entries(doc.paths).flatMap(([path, operations]) =>
      Object.entries(operations).flatMap(([method, operation]) =>
        Object.keys(operation.responses)
          .filter((status) => status.startsWith("2"))
          .map((status) => `${method} ${path} ${status}`),
      ),
    );
    expect(successes.filter((answer) => !validated.has(answer))).toEqual([]);
    for (const answer of ["400", "401", "404", "409", "410"]) {
      expect(
        [...validated].some((seen) => seen.endsWith(` ${answer}`)),
        answer,
      ).toBe(true);
    }
  });
});
