// The agent-runtime API (docs/agent-runtime.md). Thin: validate, call one function, shape the answer.
import { chargesOfJob } from "../../channels/whatsapp/whatsapp-charges.js";
import { attachmentsSchema, buttonsSchema, requireHttpsInProduction } from "../../conversations/attachments.js";
import { Router } from "express";
import { z } from "zod";
import type { HubContext } from "../../context.js";
import { conversationView, findOrCreateConversation, getConversation } from "../../conversations/conversations.js";
import { postDirectMessage } from "../../conversations/direct-messages.js";
import { listMessages, messageView } from "../../conversations/timeline.js";
import { mediaLinks } from "../../media/media-links.js";
import { accountsOf, type MetaChannel } from "../../channels/meta/meta-accounts.js";
import { CHANNELS, isWidgetChannel } from "../../delivery/channel.js";
import { HubError } from "../../errors.js";
import { decideByTeam } from "../../jobs/approval.js";
import { cancelJob } from "../../jobs/cancel-job.js";
import { JOB_MESSAGE_MAX_CHARS, sendJobMessage } from "../../jobs/job-message.js";
import { listJobs, waitForJob } from "../../jobs/job-queries.js";
import { startToolCall } from "../../jobs/start-tool-call.js";
import { requireBearer, type Principal } from "../auth.js";
import { humanAgentBody, parseInput } from "../validate.js";

export const createConversationBody = z.object({
  channel: z.enum(CHANNELS),
  contact: z.string().trim().min(1).max(200),
  name: z.string().trim().max(200).optional(),
  /** Meta channels: which of the hub's numbers / accounts / pages; the channel's first by default. */
  account: z.string().trim().min(1).max(100).optional(),
});
export const messagesQuery = z.object({
  after: z.uuid().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
export const agentMessageBody = z.object({
  text: z.string().trim().min(1).max(10_000),
  attachments: attachmentsSchema(false).optional().describe("files sent with the message (links the channel fetches)"),
  buttons: buttonsSchema
    .optional()
    .describe("choices offered with it; a tap comes back as the person's `user_message` with its `payload`"),
});
export const toolCallBody = z.object({
  tool: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).default({}),
  toolCallId: z.string().min(1).max(200).optional(),
});
/** How long `GET /v1/jobs/{id}` may wait for the job to end. */
export const jobQuery = z.object({ waitMs: z.coerce.number().int().min(0).max(30_000).default(0) });
// A human cancelling from the console may name themselves; the agent's key cancels as "the agent".
export const cancelBody = z.object({
  agent: humanAgentBody.optional(),
});
/** A message to a running job: the person's text, sent to its backend as data. */
export const jobMessageBody = z.object({ text: z.string().trim().min(1).max(JOB_MESSAGE_MAX_CHARS) });
export const jobsQuery = z.object({
  status: z
    .enum(["awaiting_approval", "running", "succeeded", "failed", "timed_out", "cancelled", "refused"])
    .optional(),
});
// A team member's yes or no to a call that waits for the team's approval (a tool file's `approval: team`).
export const approvalBody = z.object({
  decision: z.enum(["approve", "refuse"]),
  agent: humanAgentBody.optional(),
  note: z.string().trim().min(1).max(500).optional().describe("why, for a refusal; the agent reads it as data"),
});

export function v1Routes(ctx: HubContext): Router {
  const router = Router();
  const { hubApiKey, consoleApiKey } = ctx.config.secrets;
  const agentOnly = requireBearer({ agent: hubApiKey });

  router.post("/conversations", agentOnly, async (req, res) => {
    const body = parseInput(createConversationBody, req.body);
    // Meta conversations belong to one of the hub's accounts, as those created by inbound webhooks do.
    // SMS ones to one of its numbers (TWILIO_FROM).
    const served = isWidgetChannel(body.channel)
      ? []
      : body.channel === "sms"
        ? (ctx.config.sms?.from ?? [])
        : accountsOf(ctx.config.meta.accounts, body.channel as MetaChannel).map((account) => account.id);
    if (body.account !== undefined && !served.includes(body.account)) {
      throw new HubError(400, "invalid_request", "this hub does not answer for that account", [
        { field: "account", message: `expected one of: ${served.join(", ") || "(none configured for this channel)"}` },
      ]);
    }
    const account = body.account ?? served[0] ?? "";
    const { conversation, created } = await findOrCreateConversation(ctx.sql, { ...body, account });
    res.status(created ? 201 : 200).json({ conversation: conversationView(conversation, ctx.now()) });
  });

  router.get("/conversations/:id", agentOnly, async (req, res) => {
    const conversation = await getConversation(ctx.sql, req.params.id as string, { readErased: true });
    res.json({ conversation: conversationView(conversation, ctx.now()) });
  });

  router.get("/conversations/:id/messages", agentOnly, async (req, res) => {
    const query = parseInput(messagesQuery, req.query);
    const conversation = await getConversation(ctx.sql, req.params.id as string, { readErased: true });
    const messages = await listMessages(ctx.sql, conversation.id, { afterId: query.after, limit: query.limit });
    const links = mediaLinks(ctx);
    res.json({ messages: messages.map((message) => messageView(message, links)) });
  });

  router.post("/conversations/:id/messages", agentOnly, async (req, res) => {
    const body = parseInput(agentMessageBody, req.body);
    requireHttpsInProduction(ctx.config.production, body.attachments, "attachments");
    const conversation = await getConversation(ctx.sql, req.params.id as string);
    const message = await postDirectMessage(ctx, conversation, "agent", body.text, undefined, body);
    res.status(201).json({ message: messageView(message) });
  });

  router.post("/conversations/:id/tool-calls", agentOnly, async (req, res) => {
    const body = parseInput(toolCallBody, req.body);
    const outcome = await startToolCall(ctx, req.params.id as string, body);
    const { status, ...rest } = outcome;
    res.status(status).json(rest);
  });

  router.get("/conversations/:id/jobs", agentOnly, async (req, res) => {
    const query = parseInput(jobsQuery, req.query);
    res.json({ jobs: await listJobs(ctx, req.params.id as string, query.status) });
  });

  router.get("/jobs/:id", agentOnly, async (req, res) => {
    const { waitMs } = parseInput(jobQuery, req.query);
    // A caller that goes away stops waiting.
    const gone = new AbortController();
    res.on("close", () => gone.abort());
    const job = await waitForJob(ctx, req.params.id as string, waitMs, gone.signal);
    res.json({ job: { ...job, charges: await chargesOfJob(ctx.sql, job.id) } });
  });

  // The agent or a human (console key) may call a job off.
  router.post("/jobs/:id/cancel", requireBearer({ agent: hubApiKey, human: consoleApiKey }), async (req, res) => {
    const body = parseInput(cancelBody, req.body);
    const principal = res.locals.principal as Principal;
    const agent = principal === "human" ? body.agent : undefined;
    res.json({ job: await cancelJob(ctx, req.params.id as string, principal, agent) });
  });

  router.post("/jobs/:id/messages", agentOnly, async (req, res) => {
    const body = parseInput(jobMessageBody, req.body);
    res.json(await sendJobMessage(ctx, req.params.id as string, body.text));
  });

  // Only the team decides (the console's key): the agent runtime that made the call cannot approve it.
  router.post("/jobs/:id/approval", requireBearer({ human: consoleApiKey }), async (req, res) => {
    const body = parseInput(approvalBody, req.body);
    res.json({ job: await decideByTeam(ctx, req.params.id as string, body.decision, body.agent, body.note) });
  });

  // `hub tools reload`: the tool files read again here, and every other process asked to (tool-reload.ts).
  router.post("/tools/reload", agentOnly, async (_req, res) => {
    res.json(await ctx.reloadTools());
  });

  router.get("/tools", agentOnly, (_req, res) => {
    res.json({
      tools: [...ctx.tools.values()].map((tool) => ({
        name: tool.name,
        description: tool.description,
        when_to_use: tool.whenToUse ?? null,
        parameters: tool.parameters,
        async: tool.async
          ? {
              timeoutSeconds: tool.async.timeoutMs / 1000,
              cancellable: Boolean(tool.async.cancel),
              takesMessages: Boolean(tool.async.message),
            }
          : false,
        approval: tool.approval ? { by: tool.approval.by, timeoutSeconds: tool.approval.timeoutMs / 1000 } : null,
      })),
    });
  });

  return router;
}
