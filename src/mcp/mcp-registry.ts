// The MCP servers' tools beside the tool files' in the one set in force (src/tools/tool-reload.ts): each server's
// listing replaces its own tools when it comes (at start, once the server answers; again when it reconnects),
// and the set is composed again. A name taken twice keeps its first holder; the others are left out, logged.
import type { Logger } from "../logger.js";
import type { Tool } from "../tools/tool-file.js";
import { formatProblem } from "../tools/load-tools.js";
import { mergeTools } from "./mcp-tools.js";

export interface McpRegistry {
  /** The set in force from the tool files' set: theirs, then each server's tools. */
  compose(files: ReadonlyMap<string, Tool>): ReadonlyMap<string, Tool>;
  /** A server's tools as it listed them now. */
  listed(server: string, tools: Tool[]): void;
}

export function mcpRegistry(options: { servers: string[]; log: Logger; changed: () => void }): McpRegistry {
  // In the order the servers are declared: which one keeps a shared name does not depend on who answered first.
  const byServer = new Map<string, Tool[]>(options.servers.map((server) => [server, []]));
  let reported = new Set<string>();
  return {
    compose(files) {
      const { tools, problems } = mergeTools(files, [...byServer.values()]);
      const lines = new Set(problems.map(formatProblem));
      for (const line of lines) if (!reported.has(line)) options.log.warn({ problem: line }, "MCP tool left out");
      reported = lines;
      return tools;
    },
    listed(server, tools) {
      byServer.set(server, tools);
      options.changed();
    },
  };
}
