// One process owns the embedded database's folder. Two PGlite instances on one folder each replay and
// checkpoint their own idea of the WAL: commits of one are lost, or the folder is left unreadable. So the
// hub (and `hub conversation show` when it reads the folder itself) holds this lock while the database is
// open, and a second process is refused with one sentence.
//
// The lock is proper-lockfile's: `<dataDir>/pglite.lock` is created with mkdir (atomic) and its mtime is
// refreshed every few seconds while held. Inside it, `owner.json` records who holds it (pid, host, what).
// When a lock exists, it is stale — taken over at once — if:
//   - its owner is on this host and its pid no longer runs (a hub killed with `kill -9`): a restart need
//     not wait for any timeout; or its pid is this very process's and this process does not hold it (a
//     container restarted with the same pid);
//   - or its mtime has not been refreshed for STALE_MS: the owner is on another host sharing the folder,
//     or its pid was reused by an unrelated process, or it died before writing `owner.json`.
// proper-lockfile's own mtime rule is switched off (an infinite `stale`) so that these rules alone decide:
// a live owner on this host is never taken over by a short timeout, even when its event loop is busy.
// A takeover renames the stale lock aside and checks that what it moved is the lock it judged stale, so
// two processes taking over at once cannot both end up owning the folder.
import * as fs from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import lockfile from "proper-lockfile";

/** Without a refresh for this long, a lock is stale whoever holds it (the holder refreshes every UPDATE_MS). */
const STALE_MS = 30_000;
const UPDATE_MS = 5_000;
const OWNER_FILE = "owner.json";

export interface LockOwner {
  pid: number;
  host: string;
  /** What holds it, in words: "a hub", "a hub command". */
  holder: string;
  since: string;
}

export class DataLockError extends Error {
  /** "the data folder … is in use by a hub (pid 123)": for callers that give their own advice. */
  readonly inUse: string;

  constructor(
    readonly folder: string,
    readonly owner: LockOwner | undefined,
  ) {
    const who = owner
      ? `${owner.holder} (pid ${owner.pid}${owner.host === hostname() ? "" : ` on ${owner.host}`})`
      : "another process";
    const inUse = `the data folder ${folder} is in use by ${who}`;
    super(`${inUse}: stop it first, or give this process its own DATA_DIR (or a DATABASE_URL)`);
    this.inUse = inUse;
  }
}

export interface DataLock {
  release(): Promise<void>;
}

/** Lock directories this process holds (so its own pid in a lock is not mistaken for a dead owner's). */
const held = new Set<string>();

/** A snapshot of an existing lock: who holds it and when it was last refreshed. */
interface Seen {
  ownerText: string | undefined;
  owner: LockOwner | undefined;
  mtimeMs: number;
}

function look(lockDir: string): Seen | undefined {
  let mtimeMs: number;
  try {
    mtimeMs = fs.statSync(lockDir).mtimeMs;
  } catch {
    return undefined; // released meanwhile
  }
  let ownerText: string | undefined;
  try {
    ownerText = fs.readFileSync(path.join(lockDir, OWNER_FILE), "utf8");
  } catch {
    ownerText = undefined; // taken an instant ago, or by a process that died before recording itself
  }
  return { ownerText, owner: parseOwner(ownerText), mtimeMs };
}

function parseOwner(text: string | undefined): LockOwner | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<LockOwner>;
    return typeof value.pid === "number" && typeof value.host === "string" && typeof value.holder === "string"
      ? (value as LockOwner)
      : undefined;
  } catch {
    return undefined;
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"; // alive, someone else's
  }
}

function isStale(lockDir: string, seen: Seen): boolean {
  const { owner } = seen;
  if (owner && owner.host === hostname()) {
    if (owner.pid === process.pid) return !held.has(lockDir);
    if (!running(owner.pid)) return true;
  }
  return seen.mtimeMs < Date.now() - STALE_MS;
}

/** Moves a stale lock out of the way, unless it is no longer the lock that was judged stale. */
function takeOver(lockDir: string, seen: Seen): void {
  const aside = `${lockDir}.stale-${process.pid}-${Date.now()}`;
  try {
    fs.renameSync(lockDir, aside);
  } catch {
    return; // gone already: try again
  }
  const moved = look(aside);
  if (moved && moved.ownerText === seen.ownerText && moved.mtimeMs === seen.mtimeMs) {
    fs.rmSync(aside, { recursive: true, force: true });
    return;
  }
  // Another process took the folder over in between: give its lock back.
  try {
    fs.renameSync(aside, lockDir);
  } catch {
    fs.rmSync(aside, { recursive: true, force: true });
  }
}

/**
 * The file system proper-lockfile works with: `mkdir` also records the owner inside the new lock (before
 * proper-lockfile sets the mtime it watches), and removing a lock removes that record with it.
 */
function lockFs(owner: LockOwner) {
  return {
    stat: fs.stat,
    utimes: fs.utimes,
    realpath: fs.realpath,
    mkdir(dir: string, callback: (error: NodeJS.ErrnoException | null) => void) {
      fs.mkdir(dir, (error) => {
        if (error) return callback(error);
        fs.writeFile(path.join(dir, OWNER_FILE), `${JSON.stringify(owner)}\n`, (writeError) => {
          if (!writeError) return callback(null);
          fs.rm(dir, { recursive: true, force: true }, () => callback(writeError));
        });
      });
    },
    rmdir(dir: string, callback: (error: NodeJS.ErrnoException | null) => void) {
      fs.rm(dir, { recursive: true, force: true }, callback);
    },
    rmdirSync(dir: string) {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Stops this process when its lock was taken away (deleted, or taken over while this process could not
 * refresh it): the embedded database runs inside this process, and stopping is the only way to be sure
 * it no longer writes a folder another process now owns.
 */
function stopOnLost(folder: string) {
  return (error: Error) => {
    process.stderr.write(
      `chat-delivery-hub: the lock on the data folder ${folder} was lost (${error.message}): stopping, so that two processes never write it\n`,
    );
    process.exit(1);
  };
}

/**
 * Takes the lock on `dataDir`'s embedded database (`<dataDir>/pglite`, which must exist), or throws a
 * DataLockError naming who holds it.
 */
export async function acquireDataLock(dataDir: string, holder: string): Promise<DataLock> {
  const target = path.join(dataDir, "pglite");
  const lockDir = path.join(dataDir, "pglite.lock");
  const owner: LockOwner = { pid: process.pid, host: hostname(), holder, since: new Date().toISOString() };
  for (let attempt = 1; ; attempt++) {
    try {
      const release = await lockfile.lock(target, {
        lockfilePath: lockDir,
        realpath: false,
        stale: Number.POSITIVE_INFINITY,
        update: UPDATE_MS,
        fs: lockFs(owner),
        onCompromised: stopOnLost(dataDir),
      });
      held.add(lockDir);
      return {
        async release() {
          held.delete(lockDir);
          await release().catch(() => undefined); // already released or taken away: nothing left to do
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ELOCKED") throw error;
      const seen = look(lockDir);
      if (attempt >= 3 || (seen && !isStale(lockDir, seen))) throw new DataLockError(dataDir, seen?.owner);
      if (seen) takeOver(lockDir, seen);
    }
  }
}
