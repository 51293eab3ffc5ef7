// A turn: everything owed to one conversation, handled in order under its lease. Direct messages (from the
// agent runtime or a human) are routed as they are; inputs (the person's messages, results, failures,
// notify-progress, hand-backs) go to the agent together, and its reply is routed. Held while a human has
// control. Every step re-reads the database, so a turn retried after a crash picks up where it stopped.
import { randomUUID } from "node:crypto";
import type { TurnInput, TurnRequest } from "../agent/agent-port.js";
import type { HubContext } from "../context.js";
import type { Conversation, Message, OutboxItem } from "../generated/prisma/client.js";
import { deliverMessage } from "./deliver.js";

class TurnSupersededError extends Error {
  constructor() {
    super("the inputs were answered by another turn");
  }
}

const DIRECT_KINDS = new Set(["agent_message", "human_message"]);
const HISTORY_SIZE = 30;

/** Messages written for the person but not yet routed (a turn that crashed after writing them). */
async function deliverPending(ctx: HubContext, conversationId: string): Promise<void> {
  const pending = await ctx.db.message.findMany({
    where: { conversationId, role: { in: ["agent", "human"] }, status: "pending" },
    orderBy: { seq: "asc" },
  });
  for (const message of pending) {
    const delivered = await deliverMessage(ctx, message);
    if (message.turnId) {
      // A turn's reply sent late (its send was deferred, or its turn died after the commit): record it
      // on the inputs it answers, as the turn would have.
      const answered = await ctx.db.outboxItem.findMany({ where: { replyMessageId: message.id } });
      if (answered.length) await recordAnswer(ctx, answered, delivered);
    } else {
      // A direct message is its own item's answer.
      await ctx.db.outboxItem.updateMany({
        where: { messageId: message.id },
        data: { state: "done", decision: delivered.decision, reason: delivered.statusReason },
      });
    }
  }
}

export async function runTurn(ctx: HubContext, conversationId: string): Promise<void> {
  await deliverPending(ctx, conversationId);
  const items = await ctx.db.outboxItem.findMany({
    where: { conversationId, state: "pending" },
    orderBy: { seq: "asc" },
  });
  if (items.length === 0) return;

  const direct = items.filter((item) => DIRECT_KINDS.has(item.kind));
  if (direct.length > 0) {
    // Their messages were routed before this turn died (deliverPending answers the rest): close them.
    await ctx.db.outboxItem.updateMany({
      where: { id: { in: direct.map((item) => item.id) } },
      data: { state: "done" },
    });
  }
  const inputs = await withoutStaleProgress(
    ctx,
    items.filter((item) => !DIRECT_KINDS.has(item.kind)),
  );
  if (inputs.length === 0) return;

  if (await holdInputsIfHuman(ctx, conversationId, inputs)) return;
  const conversation = await ctx.db.conversation.findUniqueOrThrow({ where: { id: conversationId } });
  // The inputs stay pending until the reply is committed: a turn that dies here is simply run again.
  const turnId = randomUUID();
  const request = await buildTurnRequest(ctx, conversation, inputs);
  ctx.realtime.typing(conversationId, true);
  let reply;
  try {
    reply = await ctx.agent.runTurn(request);
  } finally {
    ctx.realtime.typing(conversationId, false);
  }

  // Commit the reply and the inputs it answers together; then route.
  const outputs = await ctx.db.$transaction(async (tx) => {
    const written = [];
    for (const { text } of reply.messages) {
      written.push(
        await tx.message.create({
          data: {
            id: randomUUID(),
            conversationId,
            role: "agent",
            text,
            status: "pending",
            turnId,
            jobId: singleJob(inputs),
          },
        }),
      );
    }
    const { count } = await tx.outboxItem.updateMany({
      where: { id: { in: inputs.map((item) => item.id) }, state: "pending" },
      data: {
        state: "done",
        turnId,
        replyMessageId: written[0]?.id ?? null,
        ...(written.length ? {} : { decision: "no_reply" }),
      },
    });
    // Another turn answered them meanwhile (this one lost its lease): its reply stands, this one rolls back.
    if (count !== inputs.length) throw new TurnSupersededError();
    return written;
  });
  const delivered = [];
  for (const output of outputs) delivered.push(await deliverMessage(ctx, output));
  if (delivered[0]) await recordAnswer(ctx, inputs, delivered[0]);
}

/** Records on the inputs (and their timeline entries) what happened to the reply that answered them. */
async function recordAnswer(ctx: HubContext, inputs: OutboxItem[], reply: Message): Promise<void> {
  await ctx.db.outboxItem.updateMany({
    where: { id: { in: inputs.map((item) => item.id) } },
    data: { decision: reply.decision, reason: reply.statusReason },
  });
  const inputMessages = inputs.map((item) => item.messageId).filter((id): id is string => id !== null);
  if (inputMessages.length === 0) return;
  await ctx.db.message.updateMany({
    where: { id: { in: inputMessages }, status: { in: ["pending", "held", "awaiting_reply"] } },
    data: { status: reply.status, decision: reply.decision, statusReason: `answered by ${reply.id}` },
  });
}

/**
 * Progress of a job that has since ended (it waited during a takeover or a closed window) says nothing
 * the result does not: it is dropped, recorded as superseded.
 */
async function withoutStaleProgress(ctx: HubContext, inputs: OutboxItem[]): Promise<OutboxItem[]> {
  const progressJobs = inputs.filter((item) => item.kind === "progress" && item.jobId).map((item) => item.jobId!);
  if (progressJobs.length === 0) return inputs;
  const ended = new Set(
    (
      await ctx.db.job.findMany({
        where: { id: { in: progressJobs }, status: { not: "running" } },
        select: { id: true },
      })
    ).map((job) => job.id),
  );
  const stale = inputs.filter((item) => item.kind === "progress" && item.jobId && ended.has(item.jobId));
  if (stale.length === 0) return inputs;
  await ctx.db.outboxItem.updateMany({
    where: { id: { in: stale.map((item) => item.id) } },
    data: { state: "done", decision: "superseded", reason: "job_ended" },
  });
  await ctx.db.message.updateMany({
    where: { id: { in: stale.map((item) => item.messageId).filter((id): id is string => id !== null) } },
    data: { status: "superseded", statusReason: "the job ended before this progress was given" },
  });
  return inputs.filter((item) => !stale.includes(item));
}

/** One job's result or progress: the reply carries its job id (the widget shows it with the job). */
function singleJob(inputs: OutboxItem[]): string | null {
  const jobs = new Set(inputs.map((item) => item.jobId).filter(Boolean));
  return jobs.size === 1 ? [...jobs][0]! : null;
}

/**
 * Holds the inputs while a human has the conversation. Decided under the conversation's row lock, which
 * a hand-back also takes, so an input is never held after the hand-back that should have released it.
 */
async function holdInputsIfHuman(ctx: HubContext, conversationId: string, inputs: OutboxItem[]): Promise<boolean> {
  const messageIds = inputs.map((item) => item.messageId).filter((id): id is string => id !== null);
  const held = await ctx.db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM "Conversation" WHERE id = ${conversationId}::uuid FOR UPDATE`;
    const { control } = await tx.conversation.findUniqueOrThrow({
      where: { id: conversationId },
      select: { control: true },
    });
    if (control !== "human") return false;
    await tx.outboxItem.updateMany({
      where: { id: { in: inputs.map((item) => item.id) } },
      data: { state: "held", decision: "held", reason: "human_control" },
    });
    await tx.message.updateMany({
      where: { id: { in: messageIds }, status: "pending" },
      data: { status: "held", decision: "held", statusReason: "human_control" },
    });
    return true;
  });
  if (!held) return false;
  ctx.log.info({ conversation_id: conversationId, items: inputs.length }, "held for the human agent");
  for (const message of await ctx.db.message.findMany({ where: { id: { in: messageIds } } }))
    ctx.realtime.consoleMessage(message);
  return true;
}

function toInput(item: OutboxItem): TurnInput {
  const payload = item.payload as Record<string, unknown>;
  const job = {
    job: String(payload.jobId ?? item.jobId),
    tool: String(payload.tool ?? ""),
    toolCallId: (payload.toolCallId as string | null) ?? null,
  };
  switch (item.kind) {
    case "user_message":
      return { type: "user_message", messageId: item.messageId ?? "", text: String(payload.text ?? "") };
    case "tool_result":
      return { type: "tool_result", ...job, result: payload.result };
    case "tool_failed":
      return {
        type: "tool_failed",
        ...job,
        reason: payload.reason as "error" | "timeout" | "cancelled",
        message: String(payload.message ?? ""),
      };
    case "progress":
      return { type: "progress", ...job, text: String(payload.progress ?? "") };
    default:
      return { type: "handback" };
  }
}

async function buildTurnRequest(
  ctx: HubContext,
  conversation: Conversation,
  inputs: OutboxItem[],
): Promise<TurnRequest> {
  const [running, history] = await Promise.all([
    ctx.db.job.findMany({
      where: { conversationId: conversation.id, status: "running" },
      include: { progress: { orderBy: { seq: "desc" }, take: 1 } },
      orderBy: { createdAt: "asc" },
    }),
    ctx.db.message.findMany({
      where: { conversationId: conversation.id },
      orderBy: { seq: "desc" },
      take: HISTORY_SIZE,
    }),
  ]);
  return {
    conversation: {
      id: conversation.id,
      channel: conversation.channel,
      contact: conversation.contact,
      name: conversation.name,
      control: conversation.control,
    },
    inputs: inputs.map(toInput),
    runningJobs: running.map((job) => ({
      id: job.id,
      tool: job.tool,
      toolCallId: job.toolCallId,
      startedAt: job.createdAt.toISOString(),
      lastProgress: job.progress[0]?.text ?? null,
    })),
    history: history.reverse().map((message) => ({
      id: message.id,
      role: message.role,
      text: message.text,
      data: message.data,
      toolCallId: message.toolCallId,
      createdAt: message.createdAt.toISOString(),
    })),
  };
}
