// @chat-delivery-hub/tool-backend: what a tool backend needs to take the hub's jobs and post their results.
export { acceptJob, cancelJob } from "./src/express.js";
export { Job, JobError, jobFrom, run } from "./src/job.js";
export { postCallback, PROGRESS_RETRY, RESULT_RETRY } from "./src/post-callback.js";
