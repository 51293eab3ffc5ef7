// `hub data prune [--dry-run]`: what retention (RETAIN_*, WEBHOOK_RETENTION) would delete now, per kind,
// or deleting it now in as many batches as it takes. It reads the database itself — PostgreSQL beside
// running hubs (the statements are safe with their sweeps), the embedded database only while no hub holds
// its folder (that hub's own sweep prunes it) — with the retention this environment configures.
import type { Config } from "../config.js";
import { deleteExpiredWebhooks } from "../channels/meta/webhook-retention.js";
import { deleteExpiredErasedMessages } from "../conversations/erased.js";
import { openDataForCommand } from "./open-data.js";
import { pendingMigrations } from "../db/pending-migrations.js";
import { pruneAll } from "../retention/prune-pass.js";
import { previewPrune, type KindPreview, type PrunePreview } from "../retention/prune-preview.js";
import { CliError } from "./cli-error.js";

type Print = (line: string) => void;

export async function dataPrune(config: Config, options: { dryRun: boolean }, print: Print): Promise<number> {
  const database = await openDataForCommand(
    config,
    "its own sweep prunes the embedded database (once a minute); stop it to prune now",
  );
  try {
    const pending = await pendingMigrations(database.sql);
    if (pending.length > 0)
      throw new CliError(
        `the database lacks ${pending.length} migration(s) (${pending.join(", ")}): start the hub once, it applies them`,
      );
    const deps = { sql: database.sql, now: () => new Date(), config };
    const preview = await previewPrune(deps);
    if (options.dryRun) {
      print("would delete (dry run: nothing was deleted):");
      for (const line of lines(preview, "dry run")) print(line);
      return 0;
    }
    const counts = await pruneAll(deps);
    let webhooks = 0;
    for (let deleted = -1; deleted !== 0;) webhooks += deleted = await deleteExpiredWebhooks(deps);
    for (let deleted = -1; deleted !== 0;)
      deleted = await deleteExpiredErasedMessages(deps, config.meta.webhookRetentionMs);
    print("deleted:");
    for (const line of lines(
      {
        ...preview,
        jobData: { ...preview.jobData, count: counts.jobData },
        conversations: {
          ...preview.conversations,
          count: counts.conversations,
          events: counts.conversationEvents,
        },
        uploads: { ...preview.uploads, count: counts.uploads },
        events: { ...preview.events, count: counts.events },
        webhooks: { ...preview.webhooks, count: webhooks },
      },
      "done",
    ))
      print(line);
    return 0;
  } finally {
    await database.close();
  }
}

const day = (at: Date | null) => (at ? at.toISOString().slice(0, 10) : "");

function span(ms: number | null): string {
  if (ms === null) return "off";
  const units: [number, string][] = [
    [86_400_000, "d"],
    [3_600_000, "h"],
    [60_000, "m"],
    [1000, "s"],
  ];
  const [size, unit] = units.find(([each]) => ms % each === 0) ?? [1000, "s"];
  return `${Math.round(ms / size)}${unit}`;
}

/** One line per kind: how many, of what, between which dates, under which setting. */
function lines(preview: PrunePreview, mode: "dry run" | "done"): string[] {
  const row = (label: string, kind: KindPreview, unit: string, extra = "") => {
    const setting = `${kind.setting}=${span(kind.retentionMs)}`;
    if (kind.retentionMs === null) return `  ${label.padEnd(14)} kept (${setting})`;
    const dates = kind.count > 0 && kind.oldest ? `, ${day(kind.oldest)} to ${day(kind.newest)}` : "";
    return `  ${label.padEnd(14)} ${kind.count} ${unit}${extra}${dates} (${setting})`;
  };
  const { conversations, uploads } = preview;
  const withThem =
    mode === "dry run"
      ? ` with ${conversations.messages} message(s) and ${conversations.events} event(s)`
      : ` with ${conversations.events} event(s)`;
  return [
    row("job data", preview.jobData, "job(s) cleared"),
    row("conversations", conversations, "conversation(s)", conversations.count > 0 ? withThem : ""),
    row("uploads", uploads, "upload(s)", mode === "dry run" && uploads.count > 0 ? `, ${uploads.bytes} bytes` : ""),
    row("events", preview.events, "event(s)"),
    row("webhooks", preview.webhooks, "delivery(ies)"),
  ];
}
