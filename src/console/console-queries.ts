// What a support team reads: conversations with their held and waiting counts, and one conversation's
// full timeline with its jobs, progress and every delivery decision.
import type { HubContext } from "../context.js";
import { conversationView, getConversation, type ConversationView } from "../conversations/conversations.js";
import { messageView, type MessageView } from "../conversations/timeline.js";
import type { Prisma } from "../generated/prisma/client.js";
import { jobView, type JobView } from "../jobs/job-view.js";

export interface ConversationFilter {
  channel?: string | undefined;
  control?: "agent" | "human" | undefined;
  held?: boolean | undefined;
  waiting?: boolean | undefined;
  limit: number;
}

export interface ConversationSummary extends ConversationView {
  held: number;
  waiting: number;
  lastMessage: MessageView | null;
}

export async function listConversations(ctx: HubContext, filter: ConversationFilter): Promise<ConversationSummary[]> {
  const where: Prisma.ConversationWhereInput = {
    ...(filter.channel ? { channel: filter.channel } : {}),
    ...(filter.control ? { control: filter.control } : {}),
    AND: [
      ...(filter.held ? [{ messages: { some: { status: "held" } } }] : []),
      ...(filter.waiting ? [{ messages: { some: { status: "awaiting_reply" } } }] : []),
    ],
  };
  const conversations = await ctx.db.conversation.findMany({
    where,
    orderBy: { updatedAt: "desc" },
    take: filter.limit,
  });
  const ids = conversations.map((c) => c.id);
  const [held, waiting, last] = await Promise.all([
    ctx.db.message.groupBy({
      by: ["conversationId"],
      where: { conversationId: { in: ids }, status: "held" },
      _count: true,
    }),
    ctx.db.message.groupBy({
      by: ["conversationId"],
      where: { conversationId: { in: ids }, status: "awaiting_reply" },
      _count: true,
    }),
    ctx.db.message.findMany({
      where: { conversationId: { in: ids }, role: { in: ["user", "agent", "human"] } },
      orderBy: { seq: "desc" },
      distinct: ["conversationId"],
    }),
  ]);
  const count = (rows: { conversationId: string; _count: number }[], id: string) =>
    rows.find((row) => row.conversationId === id)?._count ?? 0;
  return conversations.map((conversation) => {
    const lastMessage = last.find((message) => message.conversationId === conversation.id);
    return {
      ...conversationView(conversation, ctx.now()),
      held: count(held, conversation.id),
      waiting: count(waiting, conversation.id),
      lastMessage: lastMessage ? messageView(lastMessage) : null,
    };
  });
}

export interface ConversationTimeline {
  conversation: ConversationView;
  messages: MessageView[];
  held: MessageView[];
  jobs: JobView[];
}

/** Needs only the database and the clock, so `hub conversation show` can read it without a running hub. */
export async function conversationTimeline(
  ctx: Pick<HubContext, "db" | "now">,
  conversationId: string,
): Promise<ConversationTimeline> {
  const conversation = await getConversation(ctx.db, conversationId);
  const [messages, jobs] = await Promise.all([
    ctx.db.message.findMany({ where: { conversationId: conversation.id }, orderBy: { seq: "asc" }, take: 1000 }),
    ctx.db.job.findMany({
      where: { conversationId: conversation.id },
      orderBy: { createdAt: "asc" },
      include: { progress: { orderBy: { seq: "asc" } } },
    }),
  ]);
  const views = messages.map(messageView);
  return {
    conversation: conversationView(conversation, ctx.now()),
    messages: views,
    held: views.filter((message) => message.status === "held"),
    jobs: jobs.map((job) => jobView(job, job.progress)),
  };
}
