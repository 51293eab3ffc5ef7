// Loads tools/*.yml, validates each file and its JSON Schema, and reports every problem as file, key, reason.
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { parseDocument } from "yaml";
import { DEFAULT_TIMEOUT_MS, parseDuration } from "./duration.js";
import { toolFileSchema, type Tool } from "./tool-file.js";

export interface ToolProblem {
  file: string;
  key: string;
  reason: string;
}

export class ToolFileError extends Error {
  constructor(readonly problems: ToolProblem[]) {
    super(`invalid tool files:\n${problems.map(formatProblem).join("\n")}`);
  }
}

export function formatProblem(problem: ToolProblem): string {
  return `${problem.file}: ${problem.key || "(file)"}: ${problem.reason}`;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

function newAjv(): Ajv {
  return addFormats(new Ajv({ allErrors: true, strict: false }));
}

export type ToolRegistry = ReadonlyMap<string, Tool>;

/** Reads and validates every tool file; returns the registry and the problems found (none means usable). */
export async function loadTools(dir: string): Promise<{ tools: ToolRegistry; problems: ToolProblem[] }> {
  const tools = new Map<string, Tool>();
  const problems: ToolProblem[] = [];
  if (!existsSync(dir)) return { tools, problems };
  const files = (await readdir(dir)).filter((file) => /\.ya?ml$/.test(file)).sort();
  const ajv = newAjv();
  for (const file of files) {
    const shown = path.join(path.basename(dir), file);
    const name = file.replace(/\.ya?ml$/, "");
    const result = parseToolFile(name, shown, await readFile(path.join(dir, file), "utf8"), ajv);
    if ("problems" in result) problems.push(...result.problems);
    else if (tools.has(name))
      problems.push({ file: shown, key: "", reason: `a tool named ${name} is already defined` });
    else tools.set(name, result.tool);
  }
  return { tools, problems };
}

export function parseToolFile(
  name: string,
  file: string,
  text: string,
  ajv: Ajv = newAjv(),
): { tool: Tool } | { problems: ToolProblem[] } {
  if (!TOOL_NAME.test(name)) {
    return { problems: [{ file, key: "", reason: "the file name (the tool's name) must be letters, digits, _ or -" }] };
  }
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    return {
      problems: doc.errors.map((error) => ({ file, key: "", reason: `YAML: ${error.message.split("\n")[0]}` })),
    };
  }
  const parsed = toolFileSchema.safeParse(doc.toJS() ?? {});
  if (!parsed.success) {
    return {
      problems: parsed.error.issues.map((issue) => ({ file, key: issue.path.join("."), reason: issue.message })),
    };
  }
  const spec = parsed.data;
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(spec.parameters);
  } catch (error) {
    return { problems: [{ file, key: "parameters", reason: `not a valid JSON Schema: ${(error as Error).message}` }] };
  }
  const asyncSpec = spec.async;
  const timeout = asyncSpec?.timeout ? parseDuration(asyncSpec.timeout) : { ms: DEFAULT_TIMEOUT_MS };
  return {
    tool: {
      name,
      file,
      description: spec.description,
      whenToUse: spec.when_to_use,
      parameters: spec.parameters,
      async: asyncSpec && {
        timeoutMs: "ms" in timeout ? timeout.ms : DEFAULT_TIMEOUT_MS,
        cancel: asyncSpec.cancel,
        template: asyncSpec.whatsapp_template,
        rerunTimes: asyncSpec.rerun?.times ?? 0,
        deliverWithinMs: asyncSpec.deliver_within,
      },
      request: spec.request,
      respond: spec.respond?.data ?? {},
      validateArguments(args) {
        if (validate(args)) return [];
        return (validate.errors ?? []).map((error) => ({
          path:
            error.instancePath.replace(/^\//, "").replace(/\//g, ".") ||
            (error.params as { missingProperty?: string }).missingProperty ||
            "",
          message: error.message ?? "is invalid",
        }));
      },
    },
  };
}
