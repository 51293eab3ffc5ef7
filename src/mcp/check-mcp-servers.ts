// Every declared MCP server connected to, its tools listed and turned into the hub's, and the client closed
// again (a stdio server's process ends with it): `hub tools check`, and the problems the hub logs at start-up.
import type { ToolCheckOptions, ToolProblem } from "../tools/load-tools.js";
import type { Tool } from "../tools/tool-file.js";
import { connectProblem } from "./connect-problem.js";
import { endSession, openClient, type EnvLookup } from "./mcp-connect.js";
import type { McpServerSpec } from "./mcp-server-file.js";
import { loadMcpServers } from "./load-mcp-servers.js";
import { mcpToolsOf, mergeTools, newSchemaCompiler, type ListedTool } from "./mcp-tools.js";

/** How long connecting, and then listing the tools, may take unless a server's `connect_timeout` says. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

export interface CheckedServer {
  spec: McpServerSpec;
  /** How it is reached, for what is printed. */
  kind: "http" | "stdio";
  /** Its tools as the hub names them; undefined when it could not be reached. */
  tools: Tool[] | undefined;
}

export interface McpCheck {
  servers: CheckedServer[];
  /** The tool files' tools and the servers', each name once. */
  tools: Map<string, Tool>;
  problems: ToolProblem[];
}

export interface McpCheckOptions extends ToolCheckOptions {
  env: EnvLookup;
  timeoutMs?: number;
}

/** Loads tools/mcp/*.yml and checks each server against what it lists; `fileTools` are the tool files'. */
export async function checkMcpServers(
  toolsDir: string,
  fileTools: ReadonlyMap<string, Tool>,
  options: McpCheckOptions,
): Promise<McpCheck> {
  const loaded = await loadMcpServers(toolsDir, options);
  const ajv = newSchemaCompiler();
  // All at once (a stdio server may take seconds to stop); the lines keep the files' order.
  const listings = await Promise.all(loaded.servers.map((spec) => listServerTools(spec, options)));
  const servers: CheckedServer[] = [];
  const problems = [...loaded.problems];
  loaded.servers.forEach((spec, index) => {
    const listing = listings[index]!;
    if ("problem" in listing) {
      problems.push(listing.problem);
      servers.push({ spec, kind: kindOf(spec), tools: undefined });
      return;
    }
    const own = mcpToolsOf(spec, listing.tools, ajv);
    problems.push(...own.problems);
    servers.push({ spec, kind: kindOf(spec), tools: own.tools });
  });
  const merged = mergeTools(
    fileTools,
    servers.map((server) => server.tools ?? []),
  );
  problems.push(...merged.problems);
  // What a server is left with once a name it shares went to the one before it.
  for (const server of servers)
    if (server.tools) server.tools = server.tools.filter((tool) => merged.tools.get(tool.name) === tool);
  return { servers, tools: merged.tools, problems };
}

function kindOf(spec: McpServerSpec): "http" | "stdio" {
  return "url" in spec ? "http" : "stdio";
}

/** Connects, lists every page of the server's tools and closes; a failure is one problem line. */
export async function listServerTools(
  spec: McpServerSpec,
  options: { env: EnvLookup; timeoutMs?: number | undefined },
): Promise<{ tools: ListedTool[] } | { problem: ToolProblem }> {
  const timeoutMs = spec.connect_timeout ?? options.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  // What a stdio server last wrote on stderr: why it stopped, when it does.
  const stderr: string[] = [];
  let opened;
  try {
    opened = await openClient(spec, {
      env: options.env,
      timeoutMs,
      onStderr: (line) => {
        stderr.push(line);
        if (stderr.length > 40) stderr.shift();
      },
    });
  } catch (error) {
    return { problem: connectProblem(spec, error, { step: "connect", timeoutMs, stderr }) };
  }
  try {
    const tools: ListedTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await opened.client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: timeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return { tools };
  } catch (error) {
    return { problem: connectProblem(spec, error, { step: "list", timeoutMs, stderr }) };
  } finally {
    // The session a check opened is ended on the server too, not left for it to expire.
    await endSession(opened);
  }
}
