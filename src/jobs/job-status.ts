// Where a job stands: waiting for its approval (a tool file's `approval`), then running until its result, its
// failure, its timeout or its cancellation ends it; or refused, its backend never called.
export type JobStatus =
  "awaiting_approval" | "running" | "succeeded" | "failed" | "timed_out" | "cancelled" | "refused";
