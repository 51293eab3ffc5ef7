// Job timeouts. A job whose `timeoutAt` has passed is ended by whichever worker process looks first: the
// database is the record (indexed on status and timeoutAt), so there is nothing to re-arm after a restart
// or a Redis that lost everything, and nothing to disarm when a result comes. Due jobs are found by the
// database's own clock; ending one is guarded, so processes looking at once end it once.
import type { JobDeps } from "./job-deps.js";
import { errorKey } from "../log-throttle.js";
import { endDueApprovals } from "./approval.js";
import { endJob } from "./end-job.js";
import { startOwedReruns } from "./rerun.js";

const BATCH = 100;

/** Ends every running job whose timeout has passed; returns how many. */
export async function endDueJobs(ctx: JobDeps): Promise<number> {
  const due = await ctx.sql.query<{ id: string }>(
    `SELECT id FROM "Job" WHERE status = 'running' AND "timeoutAt" <= (now() AT TIME ZONE 'UTC')
     ORDER BY "timeoutAt" LIMIT $1`,
    [BATCH],
  );
  for (const { id } of due) await endJob(ctx, id, "timeout");
  return due.length;
}

export function startTimeoutPoll(ctx: JobDeps): { stop(): Promise<void> } {
  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    // Approvals ride the same poll: answers a crash left undecided, start calls it left owed, time run out.
    running = Promise.all([endDueJobs(ctx), endDueApprovals(ctx), startOwedReruns(ctx)])
      .catch((error: unknown) =>
        ctx.warnRepeated(`timeouts:${errorKey(error)}`, { err: error }, "job timeouts not checked"),
      )
      .finally(() => (running = undefined));
  }, ctx.config.timeoutPollMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
