// Loads tools/*.yml, validates each file and its JSON Schema, and reports every problem as file, key, reason.
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { parseDocument } from "yaml";
import { DEFAULT_APPROVAL_TIMEOUT_MS, DEFAULT_TIMEOUT_MS, parseDuration } from "./duration.js";
import { placeholderProblem, placeholdersIn, stringsIn, type PlaceholderPlace } from "./placeholders.js";
import { personParameterProblems } from "./person-placeholder.js";
import { envReferences } from "./tool-env.js";
import { versionOf } from "./tool-definition.js";
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

export interface ToolCheckOptions {
  /** Whether `$env.NAME` has a value; without it, `$env` names are not checked. */
  envHas?: (name: string) => boolean;
}

export interface LoadedTools {
  tools: ToolRegistry;
  /** Every problem found (none means usable), including a folder that is not one or cannot be read. */
  problems: ToolProblem[];
  /**
   * "missing" or "empty" (no *.yml / *.yaml file): a hub may run with no tools, but a check has checked
   * nothing. "unreadable": not a folder, or not readable (its one problem says which).
   */
  folder: "read" | "missing" | "empty" | "unreadable";
}

/** Reads and validates every tool file in `dir`. */
export async function loadTools(dir: string, options: ToolCheckOptions = {}): Promise<LoadedTools> {
  const tools = new Map<string, Tool>();
  const problems: ToolProblem[] = [];
  const folderProblem = (reason: string): LoadedTools => ({
    tools,
    problems: [{ file: dir, key: "", reason }],
    folder: "unreadable",
  });
  let entries: string[];
  try {
    if (!(await stat(dir)).isDirectory()) return folderProblem("is not a folder");
    entries = await readdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { tools, problems, folder: "missing" };
    return folderProblem(`cannot be read (${code ?? (error as Error).message})`);
  }
  const files = entries.filter((file) => /\.ya?ml$/.test(file)).sort();
  if (files.length === 0) return { tools, problems, folder: "empty" };
  const ajv = newAjv();
  for (const file of files) {
    const shown = path.join(path.basename(dir), file);
    const name = file.replace(/\.ya?ml$/, "");
    let text: string;
    try {
      text = await readFile(path.join(dir, file), "utf8");
    } catch (error) {
      problems.push({ file: shown, key: "", reason: `cannot be read (${(error as NodeJS.ErrnoException).code})` });
      continue;
    }
    const result = parseToolFile(name, shown, text, { ...options, ajv });
    if ("problems" in result) problems.push(...result.problems);
    else if (tools.has(name))
      problems.push({ file: shown, key: "", reason: `a tool named ${name} is already defined` });
    else tools.set(name, result.tool);
  }
  return { tools, problems, folder: "read" };
}

export function parseToolFile(
  name: string,
  file: string,
  text: string,
  options: ToolCheckOptions & { ajv?: Ajv } = {},
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
  // Where the hub substitutes `$env`: the request, the cancel path and the message request.
  const unset = options.envHas
    ? [
        ...envReferences(spec.request, "request"),
        ...envReferences(spec.async?.cancel?.path, "async.cancel.path"),
        ...envReferences(spec.async?.message, "async.message"),
      ].filter((reference) => !options.envHas!(reference.name))
    : [];
  // Every placeholder whole, and only where the hub fills it (`$job.identifier` is not `$job.id`).
  const places: [unknown, string, PlaceholderPlace][] = [
    [spec.request, "request", "request"],
    [spec.async?.cancel?.path, "async.cancel.path", "cancel"],
    [spec.async?.message, "async.message", "cancel"],
    [spec.async?.whatsapp_template?.components, "async.whatsapp_template.components", "template"],
  ];
  const problems: ToolProblem[] = places.flatMap(([value, key, place]) =>
    stringsIn(value, key).flatMap((each) =>
      placeholdersIn(each.text).flatMap((placeholder) => {
        const reason = placeholderProblem(placeholder, place, { async: spec.async !== undefined, key: each.key });
        return reason ? [{ file, key: each.key, reason }] : [];
      }),
    ),
  );
  problems.push(...personParameterProblems(file, spec.request.body, spec.parameters));
  problems.push(
    ...unset.map((reference) => ({
      file,
      key: reference.key,
      reason: `$env.${reference.name} is not set in the environment (or is empty)`,
    })),
  );
  let validate: ValidateFunction | undefined;
  try {
    validate = (options.ajv ?? newAjv()).compile(spec.parameters);
  } catch (error) {
    problems.push({ file, key: "parameters", reason: `not a valid JSON Schema: ${(error as Error).message}` });
  }
  if (problems.length > 0 || !validate) return { problems };
  const check = validate;
  const asyncSpec = spec.async;
  const timeout = asyncSpec?.timeout ? parseDuration(asyncSpec.timeout) : { ms: DEFAULT_TIMEOUT_MS };
  const definition = {
    name,
    file,
    description: spec.description,
    whenToUse: spec.when_to_use,
    parameters: spec.parameters,
    async: asyncSpec && {
      timeoutMs: "ms" in timeout ? timeout.ms : DEFAULT_TIMEOUT_MS,
      cancel: asyncSpec.cancel,
      message: asyncSpec.message,
      template: asyncSpec.whatsapp_template,
      notifyText: asyncSpec.notify_text,
      rerunTimes: asyncSpec.rerun?.times ?? 0,
      deliverWithinMs: asyncSpec.deliver_within,
    },
    approval: spec.approval && {
      by: spec.approval,
      text: spec.approval_text,
      timeoutMs: spec.approval_timeout ?? DEFAULT_APPROVAL_TIMEOUT_MS,
    },
    request: spec.request,
    respond: spec.respond?.data ?? {},
  };
  return {
    tool: {
      ...definition,
      version: versionOf(definition),
      validateArguments: argumentChecker(check),
    },
  };
}

/** A compiled schema as a tool's `validateArguments`: each problem as the argument's path and what is wrong. */
export function argumentChecker(check: ValidateFunction): Tool["validateArguments"] {
  return (args) => {
    if (check(args)) return [];
    return (check.errors ?? []).map((error) => ({
      path:
        error.instancePath.replace(/^\//, "").replace(/\//g, ".") ||
        (error.params as { missingProperty?: string }).missingProperty ||
        "",
      message: error.message ?? "is invalid",
    }));
  };
}
