// Where `hub conversation show` gets a conversation's timeline: from the running hub over its API, and
// only when no hub answers, from the database itself. The embedded database's folder belongs to the hub
// that runs on it, so reading it directly takes the folder's lock first (and is refused while a hub holds
// it); PostgreSQL is read directly as it is.
import type { Config } from "../config.js";
import { conversationTimeline, type ConversationTimeline } from "../console/console-queries.js";
import { CliError } from "./cli-error.js";
import { openDataForCommand } from "./open-data.js";
import { HubError } from "../errors.js";

/** How long a hub has to answer before the command treats it as not running. */
const HUB_TIMEOUT_MS = 15_000;

export interface TimelineRead {
  /** Undefined when there is no such conversation. */
  timeline: ConversationTimeline | undefined;
  /** The public URL of the hub that answered (its callbacks live there), else this environment's PUBLIC_URL. */
  publicUrl: string;
}

export async function readTimeline(config: Config, id: string): Promise<TimelineRead> {
  const answer = await askHub(config, id);
  if (answer.kind === "answered") return { timeline: answer.timeline, publicUrl: answer.publicUrl ?? config.publicUrl };
  return { timeline: await readDirectly(config, id, answer.reason), publicUrl: config.publicUrl };
}

type HubAnswer =
  | { kind: "answered"; timeline: ConversationTimeline | undefined; publicUrl: string | undefined }
  | { kind: "no hub"; reason: string };

/** The hub's own public URL, as its timeline answer names it (an http(s) URL, nothing else). */
function publicUrlOf(res: Response): string | undefined {
  const given = res.headers.get("X-Hub-Public-Url") ?? "";
  return /^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(given) ? given.replace(/\/+$/, "") : undefined;
}

async function askHub(config: Config, id: string): Promise<HubAnswer> {
  const url = `${config.hubUrl}/v1/conversations/${encodeURIComponent(id)}/timeline`;
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { Authorization: `Bearer ${config.secrets.hubApiKey}` },
      signal: AbortSignal.timeout(HUB_TIMEOUT_MS),
    });
  } catch (error) {
    return { kind: "no hub", reason: networkReason(error) };
  }
  const body: unknown = await res.json().catch(() => undefined);
  if (res.ok && isTimeline(body)) return { kind: "answered", timeline: body, publicUrl: publicUrlOf(res) };
  const error = errorOf(body);
  if (res.status === 404 && error?.code === "not_found" && error.message === "conversation not found")
    return { kind: "answered", timeline: undefined, publicUrl: undefined };
  if (res.status === 401)
    throw new CliError(`the hub at ${config.hubUrl} refused the API key: set HUB_API_KEY to the hub's key`);
  throw new CliError(
    `the hub at ${config.hubUrl} answered ${res.status}${error ? ` (${error.message})` : ""} instead of a timeline: check HUB_URL`,
  );
}

async function readDirectly(config: Config, id: string, noHub: string): Promise<ConversationTimeline | undefined> {
  const database = await openDataForCommand(
    config,
    `it did not answer at ${config.hubUrl} (${noHub}): set HUB_URL to its address, or stop it first`,
    `no hub answered at ${config.hubUrl} (${noHub}) and there is no database in ${config.dataDir}`,
  );
  try {
    return await conversationTimeline({ sql: database.sql, now: () => new Date() }, id);
  } catch (error) {
    if (error instanceof HubError && error.status === 404) return undefined;
    throw error;
  } finally {
    await database.close();
  }
}

function networkReason(error: unknown): string {
  if (error instanceof Error && error.name === "TimeoutError") return `no answer in ${HUB_TIMEOUT_MS / 1000} s`;
  const cause = error instanceof Error ? (error.cause as NodeJS.ErrnoException | undefined) : undefined;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

function errorOf(body: unknown): { code: string; message: string } | undefined {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  return typeof error?.code === "string" && typeof error.message === "string"
    ? { code: error.code, message: error.message }
    : undefined;
}

/** The hub's own route produces this shape; checking its outline is enough to tell it from anything else. */
function isTimeline(body: unknown): body is ConversationTimeline {
  const value = body as Partial<Record<keyof ConversationTimeline, unknown>> | undefined;
  return (
    typeof (value?.conversation as { id?: unknown } | undefined)?.id === "string" &&
    Array.isArray(value?.messages) &&
    Array.isArray(value?.held) &&
    Array.isArray(value?.jobs)
  );
}
