// PGlite on a folder, with each commit on the disk before the query that made it returns.
//
// What PGlite 0.5.14 does by itself in Node with a data directory: its NodeFS mounts the folder through
// Emscripten's NODEFS, whose writes are plain `fs.writeSync` calls — nothing is buffered in memory on the
// JavaScript side (`syncToFs` and the `relaxedDurability` option are no-ops for it; they matter to the
// browser file systems, which copy an in-memory image out). Postgres writes the WAL at each commit, so a
// committed transaction is in the kernel when the query returns and survives a `kill -9` of the hub (the
// next start replays the WAL). But PGlite starts Postgres with `-F` (fsync off), and NODEFS has no `fsync`
// either, so nothing is ever flushed to the disk: a machine crash or a power cut could lose commits that
// were already answered `200`.
//
// So here Postgres runs with fsync on and `wal_sync_method=fsync` (Emscripten's `fdatasync` returns without
// touching the file), and NODEFS gets an `fsync` that calls Node's `fsyncSync` on the file's descriptor:
// one fsync per commit, as on PostgreSQL.
import { fsyncSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { NodeFS } from "@electric-sql/pglite/nodefs";

/** WASI's EIO: what Postgres sees when a flush fails (it then stops rather than lose the commit quietly). */
const WASI_EIO = 29;

interface NodeStream {
  nfd: number;
}

interface EmscriptenModuleWithNodeFs {
  FS: { filesystems: { NODEFS: { stream_ops: { fsync?: (stream: NodeStream) => number } } } };
}

class FlushingNodeFS extends NodeFS {
  override async init(...args: Parameters<NodeFS["init"]>): ReturnType<NodeFS["init"]> {
    const { emscriptenOpts } = await super.init(...args);
    const addFsync = (mod: unknown) => {
      (mod as EmscriptenModuleWithNodeFs).FS.filesystems.NODEFS.stream_ops.fsync = (stream) => {
        try {
          fsyncSync(stream.nfd);
          return 0;
        } catch {
          return WASI_EIO;
        }
      };
    };
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), addFsync] } };
  }
}

export function openDurablePglite(dir: string): PGlite {
  return new PGlite({
    fs: new FlushingNodeFS(dir),
    startParams: [
      ...PGlite.defaultStartParams.filter((param) => param !== "-F"),
      "-c",
      "fsync=on",
      "-c",
      "wal_sync_method=fsync",
    ],
  });
}
