// Repeated errors during an outage: logged once, then once per interval with how many were left out.
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { throttledLog } from "../src/log-throttle.js";
import { createLogger } from "../src/logger.js";

describe("throttled logging", () => {
  it("logs the first occurrence, drops repeats within the interval, then logs once with the count", () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    let now = 0;
    const warn = throttledLog(createLogger("info", sink), "warn", 10_000, () => now);
    for (let i = 0; i < 500; i++) warn("store", { i }, "the store is down");
    warn("queue", {}, "the queue is down");
    now = 10_001;
    warn("store", { i: 500 }, "the store is down");
    expect(lines.map((line) => [line.msg, line.repeated])).toEqual([
      ["the store is down", undefined],
      ["the queue is down", undefined],
      ["the store is down", 499],
    ]);
  });
});
