// `hub conversation show`: the conversation's timeline with each tool call's job, progress, result and
// every delivery decision, as plain text.
import type { Db } from "../db/client.js";
import { isUuid } from "../conversations/conversations.js";

export async function showConversation(db: Db, id: string): Promise<string> {
  const conversation = isUuid(id) ? await db.conversation.findUnique({ where: { id } }) : null;
  if (!conversation) return "";
  const [messages, jobs, items] = await Promise.all([
    db.message.findMany({ where: { conversationId: id }, orderBy: { seq: "asc" } }),
    db.job.findMany({ where: { conversationId: id }, include: { progress: { orderBy: { seq: "asc" } } } }),
    db.outboxItem.findMany({ where: { conversationId: id }, orderBy: { seq: "asc" } }),
  ]);
  const jobsById = new Map(jobs.map((job) => [job.id, job]));
  const itemsByMessage = new Map(items.filter((item) => item.messageId).map((item) => [item.messageId, item]));
  const out = [
    `conversation ${conversation.id}  channel=${conversation.channel} contact=${conversation.contact} control=${conversation.control}`,
  ];
  for (const message of messages) {
    const at = message.createdAt.toISOString();
    const decided = message.decision && message.decision !== message.status ? ` (decided: ${message.decision})` : "";
    const status = message.status
      ? `  [${message.status}${decided}${message.statusReason ? `: ${message.statusReason}` : ""}]`
      : "";
    out.push(`${at}  ${message.role.padEnd(11)} ${message.text ?? summary(message.data)}${status}`);
    const job = message.role === "tool_call" && message.jobId ? jobsById.get(message.jobId) : undefined;
    if (job) {
      out.push(
        `    job ${job.id} ${job.tool} status=${job.status} timeout=${job.timeoutAt.toISOString()} cancel=${job.cancelRequest}`,
      );
      for (const progress of job.progress)
        out.push(`    progress${progress.notify ? " (notify)" : ""}: ${progress.text}`);
    }
    const item = itemsByMessage.get(message.id);
    if (item)
      out.push(
        `    delivery: ${item.kind} state=${item.state}${item.decision ? ` decision=${item.decision}` : ""}${item.reason ? ` (${item.reason})` : ""}`,
      );
  }
  return `${out.join("\n")}\n`;
}

function summary(data: unknown): string {
  return data === null || data === undefined ? "" : JSON.stringify(data).slice(0, 160);
}
