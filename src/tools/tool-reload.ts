// Reloading the tool files while the hub runs: on a change in TOOLS_DIR (each process watches the folder)
// and on `hub tools reload` (POST /v1/tools/reload, passed on to every process over Redis, tool-reload-relay.ts).
// The new set is read and validated whole before it replaces the one in force; a set with any problem is
// refused and the previous set stays, with why (the log, the command's answer, /readyz and a metric). A job
// keeps the definition it started with (tool-definition.ts): a reload changes the next call, never a running job.
import { watch, type FSWatcher } from "node:fs";
import type { Logger } from "../logger.js";
import { formatProblem, loadTools, type LoadedTools, type ToolCheckOptions, type ToolProblem } from "./load-tools.js";
import type { Tool } from "./tool-file.js";

/** The tools in force: one object for the hub's lifetime, whose set a reload replaces at once. */
export class LiveTools implements ReadonlyMap<string, Tool> {
  #tools: ReadonlyMap<string, Tool>;
  constructor(tools: ReadonlyMap<string, Tool>) {
    this.#tools = tools;
  }
  replace(tools: ReadonlyMap<string, Tool>): void {
    this.#tools = tools;
  }
  get size(): number {
    return this.#tools.size;
  }
  get(name: string): Tool | undefined {
    return this.#tools.get(name);
  }
  has(name: string): boolean {
    return this.#tools.has(name);
  }
  forEach(callback: (tool: Tool, name: string, map: ReadonlyMap<string, Tool>) => void): void {
    this.#tools.forEach((tool, name) => callback(tool, name, this));
  }
  entries(): MapIterator<[string, Tool]> {
    return this.#tools.entries();
  }
  keys(): MapIterator<string> {
    return this.#tools.keys();
  }
  values(): MapIterator<Tool> {
    return this.#tools.values();
  }
  [Symbol.iterator](): MapIterator<[string, Tool]> {
    return this.#tools.entries();
  }
}

export type ReloadTrigger = "files changed" | "command" | "another process";

/** The last reload's outcome: what `hub tools reload` prints and /readyz shows. */
export interface ReloadOutcome {
  /** `refused`: the files have a problem; the previous set stays in force. */
  outcome: "applied" | "unchanged" | "refused";
  at: string;
  trigger: ReloadTrigger;
  /** The tools in force after it. */
  tools: string[];
  added: string[];
  removed: string[];
  changed: string[];
  /** Why it was refused, as `file: key: reason`. */
  problems: string[];
}

export interface ToolReloader {
  tools: LiveTools;
  /** Makes the set in force again from the files last read (the MCP servers' tools changed). */
  recompose(): void;
  /** Reads and validates the folder, then replaces the set in force — or keeps it and says why. */
  reload(trigger: ReloadTrigger): Promise<ReloadOutcome>;
  /** The last reload (none since the start: undefined). */
  last(): ReloadOutcome | undefined;
  /** Watches the folder: a change reloads after `debounceMs` of quiet. */
  watch(debounceMs?: number): void;
  stop(): void;
}

/** Files are often written in several steps (an editor's save, a deploy copying a folder): wait for quiet. */
export const RELOAD_DEBOUNCE_MS = 300;

export function toolReloader(options: {
  dir: string;
  check: ToolCheckOptions;
  initial: ReadonlyMap<string, Tool>;
  log: Logger;
  /** Counts each reload by outcome, and whether the files on disk are refused now. */
  counted: (outcome: ReloadOutcome["outcome"]) => void;
  /** The set in force made of the tool files' (MCP servers' tools join them, src/mcp/mcp-registry.ts). */
  compose?: (files: ReadonlyMap<string, Tool>) => ReadonlyMap<string, Tool>;
}): ToolReloader {
  const { dir, log } = options;
  const compose = options.compose ?? ((files: ReadonlyMap<string, Tool>) => files);
  let files = options.initial;
  const tools = new LiveTools(compose(files));
  let last: ReloadOutcome | undefined;
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;

  async function readAndApply(trigger: ReloadTrigger): Promise<ReloadOutcome> {
    const loaded = await loadTools(dir, options.check);
    const before = new Map(tools);
    const problems = refusal(dir, loaded, files.size);
    const at = new Date().toISOString();
    if (problems.length > 0) {
      last = {
        outcome: "refused",
        at,
        trigger,
        tools: [...before.keys()],
        added: [],
        removed: [],
        changed: [],
        problems,
      };
      options.counted("refused");
      log.error(
        { tools_dir: dir, trigger, problems },
        "tool files not reloaded: the previous tools stay in force until the files are fixed",
      );
      return last;
    }
    const next = compose(loaded.tools);
    const added = [...next.keys()].filter((name) => !before.has(name));
    const removed = [...before.keys()].filter((name) => !next.has(name));
    const changed = [...next.values()]
      .filter((tool) => before.has(tool.name) && before.get(tool.name)!.version !== tool.version)
      .map((tool) => tool.name);
    const outcome = added.length + removed.length + changed.length > 0 ? "applied" : "unchanged";
    files = loaded.tools;
    if (outcome === "applied") tools.replace(next);
    last = { outcome, at, trigger, tools: [...tools.keys()], added, removed, changed, problems: [] };
    options.counted(outcome);
    if (outcome === "applied")
      log.info({ tools_dir: dir, trigger, added, removed, changed }, "tool files reloaded; running jobs keep theirs");
    else log.info({ tools_dir: dir, trigger }, "tool files reloaded: nothing changed");
    return last;
  }

  // One reload at a time. A request while one waits to begin is served by it (it reads the files anyway); a
  // request while one runs gets one more after it (the running one may have read the files before the change).
  let chain: Promise<unknown> = Promise.resolve();
  let queued: Promise<ReloadOutcome> | undefined;
  function reload(trigger: ReloadTrigger): Promise<ReloadOutcome> {
    if (queued) return queued;
    const next = chain.then(() => {
      queued = undefined;
      return readAndApply(trigger);
    });
    queued = next;
    chain = next.catch(() => undefined);
    return next;
  }

  return {
    tools,
    recompose() {
      tools.replace(compose(files));
    },
    reload,
    last: () => last,
    watch(debounceMs = RELOAD_DEBOUNCE_MS) {
      try {
        watcher = watch(dir, () => {
          clearTimeout(timer);
          timer = setTimeout(() => {
            reload("files changed").catch((error: unknown) => log.error({ err: error }, "tool files not reloaded"));
          }, debounceMs);
        });
        watcher.on("error", (error) => {
          log.warn({ err: error, tools_dir: dir }, "the tool folder is no longer watched: use `hub tools reload`");
          watcher?.close();
        });
      } catch (error) {
        log.warn(
          { tools_dir: dir, reason: (error as NodeJS.ErrnoException).code ?? (error as Error).message },
          "the tool folder cannot be watched: changes apply on `hub tools reload`",
        );
      }
    },
    stop() {
      clearTimeout(timer);
      watcher?.close();
    },
  };
}

/** Why a freshly read folder cannot replace the set in force; none when it can. */
function refusal(dir: string, loaded: LoadedTools, inForce: number): string[] {
  // No tools before, none now: nothing to keep.
  if ((loaded.folder === "missing" || loaded.folder === "empty") && inForce === 0) return [];
  if (loaded.folder === "missing") return [`${dir}: the tool folder is gone`];
  if (loaded.folder === "empty") return [`${dir}: the tool folder has no tool file (*.yml or *.yaml)`];
  return loaded.problems.map((problem: ToolProblem) => formatProblem(problem));
}
