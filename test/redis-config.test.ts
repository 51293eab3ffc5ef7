// Naming Redis (docs/operations.md "Redis Sentinel", "Redis Cluster"): one server, Sentinel or a cluster; a
// mistake stops the hub with the variable named; BullMQ's prefix is hash-tagged only on a cluster.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import { describeRedis, queuePrefixFor } from "../src/redis-target.js";

const base = () => ({ DATA_DIR: mkdtempSync(path.join(tmpdir(), "hub-config-")) });

describe("which Redis the settings name", () => {
  it.each([
    [{}, { kind: "server", url: "redis://127.0.0.1:6379" }],
    [
      { REDIS_SENTINELS: "10.0.0.1:26379, 10.0.0.2:26379", REDIS_SENTINEL_NAME: "hub" },
      {
        kind: "sentinel",
        name: "hub",
        sentinels: [
          { host: "10.0.0.1", port: 26379 },
          { host: "10.0.0.2", port: 26379 },
        ],
      },
    ],
    [
      { REDIS_CLUSTER_NODES: "10.0.0.1:7000,[::1]:7001", REDIS_PASSWORD: "pw" },
      {
        kind: "cluster",
        nodes: [
          { host: "10.0.0.1", port: 7000 },
          { host: "::1", port: 7001 },
        ],
        password: "pw",
      },
    ],
  ])("%j → %j", (settings, target) => {
    expect(loadConfig({ ...base(), ...settings }).redis).toMatchObject(target);
  });

  it.each([
    [{ REDIS_CLUSTER_NODES: "10.0.0.1" }, /REDIS_CLUSTER_NODES: "10\.0\.0\.1" is not host:port/],
    [{ REDIS_CLUSTER_NODES: "10.0.0.1:70000" }, /REDIS_CLUSTER_NODES: "10\.0\.0\.1:70000" is not host:port/],
    [{ REDIS_CLUSTER_NODES: " , " }, /REDIS_CLUSTER_NODES: no node named/],
    [{ REDIS_CLUSTER_NODES: "a:1", REDIS_SENTINELS: "b:2" }, /REDIS_CLUSTER_NODES and REDIS_SENTINELS are both set/],
    [{ REDIS_SENTINELS: "b" }, /REDIS_SENTINELS: "b" is not host:port/],
  ])("%j is refused", (settings, message) => {
    expect(() => loadConfig({ ...base(), ...settings })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base(), ...settings })).toThrow(message);
  });

  it("hash-tags BullMQ's prefix on a cluster only, and never shows a password", () => {
    const cluster = loadConfig({ ...base(), REDIS_CLUSTER_NODES: "h:1,h:2", REDIS_PASSWORD: "secret-pw" }).redis;
    expect(queuePrefixFor(cluster, "hub")).toBe("{hub}");
    expect(queuePrefixFor(loadConfig(base()).redis, "hub")).toBe("hub");
    expect(describeRedis(cluster)).toBe("the Redis Cluster of h:1, h:2");
    const server = loadConfig({ ...base(), REDIS_URL: "redis://:secret-pw@h:6380" }).redis;
    expect(describeRedis(server)).not.toContain("secret-pw");
  });
});
