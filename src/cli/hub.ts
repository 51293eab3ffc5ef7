// The `hub` command: `hub tools check [dir]`, `hub conversation show <id>`.
import { loadConfig } from "../config.js";
import { openDatabase } from "../db/client.js";
import { formatProblem, loadTools } from "../tools/load-tools.js";
import { showConversation } from "./conversation-show.js";

const usage = `usage:
  hub tools check [dir]           validate tool files (default: TOOLS_DIR or ./tools)
  hub conversation show <id>      print a conversation's timeline, jobs and delivery decisions`;

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
    const config = loadConfig();
    const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, migrate: false });
    try {
      const text = await showConversation(database.db, arg);
      process.stdout.write(text);
      return text ? 0 : 1;
    } finally {
      await database.close();
    }
  }
  process.stderr.write(`${usage}\n`);
  return 2;
}

process.exitCode = await run(process.argv.slice(2));
