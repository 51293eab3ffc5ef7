// The turn schedule on the real Redis: a turn asked for in the instant the previous one ends runs at once.
// The previous turn's END and the new request go out back to back; their answers come in one read, and the new
// request's continuation (one promise hop) runs before the ending turn's (two). The ending turn must then let go
// of only its own holder: deleting the conversation's entry dropped the new turn, which sat unrun and unrenewed
// until its lease ran out and the sweep asked again (4–5 of 200 replies took 10–15 s in bench:agent).
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { turnSchedule, type TurnData, type TurnSchedule } from "../src/delivery/turn-schedule.js";
import { clearRedisPrefix, eventually, queuePrefix, REDIS_URL } from "./support/services.js";

describe("the turn schedule", () => {
  const prefix = queuePrefix();
  let redis: Redis;
  let queue: Queue<TurnData>;
  let schedule: TurnSchedule;
  const runs: string[] = [];
  /** Per conversation: what its next run does just before it returns. */
  const onRun = new Map<string, () => void>();

  beforeAll(() => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    queue = new Queue<TurnData>("turns", { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix });
    schedule = turnSchedule(redis, prefix, queue, {
      runsTurns: true,
      // One slot: the new turn has to wait for the ending one to finish.
      concurrency: 1,
      attempts: 3,
      retryDelayMs: () => 100,
      async run(conversationId) {
        runs.push(conversationId);
        const then = onRun.get(conversationId);
        onRun.delete(conversationId);
        then?.();
      },
      onFailure: () => {},
    });
  });
  afterAll(async () => {
    await schedule?.handOffAll();
    await queue?.close();
    redis?.disconnect();
    await clearRedisPrefix(prefix);
  });

  it("runs a turn asked for while the previous one ends, at once, over and over", async () => {
    for (let round = 0; round < 20; round++) {
      const conversationId = `conversation-${round}`;
      // Asked for once the ending turn's END is on its way (after this tick's promise jobs), before its answer.
      onRun.set(conversationId, () => setImmediate(() => void schedule.request(conversationId)));
      await schedule.request(conversationId);
      await eventually(
        () => runs.filter((id) => id === conversationId).length >= 2 || undefined,
        `the second turn of round ${round} (well before the 10 s lease could run out)`,
        2000,
      );
    }
    expect(runs).toHaveLength(40);
  });
});
