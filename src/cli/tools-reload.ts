// `hub tools reload`: asks the running hub to read its tool files again (POST /v1/tools/reload), which
// passes the request on to its other processes; prints what changed, or why the files were refused.
import type { Config } from "../config.js";
import { CliError } from "./cli-error.js";

const HUB_TIMEOUT_MS = 15_000;

interface ReloadAnswer {
  outcome: "applied" | "unchanged" | "refused";
  tools: string[];
  added: string[];
  removed: string[];
  changed: string[];
  problems: string[];
  processes: number | null;
}

function isReloadAnswer(body: unknown): body is ReloadAnswer {
  const value = body as Partial<Record<keyof ReloadAnswer, unknown>> | undefined;
  return typeof value?.outcome === "string" && Array.isArray(value.tools) && Array.isArray(value.problems);
}

export async function reloadTools(config: Config, print: (line: string) => void): Promise<number> {
  let res: Response;
  try {
    res = await fetch(`${config.hubUrl}/v1/tools/reload`, {
      method: "POST",
      headers: { Authorization: `Bearer ${config.secrets.hubApiKey}` },
      signal: AbortSignal.timeout(HUB_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as Error).cause as NodeJS.ErrnoException | undefined;
    throw new CliError(
      `no hub answered at ${config.hubUrl} (${cause?.code ?? (error as Error).message}): set HUB_URL to its address`,
    );
  }
  const body: unknown = await res.json().catch(() => undefined);
  if (res.status === 401)
    throw new CliError(`the hub at ${config.hubUrl} refused the API key: set HUB_API_KEY to the hub's key`);
  if (!res.ok || !isReloadAnswer(body))
    throw new CliError(`the hub at ${config.hubUrl} answered ${res.status} instead of a reload: check HUB_URL`);
  const others =
    body.processes === null
      ? "the other processes were not asked (Redis did not answer); each still reloads when it sees the files change"
      : `${body.processes} process(es) asked to reload`;
  if (body.outcome === "refused") {
    for (const problem of body.problems) print(problem);
    print(
      `tool files refused (${body.problems.length} problem(s)): the previous tools stay in force: ${list(body.tools)}`,
    );
    print(others);
    return 1;
  }
  const changes = [
    body.added.length ? `added ${list(body.added)}` : "",
    body.removed.length ? `removed ${list(body.removed)}` : "",
    body.changed.length ? `changed ${list(body.changed)}` : "",
  ].filter(Boolean);
  print(
    body.outcome === "applied"
      ? `tool files reloaded: ${changes.join("; ")}; in force: ${list(body.tools)}`
      : `tool files reloaded: nothing changed; in force: ${list(body.tools)}`,
  );
  print(others);
  return 0;
}

const list = (names: string[]) => (names.length ? names.join(", ") : "(none)");
