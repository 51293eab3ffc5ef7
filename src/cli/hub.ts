// The `hub` command: `hub chat`, `hub chat show`, `hub tools check [dir]`, `hub tools reload`, `hub conversation show <id>`,
// `hub erase`, `hub data prune [--dry-run]`, `hub test [files…]`,
// `hub test record`, `hub telegram set-webhook`, `hub members …`, `hub teams …`, `hub help`.
import { parseArgs } from "node:util";
import { ConfigError, configuredToolsDir, loadConfig, toolEnvironment } from "../config.js";
import { formatProblem, loadTools } from "../tools/load-tools.js";
import { toolEnvHas } from "../tools/tool-env.js";
import { parseDuration } from "../tools/duration.js";
import { signedCallbackUrl } from "../jobs/callback-url.js";
import { chat, currentChat } from "./chat.js";
import { erase, parseContact, type EraseTarget } from "./erase.js";
import { renderTimeline } from "./conversation-show.js";
import { CliError } from "./cli-error.js";
import { readTimeline } from "./read-timeline.js";
import { terminalText } from "./terminal-text.js";
import { dataPrune } from "./data-prune.js";
import { reloadTools } from "./tools-reload.js";
import { hubTest } from "./hub-test.js";
import { hubTestRecord } from "./hub-test-record.js";
import { telegramSetWebhook } from "./telegram-set-webhook.js";
import { membersCommand, teamsCommand } from "./team-commands.js";

const usage = `usage:
  hub chat ["text"] [--new] [--conversation <id>] [--timeout 10m]
                                  talk to the running hub as the person, in a conversation of your own
                                  (kept in the data folder; --new starts another); prints the replies,
                                  progress and late results until the jobs end, --timeout, or Ctrl+C
  hub chat show [id]              the story of that conversation (default: your chat): tool calls, jobs,
                                  progress, results, replies, decisions and reasons; a running job's
                                  callback URL when this folder or CALLBACK_SECRET holds the hub's secret
  hub tools check [dir]           validate tool files (default: TOOLS_DIR or ./tools) and the MCP servers
                                  of its mcp/ folder (connects to each, lists its tools); exits 1 on any
                                  problem, on a missing folder and on a folder with no tool file or server
  hub tools reload                ask the running hub (HUB_URL, with HUB_API_KEY) to read its tool files
                                  again, in every process; exits 1 when a file has a problem (the
                                  previous tools stay in force) or no hub answers
  hub conversation show <id>      print a conversation's timeline, jobs and delivery decisions
                                  (asks the running hub at HUB_URL, default http://localhost:$PORT;
                                  with no hub running, reads the database itself); exits 1 on an unknown id
  hub erase --conversation <id> | --contact <channel>:<contact> [--reason "…"]
                                  erase the person's data (messages, jobs, uploads, devices, events,
                                  webhook deliveries) and keep a tombstone; --contact erases every
                                  conversation of that contact on that channel (e.g. whatsapp:56912345678)
  hub data prune [--dry-run]      delete now what is past its retention (RETAIN_*, WEBHOOK_RETENTION), in
                                  batches, and print what went per kind; --dry-run prints what would go
                                  (how many, oldest and newest) and deletes nothing
  hub test [files…] [--repeat N] [--json report.json]
                                  run conversation tests (default: tests/*.yml) against the current agent
                                  and tool files, on a database and Redis prefix of their own; no backend
                                  or channel is called; exits 1 when an expectation fails
  hub test record [--conversation <id>] --out <file> [--force] [--redact] [--name "…"]
                                  write a conversation (default: your chat) as a test file (--out - for
                                  stdout), never over a file without --force; says on stderr what it
                                  wrote and which fields hold the person's words or the tools' results;
                                  --redact replaces the e-mail addresses and phone numbers they wrote
  hub telegram set-webhook [--url https://…] [--drop-pending]
                                  point the Telegram bot's webhook at <url>/webhooks/telegram (default:
                                  PUBLIC_URL) with TELEGRAM_WEBHOOK_SECRET; --drop-pending drops the
                                  updates Telegram still holds; exits 1 when Telegram refuses
  hub members add <id> --name "Ana" [--role admin] [--capacity 5] [--team support …]
                                  add a support-team member; prints their own key, once
  hub members list                every member: role, availability, load/capacity, teams
  hub members key <id>            a new key for the member (printed once); the old one stops working
  hub members remove <id>         disable the member: their key stops working, their record stays
  hub teams set <id> --name "Support" [--routing round_robin|least_loaded] [--hours-file hours.json]
                [--away "text"] [--first-response 5m] [--next-response 10m] [--default] [--member ana …]
                                  create or replace a team (what is left out takes its default;
                                  without --member its members stay)
  hub teams list                  every team: routing, open or when it opens, members, queue
  hub help                        this text (also -h, --help)`;

async function run(args: string[]): Promise<number> {
  const [group, command, arg, ...rest] = args;
  if (args.length === 1 && (group === "help" || group === "-h" || group === "--help")) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (group === "tools" && command === "check" && rest.length === 0) return checkTools(arg ?? configuredToolsDir());
  if (group === "tools" && command === "reload" && arg === undefined)
    return reloadTools(loadConfig(), (line) => process.stdout.write(`${terminalText(line)}\n`));
  if (group === "chat" && command === "show" && rest.length === 0) return showChat(arg);
  if (group === "chat") return runChat(args.slice(1));
  if (group === "erase") return runErase(args.slice(1));
  if (group === "conversation" && command === "show" && arg && rest.length === 0) return showChat(arg);
  if (group === "data" && command === "prune") return pruneData(args.slice(2));
  if (group === "telegram" && command === "set-webhook") return runTelegramSetWebhook(args.slice(2));
  const print = (line: string) => process.stdout.write(`${terminalText(line)}\n`);
  const team = group === "members" ? membersCommand : group === "teams" ? teamsCommand : undefined;
  const teamExit = team ? await team(loadConfig(), args.slice(1), print) : undefined;
  if (teamExit !== undefined) return teamExit;
  if (group === "test" && command === "record")
    return hubTestRecord(
      args.slice(2),
      (text) => process.stdout.write(text),
      (line) => process.stderr.write(`${line}\n`),
    );
  if (group === "test")
    return hubTest(
      args.slice(1),
      (line) => process.stdout.write(`${line}\n`),
      (line) => process.stderr.write(`${line}\n`),
    );
  process.stderr.write(`${usage}\n`);
  return 2;
}

/**
 * What the hub would do with the folder, as the hub would see it (`$env` names from this environment): the
 * tool files, and each MCP server in tools/mcp/ connected to and its tools listed.
 */
async function checkTools(dir: string): Promise<number> {
  const env = toolEnvironment();
  const envHas = toolEnvHas(env);
  const { tools: fileTools, problems: fileProblems, folder } = await loadTools(dir, { envHas });
  // A check that found nothing to check has not shown that anything is fine.
  if (folder === "missing") return fail(`there is no tool folder at ${dir} (set TOOLS_DIR, or give the folder)`);
  if (folder === "unreadable") return fail(`the tool folder ${dir} ${fileProblems[0]?.reason ?? "cannot be read"}`);
  // The MCP SDK is loaded by this command only, not by every `hub` command.
  const { checkMcpServers } = await import("../mcp/check-mcp-servers.js");
  const mcp = await checkMcpServers(dir, fileTools, { envHas, env: (name) => env[name] });
  if (folder === "empty" && mcp.servers.length === 0 && mcp.problems.length === 0)
    return fail(`there is no tool file (*.yml or *.yaml) in ${dir}: nothing was checked`);
  const problems = [...fileProblems, ...mcp.problems];
  for (const problem of problems) process.stdout.write(`${terminalText(formatProblem(problem))}\n`);
  for (const server of mcp.servers)
    if (server.tools)
      process.stdout.write(
        `${server.spec.file}: ${server.kind}, ${server.tools.length} tool(s)${server.tools.length > 0 ? `: ${server.tools.map((tool) => tool.name).join(", ")}` : ""}\n`,
      );
  if (problems.length > 0) {
    process.stdout.write(`${problems.length} problem(s) in ${dir}\n`);
    return 1;
  }
  const named = [
    ...fileTools.keys(),
    ...mcp.servers.map((server) => `${server.tools?.length ?? 0} from MCP server ${server.spec.name}`),
  ];
  process.stdout.write(`${mcp.tools.size} tool(s) OK in ${dir}: ${named.join(", ")}\n`);
  return 0;
}

async function showChat(id: string | undefined): Promise<number> {
  const config = loadConfig();
  const conversationId = id ?? currentChat(config);
  if (!conversationId) return fail('no chat yet: start one with hub chat "hello", or give a conversation id');
  const { timeline, publicUrl } = await readTimeline(config, conversationId);
  if (!timeline) return fail(`no conversation ${conversationId}`);
  // A hand-made callback needs the job's signed URL: only for whoever holds the hub's secret (never logged).
  const knowsSecret = !config.generatedSecrets.includes("callbackSecret");
  process.stdout.write(
    renderTimeline(timeline, {
      callbackUrl: knowsSecret
        ? (job) =>
            signedCallbackUrl(config.secrets.callbackSecret, publicUrl, {
              id: job.id,
              tool: job.tool,
              timeoutAt: new Date(job.timeoutAt),
            })
        : undefined,
    }),
  );
  return 0;
}

async function runChat(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        new: { type: "boolean", default: false },
        conversation: { type: "string" },
        timeout: { type: "string" },
      },
    });
  } catch (error) {
    process.stderr.write(`hub: ${(error as Error).message}\n${usage}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (positionals.length > 1) return fail('give the text as one argument, in quotes: hub chat "hello there"');
  if (values.new && values.conversation) return fail("--new and --conversation cannot go together");
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    const duration = parseDuration(values.timeout);
    if ("error" in duration) return fail(`--timeout: ${duration.error}`);
    timeoutMs = duration.ms;
  }
  const text = positionals[0]?.trim();
  if (positionals.length === 1 && !text) return fail("the text is empty");
  return chat(loadConfig(), { text, conversation: values.conversation, fresh: values.new, timeoutMs }, (line) =>
    process.stdout.write(`${line}\n`),
  );
}

async function runErase(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: { conversation: { type: "string" }, contact: { type: "string" }, reason: { type: "string" } },
    }));
  } catch (error) {
    process.stderr.write(`hub: ${(error as Error).message}\n${usage}\n`);
    return 2;
  }
  if (values.conversation === undefined && values.contact === undefined)
    return fail("hub erase needs --conversation <id> or --contact <channel>:<contact>");
  if (values.conversation !== undefined && values.contact !== undefined)
    return fail("--conversation and --contact cannot go together");
  const reason = values.reason?.trim();
  if (values.reason !== undefined && (!reason || reason.length > 500))
    return fail("--reason takes a sentence of 1 to 500 characters");
  let target: EraseTarget;
  if (values.contact !== undefined) {
    const contact = parseContact(values.contact);
    if ("error" in contact) return fail(contact.error);
    target = contact;
  } else target = { conversation: values.conversation! };
  return erase(loadConfig(), target, reason, (line) => process.stdout.write(`${line}\n`));
}

async function pruneData(args: string[]): Promise<number> {
  let dryRun: boolean;
  try {
    const { values } = parseArgs({ args, options: { "dry-run": { type: "boolean", default: false } } });
    dryRun = values["dry-run"];
  } catch (error) {
    process.stderr.write(`hub: ${(error as Error).message}\n${usage}\n`);
    return 2;
  }
  return dataPrune(loadConfig(), { dryRun }, (line) => process.stdout.write(`${line}\n`));
}

async function runTelegramSetWebhook(args: string[]): Promise<number> {
  let options: { url: string | undefined; dropPending: boolean };
  try {
    const { values } = parseArgs({
      args,
      options: { url: { type: "string" }, "drop-pending": { type: "boolean", default: false } },
    });
    options = { url: values.url, dropPending: values["drop-pending"] };
  } catch (error) {
    process.stderr.write(`hub: ${(error as Error).message}\n${usage}\n`);
    return 2;
  }
  return telegramSetWebhook(loadConfig(), options, (line) => process.stdout.write(`${line}\n`));
}

function fail(sentence: string): number {
  // A sentence can quote what a hub (or whatever answers at HUB_URL) said.
  process.stderr.write(`hub: ${terminalText(sentence)}\n`);
  return 1;
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof CliError || error instanceof ConfigError)) throw error;
  process.exitCode = fail(error.message);
}
