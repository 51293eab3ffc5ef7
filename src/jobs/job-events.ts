// The one Redis channel that carries every job's start and end to every hub process: widgets connected
// elsewhere hear of it (widget-namespace.ts), and requests waiting for the job's end wake (job-waiters.ts).
import type { WidgetJob } from "../channels/widget/events.js";

export const jobEventsChannel = (prefix: string) => `${prefix}:job-events`;

/** What is published: `origin` names the process that committed it (it has told its own sockets already). */
export interface JobEvent {
  origin: string;
  conversationId: string;
  job: WidgetJob;
}
