// A declared MCP server's tools as the hub's agent sees them: the ones its file allows, named with the
// server's prefix, with the hub's settings for each, and without the argument the person's verified identity
// fills (the model never sees or sets it).
import type { Tool as ListedTool } from "@modelcontextprotocol/sdk/types.js";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { DEFAULT_TIMEOUT_MS } from "../tools/duration.js";
import { argumentChecker, type ToolProblem } from "../tools/load-tools.js";
import { versionOf } from "../tools/tool-definition.js";
import type { Tool } from "../tools/tool-file.js";
import type { McpServerSpec } from "./mcp-server-file.js";

export type { ListedTool };

/** How long a turn waits for a plain call before it becomes a job, unless `sync_budget` says otherwise. */
export const DEFAULT_SYNC_BUDGET_MS = 5000;

/** The longest tool name the model APIs take. */
const MAX_TOOL_NAME = 64;

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export function newSchemaCompiler(): Ajv {
  return addFormats(new Ajv({ allErrors: true, strict: false }));
}

/** The hub's name for a server's tool: the prefix, then the tool's name with what a model API refuses as `_`. */
export function hubToolName(spec: McpServerSpec, tool: string): string {
  return (spec.prefix ?? `${spec.name}_`) + tool.replace(/[^a-zA-Z0-9_-]/g, "_");
}

export function mcpToolsOf(
  spec: McpServerSpec,
  listed: readonly ListedTool[],
  ajv: Ajv = newSchemaCompiler(),
): { tools: Tool[]; problems: ToolProblem[] } {
  const file = spec.file;
  const problems: ToolProblem[] = [];
  const byName = new Map(listed.map((tool) => [tool.name, tool]));
  const allowed = spec.tools === "all" ? [...byName.keys()] : spec.tools;
  if (spec.tools !== "all")
    spec.tools.forEach((name, index) => {
      if (!byName.has(name)) problems.push({ file, key: `tools.${index}`, reason: notListed(name, byName) });
    });
  for (const name of Object.keys(spec.settings)) {
    if (!byName.has(name)) problems.push({ file, key: `settings.${name}`, reason: notListed(name, byName) });
    else if (!allowed.includes(name))
      problems.push({ file, key: `settings.${name}`, reason: `${name} is not one of \`tools\`` });
  }
  const tools: Tool[] = [];
  const hubNames = new Map<string, string>();
  for (const name of allowed) {
    const server = byName.get(name);
    if (!server) continue;
    const hubName = hubToolName(spec, name);
    if (hubName.length > MAX_TOOL_NAME) {
      problems.push({
        file,
        key: "tools",
        reason: `${hubName} is longer than ${MAX_TOOL_NAME} characters (a shorter \`prefix\`, or leave ${name} out of \`tools\`)`,
      });
      continue;
    }
    const same = hubNames.get(hubName);
    if (same !== undefined) {
      problems.push({ file, key: "tools", reason: `${name} and ${same} both become ${hubName}` });
      continue;
    }
    hubNames.set(hubName, name);
    const built = toolOf(spec, server, hubName, ajv);
    if ("problem" in built) problems.push(built.problem);
    else tools.push(built.tool);
  }
  return { tools, problems };
}

function notListed(name: string, byName: ReadonlyMap<string, ListedTool>): string {
  if (byName.size === 0) return `the server has no tool named ${name} (it lists none)`;
  const names = [...byName.keys()];
  const shown = names.length > 20 ? `${names.slice(0, 20).join(", ")} and ${names.length - 20} more` : names.join(", ");
  return `the server has no tool named ${name} (it has ${shown})`;
}

function toolOf(
  spec: McpServerSpec,
  server: ListedTool,
  name: string,
  ajv: Ajv,
): { tool: Tool } | { problem: ToolProblem } {
  const settings = spec.settings[server.name] ?? {};
  const personArgument = spec.person?.argument;
  // The dialect a server names (`$schema`) need not be one Ajv or a model API knows: the keywords are
  // draft-07's, and the model is given the schema without it.
  const { $schema: _dialect, ...parameters } = withoutArgument(server.inputSchema, personArgument);
  let check: ValidateFunction;
  try {
    // The model's arguments are checked against the schema it saw (the person's argument is the hub's to add).
    check = ajv.compile(parameters);
  } catch (error) {
    return {
      problem: {
        file: spec.file,
        key: "tools",
        reason: `${server.name}'s inputSchema is not a valid JSON Schema: ${(error as Error).message}`,
      },
    };
  }
  const definition: Omit<Tool, "version" | "validateArguments"> = {
    name,
    file: spec.file,
    description: settings.description ?? server.description ?? server.title ?? server.name,
    whenToUse: undefined,
    parameters,
    async: {
      timeoutMs: settings.timeout ?? DEFAULT_TIMEOUT_MS,
      cancel: undefined,
      message: undefined,
      template: settings.whatsapp_template,
      notifyText: settings.notify_text,
      rerunTimes: settings.rerun?.times ?? 0,
      deliverWithinMs: settings.deliver_within,
    },
    approval: undefined,
    request: undefined,
    respond: {},
    mcp: {
      server: spec.name,
      tool: server.name,
      taskSupport: server.execution?.taskSupport ?? "forbidden",
      syncBudgetMs: settings.sync_budget ?? DEFAULT_SYNC_BUDGET_MS,
      notifyProgress: settings.notify_progress ?? false,
      personArgument,
    },
  };
  return {
    tool: {
      ...definition,
      version: versionOf(definition),
      validateArguments: argumentChecker(check),
    },
  };
}

/** The input schema without `argument` in its properties and `required`. */
function withoutArgument(schema: ListedTool["inputSchema"], argument: string | undefined): Record<string, unknown> {
  if (argument === undefined) return schema;
  const { properties, required, ...rest } = schema;
  const kept = properties && Object.fromEntries(Object.entries(properties).filter(([key]) => key !== argument));
  const stillRequired = required?.filter((key) => key !== argument);
  return {
    ...rest,
    ...(kept ? { properties: kept } : {}),
    ...(stillRequired && stillRequired.length > 0 ? { required: stillRequired } : {}),
  };
}

/**
 * The tool files' tools and every server's, in one registry. A name already taken (by a tool file, or a server
 * before) is a problem, and the later tool is left out.
 */
export function mergeTools(
  fileTools: ReadonlyMap<string, Tool>,
  mcp: readonly (readonly Tool[])[],
): { tools: Map<string, Tool>; problems: ToolProblem[] } {
  const tools = new Map(fileTools);
  const problems: ToolProblem[] = [];
  for (const serverTools of mcp)
    for (const tool of serverTools) {
      const taken = tools.get(tool.name);
      if (!taken) {
        tools.set(tool.name, tool);
        continue;
      }
      const hint = taken.mcp
        ? " (give one of the two servers a `prefix` of its own)"
        : " (give the server a `prefix`, or leave the tool out of `tools`)";
      problems.push({
        file: tool.file,
        key: "tools",
        reason: `a tool named ${tool.name} is already defined by ${taken.file}${hint}`,
      });
    }
  return { tools, problems };
}
