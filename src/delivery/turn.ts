// A turn: everything owed to one conversation, in order, while its turn is scheduled to this process (see
// turn-schedule.ts). Outgoing messages still to route go first (a direct message, a reply whose send was
// deferred); then the pending inputs go to the agent together and its reply is committed with them — only
// if they are all still pending — and routed. Held while a human has the conversation. A turn reads what it
// needs in one statement and re-reads nothing: a turn retried after a crash picks up where it stopped.
import { randomUUID } from "node:crypto";
import {
  AgentUnavailableError,
  type AgentPort,
  type TurnInput,
  type TurnReply,
  type TurnRequest,
} from "../agent/agent-port.js";
import type { Metrics } from "../metrics.js";
import { errorKey } from "../log-throttle.js";
import { mediaLinks, type MediaLinkDeps, type MediaLinks } from "../media/media-links.js";
import { requestHuman, type HumanRequestDeps } from "../console/human-request.js";
import { noticeAgentUnavailable, type AgentUnavailableDeps } from "./agent-unavailable.js";
import { deliver } from "./deliver.js";
import { publish } from "./effects.js";
import { setAsideStale, type StaleResultsDeps } from "./stale-results.js";
import { splitForChannel } from "./text-limits.js";
import { filesOnce, givenWithTemplate } from "./reply-files.js";
import { attachmentsOf } from "../conversations/attachments.js";
import type { ConversationRow, TurnInputRow } from "./rows.js";
import { settleApprovalAnswers } from "../jobs/approval.js";
import type { JobDeps } from "../jobs/job-deps.js";
import { readTurnSnapshot, type TurnSnapshot } from "./turn-snapshot.js";
import { trace } from "@opentelemetry/api";
import { inSpan } from "../tracing/spans.js";
import { linksTo } from "../tracing/job-trace.js";

/**
 * What a turn needs: the agent, and what delivering, giving notices, setting stale results aside and handing
 * off to a person need.
 */
export type TurnDeps = AgentUnavailableDeps &
  HumanRequestDeps &
  StaleResultsDeps &
  MediaLinkDeps &
  JobDeps & {
    agent: AgentPort;
    metrics: Pick<Metrics, "deliveries">;
  };

export async function runTurn(ctx: TurnDeps, conversationId: string): Promise<void> {
  const history = ctx.agent.wantsHistory ?? ctx.agent.remote;
  let snapshot = await readTurnSnapshot(ctx.sql, conversationId, { history });
  if (!snapshot) return;
  // The person's answer to an MCP server's question (src/mcp/elicitation.ts) is the server's, not words for the
  // agent: taken first, it starts no reply; the next question it owes is routed below with the outgoing.
  if (
    snapshot.asking &&
    snapshot.inputs.some((input) => input.kind === "user_message") &&
    (await (await import("../mcp/elicitation.js")).takeElicitationAnswers(ctx, conversationId)) > 0
  ) {
    snapshot = await readTurnSnapshot(ctx.sql, conversationId, { history });
    if (!snapshot) return;
  }
  // The person's answer to an approval question (a message of theirs: a tap or a typed yes or no) is acted on
  // before the agent runs, so it sees the call started or refused beside the answer; a turn with no message of
  // the person has no answer to act on (one left by a crash is the timeout poll's).
  if (
    snapshot.inputs.some((input) => input.kind === "user_message") &&
    (await settleApprovalAnswers(ctx, conversationId)) > 0
  ) {
    snapshot = await readTurnSnapshot(ctx.sql, conversationId, { history });
    if (!snapshot) return;
  }
  let conversation = snapshot.conversation;
  for (const message of snapshot.outgoing) await deliver(ctx, conversation, message);

  // Progress of a job that has since ended (it waited through a takeover or a closed window) is stale.
  const stale = snapshot.inputs.filter((input) => input.kind === "progress" && input.jobStatus !== "running");
  if (stale.length > 0) await ctx.delivery.supersedeProgress(conversationId, stale);
  // Stale results, and results that came to a closed conversation, are not given as if fresh.
  const inputs = await setAsideStale(
    ctx,
    conversation,
    snapshot.inputs.filter((input) => !stale.includes(input)),
  );
  if (inputs.length === 0) return;
  const span = trace.getActiveSpan();
  if (span?.isRecording()) {
    span.setAttributes({ "hub.channel": conversation.channel, "hub.turn.inputs": inputs.map((input) => input.kind) });
    // A result's turn: linked to the span that started its job, hours and processes ago maybe.
    for (const input of inputs) span.addLinks(linksTo(input.payload.traceParent, "job start"));
  }

  if (conversation.control === "human") {
    const held = await ctx.delivery.holdInputs(conversationId, inputs);
    if (held !== undefined) {
      // Held here, before any reply exists, so deliver() never sees these: each is counted as its decision.
      ctx.log.info({ conversation_id: conversationId, items: held }, "held for the human agent");
      if (held > 0) ctx.metrics.deliveries.inc({ channel: conversation.channel, decision: "held" }, held);
      return;
    }
  }

  const request = turnRequest(conversation, inputs, snapshot, mediaLinks(ctx));
  // A remote agent runtime takes long enough for the person to see that a reply is coming. The indicator
  // stays until the reply has been handed to the channel, so it never goes before the reply comes.
  if (ctx.agent.remote) typing(ctx, conversationId, true);
  showTypingOnChannel(ctx, conversation, inputs);
  try {
    let reply: TurnReply;
    try {
      reply = await inSpan(
        "agent",
        { attributes: { "gen_ai.operation.name": "invoke_agent", "hub.agent.remote": ctx.agent.remote } },
        () => ctx.agent.runTurn(request),
      );
    } catch (error) {
      // The turn is retried with its inputs; meanwhile a person waiting for an answer is told why none comes.
      if (error instanceof AgentUnavailableError) await tellAgentUnavailable(ctx, conversation, inputs);
      throw error;
    }

    // Each file once: not again when the template's header gave it, nor in two messages of the reply.
    const once = filesOnce(reply.messages, givenWithTemplate(inputs));
    // A long text is split; its files and choices go with the last part, after everything they follow.
    const parts = once.flatMap((message) => {
      const texts = splitForChannel(conversation.channel, message.text);
      return texts.map((text, i) => ({
        text,
        data: message.data ?? null,
        attachments: i === texts.length - 1 ? (message.attachments ?? null) : null,
        buttons: i === texts.length - 1 ? (message.buttons ?? null) : null,
      }));
    });
    // Jobs the agent called off meanwhile: this reply tells of them, and answers their notices.
    const ended = await ctx.delivery.endedInTurn(conversationId, reply.endedJobs ?? []);
    const committed = await ctx.delivery.commitReply({
      conversationId,
      turnId: randomUUID(),
      inputs: [...inputs, ...ended.filter((input) => !inputs.some((taken) => taken.id === input.id))],
      // Longer than the channel takes: several messages, in order (split where a reader would pause).
      texts: parts.map((part) => part.text),
      data: parts.map((part) => part.data),
      attachments: parts.map((part) => part.attachments),
      buttons: parts.map((part) => part.buttons),
      jobId: singleJob(inputs),
    });
    if (committed === "superseded") {
      // Another turn answered these inputs meanwhile (this one had lost its lease): its reply stands.
      ctx.log.warn({ conversation_id: conversationId }, "turn superseded; its reply was not committed");
      return;
    }
    conversation = committed.conversation;
    for (const message of committed.replies) await deliver(ctx, conversation, message);
    // The person has been told; from now on the team has the conversation.
    if (reply.handoff) await requestHuman(ctx, conversationId, reply.handoff.reason, reply.handoff.team);
  } finally {
    if (ctx.agent.remote) typing(ctx, conversationId, false);
  }
}

/** The person's client shows (or stops showing) that a reply is coming. */
const typing = (ctx: Pick<TurnDeps, "changes">, conversationId: string, on: boolean) =>
  publish(ctx.changes, [{ type: "typing", conversationId, typing: on }]);

/** A channel's own indicator (ChannelAdapter.showTyping), for a turn that answers something the person wrote. */
function showTypingOnChannel(ctx: TurnDeps, conversation: ConversationRow, inputs: TurnInputRow[]): void {
  const channel = ctx.channels[conversation.channel];
  const latest = inputs.filter((input) => input.kind === "user_message").at(-1);
  if (!channel?.showTyping || !latest || conversation.control === "human") return;
  const show = channel.showTyping.bind(channel);
  void (async () => {
    const [row] = latest.messageId
      ? await ctx.sql.query<{ externalId: string | null }>(`SELECT "externalId" FROM "Message" WHERE id = $1`, [
          latest.messageId,
        ])
      : [];
    await show(conversation, row?.externalId ?? null);
  })().catch((error: unknown) =>
    ctx.warnRepeated(`typing:${errorKey(error)}`, { err: error, conversation_id: conversation.id }, "typing not shown"),
  );
}

/** Best effort: a notice that cannot be written now is tried again by the turn's next attempt. */
async function tellAgentUnavailable(
  ctx: AgentUnavailableDeps,
  conversation: ConversationRow,
  inputs: TurnInputRow[],
): Promise<void> {
  try {
    await noticeAgentUnavailable(ctx, conversation, inputs);
  } catch (error) {
    ctx.warnRepeated(
      `agent-notice:${errorKey(error)}`,
      { err: error, conversation_id: conversation.id },
      "agent-unavailable notice not given",
    );
  }
}

/** One job's result or progress: the reply carries its job id (the widget shows it with the job). */
function singleJob(inputs: TurnInputRow[]): string | null {
  const jobs = new Set(inputs.map((input) => input.jobId).filter(Boolean));
  return jobs.size === 1 ? [...jobs][0]! : null;
}

function toInput(input: TurnInputRow, links: MediaLinks): TurnInput {
  const payload = input.payload;
  const job = {
    job: String(payload.jobId ?? input.jobId),
    tool: String(payload.tool ?? ""),
    toolCallId: (payload.toolCallId as string | null) ?? null,
    // A re-run of a lost job says which attempt it was and which job the agent started.
    ...(typeof payload.attempt === "number" ? { attempt: payload.attempt, rerunOf: String(payload.rerunOf) } : {}),
  };
  switch (input.kind) {
    case "user_message": {
      const messageId = input.messageId ?? "";
      const attachments = links(messageId, payload.attachments);
      return {
        type: "user_message",
        messageId,
        text: String(payload.text ?? ""),
        ...(attachments.length > 0 ? { attachments } : {}),
        ...(typeof payload.payload === "string" ? { payload: payload.payload } : {}),
      };
    }
    case "tool_result": {
      const attachments = attachmentsOf(payload.attachments);
      const given = attachmentsOf(payload.givenWithTemplate);
      return {
        type: "tool_result",
        ...job,
        result: payload.result,
        ...(attachments.length ? { attachments } : {}),
        ...(given.length ? { givenWithTemplate: given } : {}),
      };
    }
    case "tool_failed":
      return {
        type: "tool_failed",
        ...job,
        reason: payload.reason as "error" | "timeout" | "cancelled" | "refused",
        message: String(payload.message ?? ""),
      };
    case "tool_expired":
      return {
        type: "tool_expired",
        ...job,
        arrivedAt: String(payload.arrivedAt),
        outcome: payload.outcome === "failed" ? "failed" : "succeeded",
        reason: payload.reason === "conversation_closed" ? "conversation_closed" : "deliver_within",
      };
    case "progress":
      return {
        type: "progress",
        job: job.job,
        tool: job.tool,
        toolCallId: job.toolCallId,
        text: String(payload.progress ?? ""),
      };
    case "handback":
      return { type: "handback" };
  }
}

function turnRequest(
  conversation: ConversationRow,
  inputs: TurnInputRow[],
  snapshot: TurnSnapshot,
  links: MediaLinks,
): TurnRequest {
  return {
    conversation: {
      id: conversation.id,
      channel: conversation.channel,
      account: conversation.account,
      contact: conversation.contact,
      name: conversation.name,
      control: conversation.control,
    },
    inputs: inputs.map((input) => toInput(input, links)),
    runningJobs: snapshot.runningJobs.map((job) => ({
      id: job.id,
      tool: job.tool,
      toolCallId: job.toolCallId,
      startedAt: job.createdAt.toISOString(),
      lastProgress: job.lastProgress,
    })),
    history: (snapshot.history ?? []).map((message) => ({
      id: message.id,
      role: message.role,
      text: message.text,
      data: message.data,
      toolCallId: message.toolCallId,
      createdAt: message.createdAt.toISOString(),
    })),
    // The team's notes for the agent (src/team/notes.ts), only when there are any.
    ...(snapshot.notes.length > 0
      ? {
          notes: snapshot.notes.map((note) => ({
            id: note.id,
            text: note.text,
            author: note.author,
            createdAt: note.createdAt.toISOString(),
          })),
        }
      : {}),
  };
}
