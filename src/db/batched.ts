// Many callers' runs of one statement, as one statement. A caller runs at once while fewer than `parallel`
// batches are under way (alone, when the hub is quiet: no wait is added); otherwise it waits for one to end,
// and everyone who waited meanwhile goes together (up to `max`) — under load one round trip, one execution
// and one commit serve many conversations. A batch is one statement: all of it commits, or none. When a
// batch fails, each of its items is run again alone, so an item that fails (a guard that aborts, a broken
// row) fails only its own caller.

export interface BatchOptions {
  /** Items in one statement at most. */
  max: number;
  /** Batches under way at once. */
  parallel: number;
}

interface Waiting<In, Out> {
  item: In;
  resolve(out: Out): void;
  reject(error: unknown): void;
}

/**
 * `runBatch` gets the items and answers one result per item, in the same order. Returns the function a caller
 * calls with its item.
 */
export function batched<In, Out>(
  runBatch: (items: In[]) => Promise<Out[]>,
  options: BatchOptions,
): (item: In) => Promise<Out> {
  const waiting: Waiting<In, Out>[] = [];
  let running = 0;

  const runAlone = async (each: Waiting<In, Out>) => {
    try {
      const [out] = await runBatch([each.item]);
      each.resolve(out as Out);
    } catch (error) {
      each.reject(error);
    }
  };

  const start = () => {
    while (running < options.parallel && waiting.length > 0) {
      const batch = waiting.splice(0, options.max);
      running += 1;
      void (async () => {
        try {
          if (batch.length === 1) return await runAlone(batch[0]!);
          let outs: Out[];
          try {
            outs = await runBatch(batch.map((each) => each.item));
          } catch {
            // Nothing of it committed: each goes again on its own, and fails (or not) for itself.
            await Promise.all(batch.map(runAlone));
            return;
          }
          batch.forEach((each, i) => each.resolve(outs[i] as Out));
        } finally {
          running -= 1;
          start();
        }
      })();
    }
  };

  return (item) =>
    new Promise<Out>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      start();
    });
}

/**
 * The same, with one batcher per store (`sql`): a batch is one statement on one store, and each store — a
 * pool, the ingest pool, an embedded database — batches its own callers. `runBatch` gets the store.
 */
export function batchedPerStore<Store extends object, In, Out>(
  runBatch: (store: Store, items: In[]) => Promise<Out[]>,
  options: BatchOptions,
): (store: Store, item: In) => Promise<Out> {
  const runners = new WeakMap<Store, (item: In) => Promise<Out>>();
  return (store, item) => {
    let run = runners.get(store);
    if (!run) runners.set(store, (run = batched((items: In[]) => runBatch(store, items), options)));
    return run(item);
  };
}
