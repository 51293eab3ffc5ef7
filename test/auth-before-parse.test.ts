// A request without its key or token is refused before its body is read: whatever it sends — broken JSON,
// a body nested past every limit, 330,000 empty objects — the parser never sees it. The proof is the answer
// itself: the same bodies with the key are parsed, and refused for what the parser found in them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";

describe("authentication before parsing", () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await TestHub.start();
  });
  afterAll(async () => {
    await hub?.stop();
  });

  const post = async (path: string, body: string, key?: string) => {
    const res = await fetch(`${hub.url}${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...(key ? { Authorization: `Bearer ${key}` } : {}) },
      body,
    });
    return { status: res.status, body: (await res.json()) as { error: { code: string; message: string } } };
  };

  const broken = '{"channel": "web", "contact": ';
  const deep = `${"[".repeat(200)}${"]".repeat(200)}`;
  const wide = `[${Array(330_000).fill("{}").join(",")}]`;

  it("answers 401 to the agent and console routes without reading the body; with a key the same bodies are parsed", async () => {
    for (const path of ["/v1/conversations", "/v1/conversations/x/takeover", "/v1/jobs/x/cancel"]) {
      for (const body of [broken, deep, wide]) {
        const stranger = await post(path, body);
        expect(stranger.status, `${path} ${body.slice(0, 20)}`).toBe(401);
        expect(stranger.body.error.code).toBe("unauthorized");
        const wrongKey = await post(path, body, "not-the-key");
        expect(wrongKey.status).toBe(401);
      }
    }
    // The parser does run for a caller with a key: broken JSON and depth are its refusals.
    expect(await post("/v1/conversations", broken, HUB_API_KEY)).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_body", message: "the body is not valid JSON" } },
    });
    const tooDeep = await post("/v1/conversations", deep, HUB_API_KEY);
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.error.message).toContain("nested deeper");
    expect((await post("/v1/conversations/x/takeover", broken, CONSOLE_API_KEY)).status).toBe(400);
  });

  it("answers 404 to a callback with a token the hub did not sign, before reading the body", async () => {
    for (const body of [broken, deep, wide]) {
      const res = await post("/callbacks/not-a-token", body);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
  });
});
