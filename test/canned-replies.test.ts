// Canned replies: the render as a table (variables found once, in order; filled; the missing ones named), then the
// API on a real hub — an admin writes and deletes them, a member may only read them, and a reply sent by its
// shortcut reaches the person with {{name}}, {{agent}}, {{team}} and the request's own variables filled, while one
// with a variable left without a value is refused naming it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderCanned, variablesOf } from "../src/team/canned-replies.js";
import { memberKeyHash } from "../src/team/member-keys.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";

describe("rendering a canned reply", () => {
  const rows: [string, string, Record<string, string | null | undefined>, { text: string } | { missing: string[] }][] =
    [
      ["no variables", "Thanks for waiting.", {}, { text: "Thanks for waiting." }],
      ["one variable", "Hi {{name}}!", { name: "Ana" }, { text: "Hi Ana!" }],
      ["spaces inside the braces", "Hi {{ name }}!", { name: "Ana" }, { text: "Hi Ana!" }],
      ["a variable twice", "{{name}}, {{name}}", { name: "Ana" }, { text: "Ana, Ana" }],
      [
        "several",
        "Hi {{name}}, {{agent}} from {{team}}: order {{order}}",
        { name: "Ana", agent: "Marta", team: "Billing", order: "A-1" },
        { text: "Hi Ana, Marta from Billing: order A-1" },
      ],
      ["a missing one is named", "Order {{order}} for {{name}}", { name: "Ana" }, { missing: ["order"] }],
      ["a null value is missing", "From {{team}}", { team: null }, { missing: ["team"] }],
      ["every missing one, once, in order", "{{b}} {{a}} {{b}}", {}, { missing: ["b", "a"] }],
      ["a value is not read again for variables", "{{a}}", { a: "{{b}}" }, { text: "{{b}}" }],
      ["an empty value is a value", "[{{a}}]", { a: "" }, { text: "[]" }],
      ["single braces are text", "{name} and {{ }}", {}, { text: "{name} and {{ }}" }],
    ];
  it.each(rows)("%s", (_name, text, values, expected) => {
    expect(renderCanned(text, values)).toEqual(expected);
  });

  it("lists the variables a text names, each once, in order", () => {
    expect(variablesOf("{{agent}} {{ name }} {{agent}} {{order.id}}")).toEqual(["agent", "name", "order.id"]);
    expect(variablesOf("plain")).toEqual([]);
  });
});

const ADMIN_KEY = `hubm_${"a".repeat(43)}`;
const MEMBER_KEY = `hubm_${"m".repeat(43)}`;

describe("canned replies over the API", () => {
  let hub: TestHub;

  beforeAll(async () => {
    hub = await TestHub.start();
    await hub.ctx.sql.query(
      `INSERT INTO "Member" (id, name, role, "keyHash", "updatedAt")
       VALUES ('lucia', 'Lucía', 'admin', $1, now()), ('tomas', 'Tomás', 'member', $2, now())`,
      [memberKeyHash(ADMIN_KEY), memberKeyHash(MEMBER_KEY)],
    );
    await hub.ctx.sql.query(
      `INSERT INTO "Team" (id, name, "isDefault", "updatedAt") VALUES ('billing', 'Billing', true, now())`,
    );
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("an admin writes and deletes them; a member reads them; the agent's key does neither", async () => {
    const put = await hub.api(
      "PUT",
      "/v1/canned-replies/refund",
      { title: "Refund on its way", text: "Hi {{name}}, {{agent}} from {{team}}: refund {{ticket}} is on its way." },
      ADMIN_KEY,
    );
    expect(put.status).toBe(201);
    expect(put.body.cannedReply).toEqual({
      id: "refund",
      title: "Refund on its way",
      text: "Hi {{name}}, {{agent}} from {{team}}: refund {{ticket}} is on its way.",
      variables: ["name", "agent", "team", "ticket"],
    });
    const again = await hub.api("PUT", "/v1/canned-replies/hello", { title: "Hello", text: "Hello!" }, CONSOLE_API_KEY);
    expect(again.status).toBe(201);
    const replaced = await hub.api("PUT", "/v1/canned-replies/hello", { title: "Hi", text: "Hi!" }, CONSOLE_API_KEY);
    expect(replaced.status).toBe(200);
    expect(replaced.body.cannedReply.title).toBe("Hi");

    const list = await hub.api("GET", "/v1/canned-replies", undefined, MEMBER_KEY);
    expect(list.status).toBe(200);
    expect(list.body.cannedReplies.map((reply: { id: string }) => reply.id)).toEqual(["hello", "refund"]);

    expect((await hub.api("PUT", "/v1/canned-replies/x", { title: "x", text: "x" }, MEMBER_KEY)).status).toBe(403);
    expect((await hub.api("DELETE", "/v1/canned-replies/hello", undefined, MEMBER_KEY)).status).toBe(403);
    expect((await hub.api("GET", "/v1/canned-replies", undefined, HUB_API_KEY)).status).toBe(401);
    const bad = await hub.api("PUT", "/v1/canned-replies/bad%20id", { title: "", text: "x" }, ADMIN_KEY);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((detail: { field: string }) => detail.field)).toEqual(["id"]);
    const noTitle = await hub.api("PUT", "/v1/canned-replies/ok", { title: "", text: "x" }, ADMIN_KEY);
    expect(noTitle.body.error.details.map((detail: { field: string }) => detail.field)).toEqual(["title"]);

    expect((await hub.api("DELETE", "/v1/canned-replies/hello", undefined, ADMIN_KEY)).status).toBe(204);
    expect((await hub.api("DELETE", "/v1/canned-replies/hello", undefined, ADMIN_KEY)).status).toBe(404);
  });

  it("a reply by its shortcut is filled and sent; a variable left without a value is refused, naming it", async () => {
    await hub.api(
      "PUT",
      "/v1/canned-replies/refund",
      { title: "Refund", text: "Hi {{name}}, {{agent}} from {{team}}: refund {{ticket}}." },
      ADMIN_KEY,
    );
    const created = await hub.api("POST", "/v1/conversations", { channel: "web", contact: "ana-1", name: "Ana" });
    const id = created.body.conversation.id as string;
    expect(
      (await hub.api("POST", `/v1/conversations/${id}/takeover`, { agent: { id: "tomas", name: "Tomás" } }, MEMBER_KEY))
        .status,
    ).toBe(200);

    const missing = await hub.api("POST", `/v1/conversations/${id}/human-messages`, { canned: "refund" }, MEMBER_KEY);
    expect(missing.status).toBe(400);
    expect(missing.body.error.details).toEqual([{ field: "variables.ticket", message: "no value for this variable" }]);

    const both = await hub.api(
      "POST",
      `/v1/conversations/${id}/human-messages`,
      { text: "hi", canned: "refund" },
      MEMBER_KEY,
    );
    expect(both.status).toBe(400);
    expect(both.body.error.details[0].field).toBe("text");
    const neither = await hub.api("POST", `/v1/conversations/${id}/human-messages`, {}, MEMBER_KEY);
    expect(neither.status).toBe(400);
    const stray = await hub.api(
      "POST",
      `/v1/conversations/${id}/human-messages`,
      { text: "hi", variables: { a: "b" } },
      MEMBER_KEY,
    );
    expect(stray.body.error.details[0].field).toBe("variables");
    const unknown = await hub.api("POST", `/v1/conversations/${id}/human-messages`, { canned: "nope" }, MEMBER_KEY);
    expect(unknown.status).toBe(404);

    const sent = await hub.api(
      "POST",
      `/v1/conversations/${id}/human-messages`,
      { canned: "refund", variables: { ticket: "R-88" } },
      MEMBER_KEY,
    );
    expect(sent.status).toBe(201);
    expect(sent.body.message.text).toBe("Hi Ana, Tomás from Billing: refund R-88.");
    // The request's own values win over the hub's.
    const named = await hub.api(
      "POST",
      `/v1/conversations/${id}/human-messages`,
      { canned: "refund", variables: { ticket: "R-89", name: "Ms. Rojas" }, agent: { id: "m", name: "Marta" } },
      CONSOLE_API_KEY,
    );
    expect(named.body.message.text).toBe("Hi Ms. Rojas, Marta from Billing: refund R-89.");
    await eventually(async () => {
      const timeline = await hub.api("GET", `/v1/conversations/${id}/timeline`, undefined, CONSOLE_API_KEY);
      return timeline.body.messages.filter((message: { role: string }) => message.role === "human").length === 2;
    }, "both replies in the timeline");
  });
});
