// What the hub exposes to browsers and the network: pages no other site can frame, security headers,
// widget assets other sites can load, /metrics behind a token when one is set, a demo backend that only
// answers the hub.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestHub } from "./support/test-hub.js";

describe("exposure", () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await TestHub.start({
      tools: { demo_search: readFileSync("tools/demo_search.yml", "utf8") },
      env: { DEMO: "true", METRICS_TOKEN: "metrics-token-for-tests" },
    });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("the console and demo pages cannot be framed by another site and carry a Content-Security-Policy", async () => {
    for (const page of ["/console", "/demo"]) {
      const res = await fetch(`${hub.url}${page}`);
      expect(res.status).toBe(200);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(res.headers.get("x-frame-options")).toBe("SAMEORIGIN");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  it("the machines' endpoints say their JSON is JSON, and carry no page policy", async () => {
    for (const [route, body] of [
      ["/callbacks/not-a-token", "{}"],
      ["/webhooks/meta", "{}"],
    ] as const) {
      const res = await fetch(`${hub.url}${route}`, {
        method: "POST",
        body,
        headers: { "Content-Type": "application/json" },
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get("content-type")).toContain("application/json");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-security-policy")).toBeNull();
    }
  });

  it("other sites can load the widget's script, its stylesheet and its socket.io client", async () => {
    for (const asset of ["/widget.js", "/widget.css", "/widget/socket.io.js"]) {
      const res = await fetch(`${hub.url}${asset}`, { headers: { Origin: "https://shop.example" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("cross-origin-resource-policy")).toBe("cross-origin");
    }
  });

  it("/metrics needs the metrics token when one is set", async () => {
    expect((await fetch(`${hub.url}/metrics`)).status).toBe(401);
    const wrong = await fetch(`${hub.url}/metrics`, { headers: { Authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
    const right = await fetch(`${hub.url}/metrics`, { headers: { Authorization: "Bearer metrics-token-for-tests" } });
    expect(right.status).toBe(200);
    expect(await right.text()).toContain("hub_callbacks_total");
  });

  it("the demo backend answers only the hub, which sends its key", async () => {
    const cancel = await fetch(`${hub.url}/demo-backend/jobs/some-job`, { method: "DELETE" });
    expect(cancel.status).toBe(401);
    const search = await fetch(`${hub.url}/demo-backend/search`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ query: "x" }),
    });
    expect(search.status).toBe(401);
    // The hub itself starts the demo tool with its key.
    const conversationId = await hub.conversation();
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "demo_search",
      arguments: { query: "with the key" },
    });
    expect(started.status).toBe(202);
  });
});
