// The `hub` command: `hub tools check [dir]`, `hub conversation show <id>`.
import { ConfigError, loadConfig } from "../config.js";
import { formatProblem, loadTools } from "../tools/load-tools.js";
import { renderTimeline } from "./conversation-show.js";
import { CliError, readTimeline } from "./read-timeline.js";

const usage = `usage:
  hub tools check [dir]           validate tool files (default: TOOLS_DIR or ./tools)
  hub conversation show <id>      print a conversation's timeline, jobs and delivery decisions
                                  (asks the running hub at HUB_URL, default http://localhost:$PORT;
                                  with no hub running, reads the database itself)`;

async function run(args: string[]): Promise<number> {
  const [group, command, arg] = args;
  if (group === "tools" && command === "check") {
    const dir = arg ?? loadConfig().toolsDir;
    const { tools, problems } = await loadTools(dir);
    for (const problem of problems) process.stdout.write(`${formatProblem(problem)}\n`);
    if (problems.length > 0) {
      process.stdout.write(`${problems.length} problem(s) in ${dir}\n`);
      return 1;
    }
    process.stdout.write(`${tools.size} tool(s) OK in ${dir}: ${[...tools.keys()].join(", ") || "(none)"}\n`);
    return 0;
  }
  if (group === "conversation" && command === "show" && arg) {
    const timeline = await readTimeline(loadConfig(), arg);
    if (!timeline) return fail(`no conversation ${arg}`);
    process.stdout.write(renderTimeline(timeline));
    return 0;
  }
  process.stderr.write(`${usage}\n`);
  return 2;
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
