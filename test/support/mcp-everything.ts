// The published MCP test server (@modelcontextprotocol/server-everything, from the npm registry), run as a
// process of its own: over stdio (the hub starts it from its server file) or over Streamable HTTP on a port.
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { freePort } from "./services.js";

/** The server's entry point: `node <it> stdio` or `node <it> streamableHttp`. */
export const everythingEntry = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist/index.js",
);

/** A server file for the stdio server, as tools/mcp/<name>.yml. */
export const stdioServerFile = (extra = "") => `
command: ${process.execPath}
args: ["${everythingEntry}", "stdio"]
${extra}`;

export const httpServerFile = (url: string, extra = "") => `
url: ${url}
${extra}`;

export interface EverythingServer {
  url: string;
  port: number;
  /** What it wrote (stdout and stderr): its log of sessions and requests. */
  output: string[];
  /** Stops it (SIGKILL with `kill`), then starts it again on the same port when `restart`. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startEverythingHttp(): Promise<EverythingServer> {
  const port = await freePort();
  const output: string[] = [];
  let child: ChildProcess | undefined;
  const server: EverythingServer = {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    output,
    async start() {
      const started = spawn(process.execPath, [everythingEntry, "streamableHttp"], {
        env: { ...process.env, PORT: String(port) },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = started;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`MCP server did not start:\n${output.join("")}`)), 15_000);
        const seen = (chunk: Buffer) => {
          output.push(chunk.toString());
          if (/listening on port/i.test(output.join(""))) {
            clearTimeout(timer);
            resolve();
          }
        };
        started.stdout!.on("data", seen);
        started.stderr!.on("data", seen);
        started.once("exit", (code) => reject(new Error(`MCP server exited (${code}):\n${output.join("")}`)));
      });
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once("exit", resolve));
      running.kill("SIGKILL");
      await exited;
    },
  };
  await server.start();
  return server;
}
