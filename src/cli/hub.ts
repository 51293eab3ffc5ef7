// The `hub` command: `hub tools check [dir]`, `hub conversation show <id>`, `hub help`.
import { ConfigError, configuredToolsDir, loadConfig, toolEnvironment } from "../config.js";
import { formatProblem, loadTools } from "../tools/load-tools.js";
import { toolEnvHas } from "../tools/tool-env.js";
import { renderTimeline } from "./conversation-show.js";
import { CliError, readTimeline } from "./read-timeline.js";

const usage = `usage:
  hub tools check [dir]           validate tool files (default: TOOLS_DIR or ./tools); exits 1 on any
                                  problem, on a missing folder and on a folder with no tool file
  hub conversation show <id>      print a conversation's timeline, jobs and delivery decisions
                                  (asks the running hub at HUB_URL, default http://localhost:$PORT;
                                  with no hub running, reads the database itself); exits 1 on an unknown id
  hub help                        this text (also -h, --help)`;

async function run(args: string[]): Promise<number> {
  const [group, command, arg, ...rest] = args;
  if (args.length === 1 && (group === "help" || group === "-h" || group === "--help")) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (group === "tools" && command === "check" && rest.length === 0) return checkTools(arg ?? configuredToolsDir());
  if (group === "conversation" && command === "show" && arg && rest.length === 0) {
    const timeline = await readTimeline(loadConfig(), arg);
    if (!timeline) return fail(`no conversation ${arg}`);
    process.stdout.write(renderTimeline(timeline));
    return 0;
  }
  process.stderr.write(`${usage}\n`);
  return 2;
}

/** What the hub would do with the folder, as the hub would see it (`$env` names from this environment). */
async function checkTools(dir: string): Promise<number> {
  const { tools, problems, folder } = await loadTools(dir, { envHas: toolEnvHas(toolEnvironment()) });
  // A check that found nothing to check has not shown that anything is fine.
  if (folder === "missing") return fail(`there is no tool folder at ${dir} (set TOOLS_DIR, or give the folder)`);
  if (folder === "empty") return fail(`there is no tool file (*.yml or *.yaml) in ${dir}: nothing was checked`);
  if (folder === "unreadable") return fail(`the tool folder ${dir} ${problems[0]?.reason ?? "cannot be read"}`);
  for (const problem of problems) process.stdout.write(`${formatProblem(problem)}\n`);
  if (problems.length > 0) {
    process.stdout.write(`${problems.length} problem(s) in ${dir}\n`);
    return 1;
  }
  process.stdout.write(`${tools.size} tool(s) OK in ${dir}: ${[...tools.keys()].join(", ")}\n`);
  return 0;
}

function fail(sentence: string): number {
  process.stderr.write(`hub: ${sentence}\n`);
  return 1;
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof CliError || error instanceof ConfigError)) throw error;
  process.exitCode = fail(error.message);
}
