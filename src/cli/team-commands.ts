// `hub members …` and `hub teams …`: the support team from the terminal. They write to the database themselves
// (PostgreSQL beside the running hubs; the embedded database only while no hub holds its folder — otherwise the
// hub's API does it), through the same stores and validation as /v1/members and /v1/teams. A member's key is
// printed once, when made or rotated, and cannot be read back.
import { readFileSync } from "node:fs";
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { z } from "zod";
import type { Config } from "../config.js";
import { HubError } from "../errors.js";
import { parseSpan } from "../tools/duration.js";
import {
  createMember,
  createMemberBody,
  disableMember,
  listMembers,
  rotateMemberKey,
  type MemberStoreDeps,
  type MemberView,
} from "../team/members.js";
import { listTeams, putTeam, putTeamBody, type TeamView } from "../team/teams.js";
import { CliError } from "./cli-error.js";
import { openDataForCommand } from "./open-data.js";

type Print = (line: string) => void;

/** Which option gave each field, for the sentence that refuses it. */
const OPTION_OF: Record<string, string> = {
  id: "the id",
  teams: "--team",
  awayMessage: "--away",
  firstResponseSeconds: "--first-response",
  nextResponseSeconds: "--next-response",
  isDefault: "--default",
  members: "--member",
  hours: "--hours-file",
};

function parsed<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const [field = "id", ...rest] = issue.path.map(String);
    const option = OPTION_OF[field] ?? `--${field}`;
    return `${option}${rest.length > 0 ? ` (${rest.join(".")})` : ""}: ${issue.message}`;
  });
  throw new CliError(problems.join("; "));
}

/** parseArgs, its refusals as the command's sentence. */
function options<const T extends ParseArgsConfig>(config: T) {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}

/** Opens the database, runs `work` with the stores' dependencies, and turns a store's refusal into a sentence. */
async function withStore(config: Config, work: (deps: MemberStoreDeps) => Promise<number>): Promise<number> {
  const database = await openDataForCommand(
    config,
    "use that hub's API (/v1/members, /v1/teams with CONSOLE_API_KEY), or stop it first",
  );
  try {
    return await work({ sql: database.sql, now: () => new Date(), offlineAfterMs: config.team.memberOfflineAfterMs });
  } catch (error) {
    if (!(error instanceof HubError)) throw error;
    const details = error.details?.map((detail) => `${OPTION_OF[detail.field] ?? detail.field}: ${detail.message}`);
    throw new CliError(details?.length ? details.join("; ") : error.message);
  } finally {
    await database.close();
  }
}

const memberLine = (member: MemberView) =>
  [
    member.id,
    member.name,
    member.role,
    member.disabled ? "disabled" : member.availability,
    `${member.assigned}/${member.capacity}`,
    member.teams.length > 0 ? `teams: ${member.teams.join(", ")}` : "no team",
  ].join("  ");

const teamLine = (team: TeamView) =>
  [
    team.id,
    team.name,
    team.routing,
    team.open ? "open" : `closed${team.opensAt ? ` until ${team.opensAt}` : ""}`,
    ...(team.isDefault ? ["default"] : []),
    team.members.length > 0 ? `members: ${team.members.join(", ")}` : "no member",
    `queued ${team.queued}`,
  ].join("  ");

/** One line per row, or what to do when there is none. */
function printList<T>(
  config: Config,
  print: Print,
  list: (deps: MemberStoreDeps) => Promise<T[]>,
  line: (row: T) => string,
  none: string,
): Promise<number> {
  return withStore(config, async (deps) => {
    const rows = await list(deps);
    for (const row of rows) print(line(row));
    if (rows.length === 0) print(none);
    return 0;
  });
}

/** `hub members add|list|key|remove`; undefined for a command it does not know (the caller prints the usage). */
export async function membersCommand(config: Config, args: string[], print: Print): Promise<number | undefined> {
  const [command, ...rest] = args;
  if (command === "list" && rest.length === 0)
    return printList(config, print, listMembers, memberLine, "no member yet: hub members add <id> --name …");
  if (command === "add") {
    const { values, positionals } = options({
      args: rest,
      allowPositionals: true,
      options: {
        name: { type: "string" },
        role: { type: "string" },
        capacity: { type: "string" },
        team: { type: "string", multiple: true },
      },
    });
    if (positionals.length !== 1) throw new CliError("hub members add takes one id: hub members add ana --name Ana");
    const input = parsed(createMemberBody, {
      id: positionals[0],
      name: values.name,
      role: values.role,
      capacity: values.capacity === undefined ? undefined : Number(values.capacity),
      teams: values.team,
    });
    return withStore(config, async (deps) => {
      const { member, key } = await createMember(deps, input);
      print(`added ${memberLine(member)}`);
      print(`key: ${key}`);
      print(`(shown this once: give it to ${member.name}; only its hash is kept)`);
      return 0;
    });
  }
  if ((command === "key" || command === "remove") && rest.length === 1) {
    const id = rest[0]!;
    return withStore(config, async (deps) => {
      if (command === "remove") {
        const member = await disableMember(deps, id);
        print(`disabled ${member.id}: their key no longer works (within seconds); their record stays`);
        return 0;
      }
      const { member, key } = await rotateMemberKey(deps, id);
      print(`new key for ${member.id}: ${key}`);
      print("(shown this once; the old key stops working within seconds)");
      return 0;
    });
  }
  return undefined;
}

function seconds(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const span = parseSpan(text);
  if ("error" in span) throw new CliError(`${option}: ${span.error}`);
  return Math.round(span.ms / 1000);
}

function hoursFrom(file: string | undefined): unknown {
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new CliError(`--hours-file: ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CliError(`--hours-file: ${file} is not JSON`);
  }
}

/** `hub teams set|list`; undefined for a command it does not know. */
export async function teamsCommand(config: Config, args: string[], print: Print): Promise<number | undefined> {
  const [command, ...rest] = args;
  if (command === "list" && rest.length === 0)
    return printList(config, print, listTeams, teamLine, "no team yet: hub teams set <id> --name …");
  if (command !== "set") return undefined;
  const { values, positionals } = options({
    args: rest,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      routing: { type: "string" },
      "hours-file": { type: "string" },
      away: { type: "string" },
      "first-response": { type: "string" },
      "next-response": { type: "string" },
      default: { type: "boolean", default: false },
      member: { type: "string", multiple: true },
    },
  });
  if (positionals.length !== 1) throw new CliError("hub teams set takes one id: hub teams set support --name Support");
  const id = parsed(createMemberBody.shape.id, positionals[0]);
  const input = parsed(putTeamBody, {
    name: values.name,
    routing: values.routing,
    hours: hoursFrom(values["hours-file"]),
    awayMessage: values.away,
    firstResponseSeconds: seconds("--first-response", values["first-response"]),
    nextResponseSeconds: seconds("--next-response", values["next-response"]),
    isDefault: values.default,
    members: values.member,
  });
  return withStore(config, async (deps) => {
    const { team, created } = await putTeam(deps, id, input);
    print(`${created ? "created" : "replaced"} ${teamLine(team)}`);
    return 0;
  });
}
