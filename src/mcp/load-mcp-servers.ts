// Loads tools/mcp/*.yml (one MCP server a file, docs/mcp.md) and reports every problem as the tool files'
// loader does: file, key, reason. Which tools a server has is known only once it is listed (mcp-tools.ts).
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { parseDocument } from "yaml";
import type { ToolCheckOptions, ToolProblem } from "../tools/load-tools.js";
import { placeholdersIn, stringsIn } from "../tools/placeholders.js";
import { envReferences } from "../tools/tool-env.js";
import { mcpServerFileSchema, type McpServerSpec } from "./mcp-server-file.js";

/** A server's name (its file's name): what its tools' names start with unless it has a `prefix`. */
const SERVER_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,31}$/;

export interface LoadedMcpServers {
  servers: McpServerSpec[];
  problems: ToolProblem[];
}

/** Reads and validates every server file in `<toolsDir>/mcp`; no such folder means no servers. */
export async function loadMcpServers(toolsDir: string, options: ToolCheckOptions = {}): Promise<LoadedMcpServers> {
  const dir = path.join(toolsDir, "mcp");
  const shownDir = path.join(path.basename(toolsDir), "mcp");
  let entries: string[];
  try {
    if (!(await stat(dir)).isDirectory())
      return { servers: [], problems: [folderProblem(shownDir, "is not a folder")] };
    entries = await readdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { servers: [], problems: [] };
    return { servers: [], problems: [folderProblem(shownDir, `cannot be read (${code ?? (error as Error).message})`)] };
  }
  const servers: McpServerSpec[] = [];
  const problems: ToolProblem[] = [];
  const seen = new Map<string, string>();
  for (const file of entries.filter((each) => /\.ya?ml$/.test(each)).sort()) {
    const shown = path.join(shownDir, file);
    const name = file.replace(/\.ya?ml$/, "");
    let text: string;
    try {
      text = await readFile(path.join(dir, file), "utf8");
    } catch (error) {
      problems.push({ file: shown, key: "", reason: `cannot be read (${(error as NodeJS.ErrnoException).code})` });
      continue;
    }
    const result = parseMcpServerFile(name, shown, text, options);
    if ("problems" in result) problems.push(...result.problems);
    else if (seen.has(name))
      // research.yml and research.yaml: one name, two servers.
      problems.push({ file: shown, key: "", reason: `a server named ${name} is already defined by ${seen.get(name)}` });
    else {
      seen.set(name, shown);
      servers.push(result.server);
    }
  }
  return { servers, problems };
}

/**
 * The kind the file says it is (`url` or `command`), so that a problem is that kind's, naming its key; a file
 * with both or neither gets the union's one sentence.
 */
function schemaFor(value: unknown) {
  const [http, stdio] = mcpServerFileSchema.options;
  if (!value || typeof value !== "object") return mcpServerFileSchema;
  const has = (key: string) => key in value;
  if (has("url") && !has("command")) return http;
  if (has("command") && !has("url")) return stdio;
  return mcpServerFileSchema;
}

const HTTP_KEYS = ["url", "headers", "oauth"];
const STDIO_KEYS = ["command", "args", "env", "cwd"];

/** An unknown key named as such, and a key of the other kind of server said to be one. */
function unknownKey(under: readonly PropertyKey[], key: string): string {
  if (under.length === 0 && HTTP_KEYS.includes(key)) return "only for a `url` server, not with `command`";
  if (under.length === 0 && STDIO_KEYS.includes(key)) return "only for a `command` server, not with `url`";
  return "is not a key the hub knows";
}

function folderProblem(file: string, reason: string): ToolProblem {
  return { file, key: "", reason };
}

/** One server file: its name from the file's, its keys checked, `$env.NAME` looked up where the hub fills it. */
export function parseMcpServerFile(
  name: string,
  file: string,
  text: string,
  options: ToolCheckOptions = {},
): { server: McpServerSpec } | { problems: ToolProblem[] } {
  if (!SERVER_NAME.test(name))
    return {
      problems: [
        {
          file,
          key: "",
          reason:
            "the file name (the server's name) must be letters, digits, _ or -, starting with a letter, at most 32",
        },
      ],
    };
  const doc = parseDocument(text);
  if (doc.errors.length > 0)
    return {
      problems: doc.errors.map((error) => ({ file, key: "", reason: `YAML: ${error.message.split("\n")[0]}` })),
    };
  const parsed = schemaFor(doc.toJS()).safeParse(doc.toJS() ?? {});
  if (!parsed.success)
    return {
      problems: parsed.error.issues.flatMap((issue): ToolProblem[] =>
        issue.code === "unrecognized_keys"
          ? issue.keys.map((key) => ({
              file,
              key: [...issue.path, key].join("."),
              reason: unknownKey(issue.path, key),
            }))
          : [{ file, key: issue.path.join("."), reason: issue.message }],
      ),
    };
  const spec = parsed.data;
  // Where mcp-connect.ts fills `$env.NAME`; nothing else is filled, so any other placeholder would be sent as
  // written.
  const filledPlaces: [unknown, string][] =
    "url" in spec
      ? [
          [spec.url, "url"],
          [spec.headers, "headers"],
          [spec.oauth && { client_id: spec.oauth.client_id, client_secret: spec.oauth.client_secret }, "oauth"],
        ]
      : [
          [spec.command, "command"],
          [spec.args, "args"],
          [spec.env, "env"],
        ];
  const problems: ToolProblem[] = filledPlaces.flatMap(([value, key]) =>
    stringsIn(value, key).flatMap((each) =>
      placeholdersIn(each.text)
        .filter((placeholder) => placeholder.namespace !== "env" || placeholder.name === undefined)
        .map((placeholder) => ({
          file,
          key: each.key,
          reason: `${placeholder.text} is not a placeholder the hub fills here; a server's ${key} takes $env.NAME only`,
        })),
    ),
  );
  if (options.envHas)
    for (const [value, key] of filledPlaces)
      for (const reference of envReferences(value, key))
        if (!options.envHas(reference.name))
          problems.push({
            file,
            key: reference.key,
            reason: `$env.${reference.name} is not set in the environment (or is empty)`,
          });
  if (spec.person?.header !== undefined && !("url" in spec))
    problems.push({ file, key: "person.header", reason: "only for a `url` server (a stdio server has no headers)" });
  if (problems.length > 0) return { problems };
  return { server: { ...spec, name, file } };
}
