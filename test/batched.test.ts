// Many callers' runs of one statement as one (src/db/batched.ts): alone at once, together under load, and a
// failing batch fails only the item that fails on its own.
import { describe, expect, it } from "vitest";
import { batched } from "../src/db/batched.js";

/** A statement whose runs end when the test says; `calls` records the items of each run. */
function held<T>(answer: (items: T[]) => unknown[] | Promise<unknown[]>) {
  const calls: T[][] = [];
  const release: (() => void)[] = [];
  const run = async (items: T[]) => {
    calls.push(items);
    await new Promise<void>((resolve) => release.push(resolve));
    return answer(items);
  };
  return { calls, release, run };
}

describe("batched", () => {
  it("runs a caller alone at once, and those who come while the runs are under way together, in order", async () => {
    const statement = held<number>((items) => items.map((n) => n * 10));
    const run = batched(statement.run, { max: 3, parallel: 1 });
    const first = run(1);
    const waiting = [run(2), run(3), run(4), run(5)];
    expect(statement.calls).toEqual([[1]]);
    statement.release.shift()!();
    expect(await first).toBe(10);
    await Promise.resolve();
    expect(statement.calls).toEqual([[1], [2, 3, 4]]);
    statement.release.shift()!();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(statement.calls).toEqual([[1], [2, 3, 4], [5]]);
    statement.release.shift()!();
    expect(await Promise.all(waiting)).toEqual([20, 30, 40, 50]);
  });

  it("starts up to `parallel` runs before anyone waits", () => {
    const statement = held<number>((items) => items);
    const run = batched(statement.run, { max: 10, parallel: 2 });
    void run(1);
    void run(2);
    void run(3);
    void run(4);
    expect(statement.calls).toEqual([[1], [2]]);
  });

  it("when a batch fails, runs each of its items alone: only the one that fails alone is refused", async () => {
    const calls: number[][] = [];
    let gate: (() => void) | undefined;
    const run = batched<number, number>(
      async (items) => {
        calls.push(items);
        if (items.length === 1 && items[0] === 0 && !gate) await new Promise<void>((resolve) => (gate = resolve));
        if (items.includes(13)) throw new Error("13 is refused");
        return items.map((n) => n + 1);
      },
      { max: 10, parallel: 1 },
    );
    const busy = run(0);
    const results = [run(12), run(13), run(14)].map((promise) =>
      promise.then(
        (value) => ({ value }),
        (error: Error) => ({ error: error.message }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 0));
    gate!();
    expect(await busy).toBe(1);
    expect(await Promise.all(results)).toEqual([{ value: 13 }, { error: "13 is refused" }, { value: 15 }]);
    expect(calls).toEqual([[0], [12, 13, 14], [12], [13], [14]]);
  });
});
