// Where a job stands: running until its result, its failure, its timeout or its cancellation ends it.
export type JobStatus = "running" | "succeeded" | "failed" | "timed_out" | "cancelled";
