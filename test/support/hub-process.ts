// A hub in a process of its own (`node --import tsx src/main.ts`), for tests that need several hub
// processes. Node runs the hub itself (not through tsx's CLI, which forwards signals to a child of its
// own), so the child's pid is the hub's: SIGKILL kills the hub, as `kill -9` would.
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const root = fileURLToPath(new URL("../..", import.meta.url));
export const mainScript = path.join(root, "src/main.ts");
/** tsx's loader as a file URL, so `--import` finds it whatever the child's working directory. */
export const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** How a `hub` command ended. */
export interface CommandRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `hub <args>` from the sources, in a process of its own, with only PATH, HOME and the environment given; its
 * logs silenced, so that what it prints is its answer alone.
 */
export function hubCommand(args: string[], env: Record<string, string> = {}, cwd = root): Promise<CommandRun> {
  const { PATH, HOME } = process.env;
  const child = spawn(process.execPath, ["--import", tsxLoader, path.join(root, "src/cli/hub.ts"), ...args], {
    cwd,
    env: { PATH, HOME, ...env, LOG_LEVEL: "silent" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}
import { clearRedisPrefix } from "./services.js";
import { apiCall, testHubEnv, type TestHubOptions } from "./test-hub.js";

export interface HubProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): { stdout: string; stderr: string };
  waitFor(text: string, timeoutMs?: number): Promise<void>;
  /** Where it listens, from its start-up banner (once it is running). */
  url(): string;
  stop(): Promise<number | null>;
}

/** The compiled hub (`npm start` runs it), built on install. */
export const compiledMain = path.join(root, "dist/main.js");

export function spawnHub(
  env: Record<string, string | undefined>,
  cwd = root,
  options: { compiled?: boolean; nodeArgs?: string[] } = {},
): HubProcess {
  const { PATH, HOME } = process.env;
  const args = [
    ...(options.nodeArgs ?? []),
    ...(options.compiled ? ["--enable-source-maps", compiledMain] : ["--import", tsxLoader, mainScript]),
  ];
  const child = spawn(process.execPath, args, {
    cwd,
    env: { PATH, HOME, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => ({ stdout, stderr }),
    url() {
      const found = /listening:\s+(\S+)/.exec(stdout)?.[1];
      if (!found) throw new Error(`the hub has not said where it listens: ${stdout.slice(-500)}`);
      return found;
    },
    async waitFor(text, timeoutMs = 50_000) {
      const deadline = Date.now() + timeoutMs;
      while (!stdout.includes(text)) {
        if (child.exitCode !== null) throw new Error(`hub exited ${child.exitCode}: ${stderr} ${stdout.slice(-2000)}`);
        if (Date.now() > deadline) throw new Error(`no "${text}" in the hub's output: ${stdout} ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

/** A hub process of its own on a fresh database and queue prefix: a crash shows as its exit. */
export interface SpawnedHub extends Omit<HubProcess, "url"> {
  url: string;
  env: Record<string, string>;
  api(method: string, route: string, body?: unknown, key?: string): Promise<{ status: number; body: any }>;
  /** Stops it (if running) and removes its database and Redis keys. */
  dispose(): Promise<void>;
}

export async function startHubProcess(options: TestHubOptions = {}): Promise<SpawnedHub> {
  const { env, dropDatabase } = await testHubEnv(options);
  const hub = spawnHub(env);
  await hub.waitFor("chat-delivery-hub is running");
  const url = hub.url();
  return {
    ...hub,
    url,
    // The port it got, so that a restart with this environment comes back at the same address.
    env: { ...env, PORT: new URL(url).port },
    api: (method, route, body, key) => apiCall(url, method, route, body, key),
    async dispose() {
      await hub.stop();
      await clearRedisPrefix(env.QUEUE_PREFIX!);
      await dropDatabase?.();
    },
  };
}
