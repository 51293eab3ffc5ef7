// Why a declared server could not be reached, in one line under the key that says where to look (`url` or
// `command`): what `hub tools check` and the hub's start-up print.
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { ToolProblem } from "../tools/load-tools.js";
import type { McpServerSpec } from "./mcp-server-file.js";

export interface ConnectContext {
  /** What it was doing: "connect" (starting, initialising) or "list" (`tools/list`). */
  step: "connect" | "list";
  timeoutMs: number;
  /** The stdio server's last lines on stderr, where the reason it stopped is likeliest said. */
  stderr?: readonly string[] | undefined;
}

export function connectProblem(spec: McpServerSpec, error: unknown, context: ConnectContext): ToolProblem {
  const key = "url" in spec ? "url" : "command";
  return { file: spec.file, key, reason: connectReason(spec, error, context) };
}

function connectReason(spec: McpServerSpec, error: unknown, context: ConnectContext): string {
  const doing = context.step === "connect" ? "answering" : "listing its tools";
  const telling = tellingLine(context.stderr ?? []);
  const said = telling ? `; it said: ${telling.slice(0, 200)}` : "";
  if (error instanceof McpError && error.code === (ErrorCode.RequestTimeout as number))
    return `did not finish ${doing} within ${Math.round(context.timeoutMs / 1000)}s${said}`;
  if (!("url" in spec)) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (typeof code === "string" && /^E[A-Z]+$/.test(code))
      return `cannot start "${spec.command}" (${code}${code === "ENOENT" && spec.cwd ? `, or no folder ${spec.cwd}` : ""})`;
    if (error instanceof McpError && error.code === (ErrorCode.ConnectionClosed as number))
      return `"${spec.command}" exited before ${doing}${said}`;
    return `${context.step === "connect" ? "cannot connect" : "cannot list its tools"} (${messageOf(error)})${said}`;
  }
  if (error instanceof UnauthorizedError) return `the server refused the credentials (${messageOf(error)})`;
  if (error instanceof StreamableHTTPError) {
    if (error.code === 401 || error.code === 403)
      return `the server refused the credentials (HTTP ${error.code}: set \`headers\` or \`oauth\`)`;
    if (error.code !== undefined && error.code >= 400)
      return `the server answered HTTP ${error.code} (is this the server's MCP endpoint?)`;
  }
  const cause = (error as { cause?: { code?: string; message?: string; address?: string; port?: number } } | undefined)
    ?.cause;
  if (cause?.code) {
    const where = cause.address ? ` ${cause.address}${cause.port ? `:${cause.port}` : ""}` : "";
    return `cannot connect (${cause.code}${where})`;
  }
  if (cause?.message) return `cannot connect (${cause.message})`;
  return `${context.step === "connect" ? "cannot connect" : "cannot list its tools"} (${messageOf(error)})`;
}

function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!.slice(0, 200);
}

/**
 * The line of a program's last words that says why: the last naming an error (not a stack frame), else the
 * last one that is not a frame or a runtime's sign-off ("Node.js v20.19.0", a lone "}").
 */
export function tellingLine(lines: readonly string[]): string | undefined {
  const plain = lines.map((line) => line.trim()).filter((line) => line && !/^at\s/.test(line));
  const errors = plain.filter((line) => /error|exception|fatal|traceback|not found|cannot|denied/i.test(line));
  return errors.at(-1) ?? plain.filter((line) => !/^(Node\.js v[\d.]+|[}\]^)]+)$/.test(line)).at(-1);
}
