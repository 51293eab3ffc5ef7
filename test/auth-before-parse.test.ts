// A request without its key or token is refused before its body is read: whatever it sends — broken JSON,
// a body nested past every limit, 330,000 empty objects — the parser never sees it. The proof is the answer
// itself: the same bodies with the key are parsed, and refused for what the parser found in them.
// Keys cannot be guessed as fast as the hub answers: past AUTH_FAILURES_PER_MINUTE wrong keys, an address (an
// IPv6 one by its /64) is answered 429 on /v1, /metrics and the console's socket, on every hub process.
import { io } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { startHub } from "../src/hub.js";
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
    for (const path of [
      "/v1/conversations",
      "/v1/conversations/x/takeover",
      "/v1/jobs/x/cancel",
      "/v1/jobs/x/messages",
    ]) {
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

describe("wrong keys slow down", () => {
  const LIMIT = 10;
  const METRICS_TOKEN = "metrics-token-for-tests";
  let hub: TestHub;
  beforeAll(async () => {
    hub = await TestHub.start({ env: { AUTH_FAILURES_PER_MINUTE: String(LIMIT), METRICS_TOKEN } });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  /** A GET as a client behind the trusted proxy (loopback) at `address`. */
  const get = (url: string, path: string, address: string, key?: string) =>
    fetch(`${url}${path}`, {
      headers: { "X-Forwarded-For": address, ...(key ? { Authorization: `Bearer ${key}` } : {}) },
    });

  it("300 wrong /v1 keys from one address: the first ones 401, the rest 429 with Retry-After, the right key too", async () => {
    const address = "198.51.100.7";
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 300; i++) {
      const res = await get(hub.url, "/v1/conversations", address, `guess-${i}`);
      statuses.push(res.status);
      if (res.status === 429) refused ??= res;
      else await res.body?.cancel();
    }
    expect(statuses.slice(0, LIMIT)).toEqual(Array(LIMIT).fill(401));
    expect(statuses.slice(LIMIT)).toEqual(Array(300 - LIMIT).fill(429));
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(refused!.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect((await refused!.json()).error).toMatchObject({
      code: "too_many_failed_authentications",
      details: [{ field: "Authorization", message: expect.stringContaining("AUTH_FAILURES_PER_MINUTE") }],
      retryAfterMs: expect.any(Number),
    });
    // The right key from that address is refused too until the minute has passed: a guess is never confirmed.
    expect((await get(hub.url, "/v1/conversations", address, HUB_API_KEY)).status).toBe(429);
    expect((await get(hub.url, "/metrics", address, METRICS_TOKEN)).status).toBe(429);
    // Another address is not slowed: its wrong key is a 401, its right key works.
    expect((await get(hub.url, "/v1/conversations", "198.51.100.8", "guess")).status).toBe(401);
    expect((await get(hub.url, "/v1/conversations", "198.51.100.8", HUB_API_KEY)).status).toBe(200);
  });

  it("a caller with the right key is never slowed, however many requests it makes", async () => {
    for (let i = 0; i < 3 * LIMIT; i++)
      expect((await get(hub.url, "/v1/conversations", "198.51.100.9", HUB_API_KEY)).status).toBe(200);
    // Requests with no key at all guess nothing and are not counted.
    for (let i = 0; i < 2 * LIMIT; i++)
      expect((await get(hub.url, "/v1/conversations", "198.51.100.9")).status).toBe(401);
    expect((await get(hub.url, "/v1/conversations", "198.51.100.9", HUB_API_KEY)).status).toBe(200);
  });

  it("/metrics and the console's socket count wrong keys by /64, on another hub process too", async () => {
    const sibling = await startHub(loadConfig(hub.siblingEnv({ PORT: "0", LOG_LEVEL: "silent" })));
    try {
      const statuses: number[] = [];
      // Wrong metrics tokens from addresses of one /64, half of them to each process.
      for (let i = 0; i < LIMIT; i++) {
        const url = i % 2 === 0 ? hub.url : sibling.url!;
        statuses.push((await get(url, "/metrics", `2001:db8:7:7::${i + 1}`, `guess-${i}`)).status);
      }
      expect(statuses).toEqual(Array(LIMIT).fill(401));
      const consoleError = (url: string, key: string, address: string) => {
        const socket = io(`${url}/console`, {
          auth: { key },
          extraHeaders: { "X-Forwarded-For": address },
          transports: ["websocket"],
          forceNew: true,
          reconnection: false,
        });
        return new Promise<Error & { data?: { code: string; retryAfterMs: number } }>((resolve, reject) => {
          socket.once("connect_error", (error) => resolve(error));
          socket.once("connect", () => reject(new Error("connected")));
        }).finally(() => socket.close());
      };
      // The /64's next wrong key, the console's on the other process, is one too many.
      const refused = await consoleError(sibling.url!, "console-guess", "2001:db8:7:7:ffff::1");
      expect(refused.message).toBe("too_many_failed_authentications");
      expect(refused.data).toMatchObject({ code: "too_many_failed_authentications", retryAfterMs: expect.any(Number) });
      expect((await get(hub.url, "/metrics", "2001:db8:7:7::99", METRICS_TOKEN)).status).toBe(429);
      expect((await get(sibling.url!, "/v1/conversations", "2001:db8:7:7::98", HUB_API_KEY)).status).toBe(429);
      // The next /64 is another subscriber.
      expect((await get(hub.url, "/metrics", "2001:db8:7:8::1", METRICS_TOKEN)).status).toBe(200);
      expect((await consoleError(hub.url, "console-guess", "2001:db8:7:8::1")).message).toBe("unauthorized");
    } finally {
      await sibling.stop();
    }
  });
});
