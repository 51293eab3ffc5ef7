// The Python tool-backend module (python/vatio_backend.py) on Debian's python3 and python3-flask: its own
// tests (python/test_vatio_backend.py: callback retries against a local server, run(), the Flask accept and
// cancel endpoints over HTTP), then a Flask backend written with it keeps a result through a hub stopped
// (SIGTERM) and started again.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { resultAcrossRestart } from "./support/restart-scenario.js";

/** Debian's interpreter, where apt puts python3-flask (not a pyenv one on the PATH). */
const PYTHON = "/usr/bin/python3";
const root = fileURLToPath(new URL("..", import.meta.url));

describe("the Python tool-backend module", () => {
  let backend: ChildProcessWithoutNullStreams | undefined;
  afterAll(() => void backend?.kill("SIGKILL"));

  it("passes its own tests over real HTTP", () => {
    const run = spawnSync(PYTHON, ["-m", "unittest", "-v", "python/test_vatio_backend.py"], {
      cwd: root,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.error).toBeUndefined();
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/Ran 7 tests/);
    expect(run.stderr).toMatch(/\nOK\n/);
  });

  it("retries the result while the hub is down, and the person receives it once", async () => {
    backend = spawn(PYTHON, [fileURLToPath(new URL("./support/python_tool_backend.py", import.meta.url))], {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    backend.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const port = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: backend!.stdout });
      lines.once("line", (text) => resolve((JSON.parse(text) as { port: number }).port));
      backend!.once("exit", (code) => reject(new Error(`the Python backend exited ${code}: ${stderr}`)));
    });
    const url = `http://127.0.0.1:${port}`;
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: body === undefined ? {} : { "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return (await res.json()) as any;
    };
    const state = () => call("GET", "/test/state");
    await resultAcrossRestart(
      {
        url,
        key: "unused",
        setHubUrl: async (hubUrl) => void (await call("POST", "/test/hub-url", { url: hubUrl })),
        accepted: async () => (await state()).accepted,
        release: async (jobId, result) => void (await call("POST", `/test/release/${jobId}`, result)),
        retries: async (jobId) => (await state()).retries[jobId] ?? 0,
        outcome: async (jobId) => (await state()).outcomes[jobId] ?? undefined,
      },
      "SIGTERM",
    );
  }, 180_000);
});
