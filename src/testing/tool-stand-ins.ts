// The tools' backends during a conversation test: each tool file is copied with its `request.base_url` pointing
// at a stand-in the runner serves on 127.0.0.1, so the hub's own path (rendering, the start call, the 202, the
// job, the signed callback URL) runs unchanged and no real backend hears of the test.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseDocument } from "yaml";
import { toolEnvironment } from "../config.js";
import { toolEnvHas } from "../tools/tool-env.js";
import type { RecordedAnswer } from "./test-file.js";

/** One request the hub made to a stand-in. */
export interface StandInRequest {
  tool: string;
  method: string;
  path: string;
  /** The job the hub started (its start call), with the signed URL a backend would post to. */
  jobId?: string;
  callbackUrl?: string;
}

export interface ToolStandIns {
  /** The folder of rewritten tool files the test hub reads. */
  toolsDir: string;
  /** The tool names, async or not. */
  tools: Map<string, { async: boolean }>;
  /** Every request so far, in order. */
  requests: StandInRequest[];
  /** The answers of the test that runs now. */
  use(answers: Record<string, RecordedAnswer>): void;
  stop(): Promise<void>;
}

const TOOL_FILE = /\.ya?ml$/;
// A `$env.NAME` the environment does not set: no real backend is called, so any value will do.
const UNSET = "unset-in-conversation-tests";

export async function startToolStandIns(sourceDir: string, workDir: string): Promise<ToolStandIns> {
  const toolsDir = path.join(workDir, "tools");
  await mkdir(toolsDir, { recursive: true });
  const requests: StandInRequest[] = [];
  const tools = new Map<string, { async: boolean }>();
  const servers: Server[] = [];
  let answers: Record<string, RecordedAnswer> = {};
  // Starts of each tool in the test that runs now: the nth is answered with the nth `accepted` message.
  let starts = new Map<string, number>();
  let files: string[] = [];
  try {
    files = (await readdir(sourceDir)).filter((file) => TOOL_FILE.test(file)).sort();
  } catch {
    // No tool folder: the hub runs with no tools, as it would.
  }
  const envHas = toolEnvHas(toolEnvironment());
  try {
    for (const file of files) {
      const name = file.replace(TOOL_FILE, "");
      const document = parseDocument(await readFile(path.join(sourceDir, file), "utf8"));
      const isAsync = document.get("async") !== undefined;
      tools.set(name, { async: isAsync });
      const server = createServer((req, res) => {
        void answer(name, isAsync, req).then(({ status, body }) => {
          res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(body));
        });
      });
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const port = (server.address() as AddressInfo).port;
      if (document.hasIn(["request", "base_url"])) document.setIn(["request", "base_url"], `http://127.0.0.1:${port}`);
      const text = document
        .toString()
        .replace(/\$env\.([A-Za-z_][A-Za-z0-9_]*)/g, (whole, env: string) => (envHas(env) ? whole : UNSET));
      await writeFile(path.join(toolsDir, file), text, { mode: 0o600 });
    }
  } catch (error) {
    await Promise.all(servers.map(close));
    throw error;
  }

  async function answer(tool: string, isAsync: boolean, req: IncomingMessage) {
    for await (const chunk of req) void chunk; // the body is not needed: the hub's tool_call message has the arguments
    const jobId = header(req, "x-vatio-job-id");
    const callbackUrl = header(req, "x-vatio-callback-url");
    requests.push({
      tool,
      method: req.method ?? "",
      path: req.url ?? "",
      ...(jobId ? { jobId } : {}),
      ...(callbackUrl ? { callbackUrl } : {}),
    });
    const recorded = answers[tool];
    // A start of an async call: accepted, with the recorded message; cancels and messages: taken.
    if (isAsync && jobId) {
      const nth = starts.get(tool) ?? 0;
      starts.set(tool, nth + 1);
      const given = recorded?.accepted;
      const message = Array.isArray(given) ? given[Math.min(nth, given.length - 1)] : given;
      return { status: 202, body: message ? { message } : {} };
    }
    if (isAsync) return { status: 200, body: {} };
    if (recorded?.answer !== undefined) return { status: 200, body: recorded.answer };
    return { status: 501, body: { message: `the test gives no answer for ${tool} (tools.${tool}.answer)` } };
  }

  return {
    toolsDir,
    tools,
    requests,
    use: (next) => {
      answers = next;
      starts = new Map();
    },
    stop: async () => void (await Promise.all(servers.map(close))),
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
