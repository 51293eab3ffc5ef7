// The human-agent console's API (Bearer CONSOLE_API_KEY): take over, reply, hand back.
import { requireLiveConversation } from "../../conversations/erased.js";
import { attachmentsSchema, buttonsSchema, requireHttpsInProduction } from "../../conversations/attachments.js";
import { Router } from "express";
import { z } from "zod";
import { handBack, postHumanMessage, takeOver } from "../../console/control.js";
import { closeOnRequest } from "../../conversations/close-conversation.js";
import type { HubContext } from "../../context.js";
import { conversationView, getConversation } from "../../conversations/conversations.js";
import { consoleConversation, conversationTimeline, listConversations } from "../../console/console-queries.js";
import { messageView } from "../../conversations/timeline.js";
import { CHANNELS } from "../../delivery/channel.js";
import { memberOf, requireAdmin, requireBearer } from "../auth.js";
import { HubError } from "../../errors.js";
import { handoffSchema } from "../../agent/agent-port.js";
import { requestHuman } from "../../console/human-request.js";
import { moveConversation, publishReleased, takeConversation } from "../../team/assignment.js";
import { cannedText } from "../../team/canned-replies.js";
import { humanAgentBody, parseInput } from "../validate.js";

const humanAgent = humanAgentBody;
export const takeoverBody = z.object({
  agent: z
    .union([
      z
        .string()
        .trim()
        .min(1)
        .max(100)
        .transform((id) => ({ id, name: id })),
      humanAgent,
    ])
    .optional()
    .describe("who takes over (the shared console key only: a member's own key takes it as that member)"),
  take: z
    .boolean()
    .optional()
    .describe("a member's key: take it even though it is assigned to someone else (else 409 assigned_to_other)"),
});
export const assignBody = z.strictObject({
  member: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .nullable()
    .describe("the member's id; null: back to the team's queue, to be assigned to someone else"),
  team: z.string().trim().min(1).max(100).optional().describe("the team it moves to (by default the one it is in)"),
});
export const humanMessageBody = z
  .object({
    text: z.string().trim().min(1).max(4000).optional().describe("what to say; or `canned`"),
    // A canned reply (src/team/canned-replies.ts) instead of a text: its shortcut and the values of its variables.
    canned: z.string().trim().min(1).max(64).optional().describe("a canned reply's shortcut, sent instead of `text`"),
    variables: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, "a variable's name"), z.string().max(1000))
      .optional()
      .describe("with `canned`: values of its {{variables}} (over {{name}}, {{agent}} and {{team}} the hub fills)"),
    agent: humanAgent.optional(),
    attachments: attachmentsSchema(false).optional().describe("files sent with the reply (links the channel fetches)"),
    buttons: buttonsSchema.optional().describe("choices offered with it"),
  })
  .superRefine((body, zod) => {
    if ((body.text === undefined) === (body.canned === undefined))
      zod.addIssue({ code: "custom", path: ["text"], message: "give exactly one of text and canned" });
    if (body.variables && body.canned === undefined)
      zod.addIssue({ code: "custom", path: ["variables"], message: "only with canned" });
  });
const flag = z.enum(["true", "false"]).transform((value) => value === "true");
export const listQuery = z.object({
  channel: z.enum(CHANNELS).optional(),
  control: z.enum(["agent", "human"]).optional(),
  held: flag.optional(),
  waiting: flag.optional(),
  // An empty search box means no search, not a bad request.
  q: z
    .string()
    .trim()
    .max(200)
    .optional()
    .transform((text) => text || undefined),
  team: z.string().trim().min(1).max(100).optional().describe("with this support team"),
  queued: flag.optional().describe("waiting in a team's queue with nobody on it"),
  assignee: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .optional()
    .describe("assigned to this member; `me`: to the member whose key asks"),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

export function consoleRoutes(ctx: HubContext): Router {
  const router = Router();
  const consoleOnly = requireBearer({ human: ctx.config.secrets.consoleApiKey });
  const eitherKey = requireBearer({ human: ctx.config.secrets.consoleApiKey, agent: ctx.config.secrets.hubApiKey });

  router.get("/conversations", eitherKey, async (req, res) => {
    const query = parseInput(listQuery, req.query);
    let assignee = query.assignee;
    if (assignee === "me") {
      assignee = memberOf(res)?.id;
      if (!assignee)
        throw new HubError(400, "invalid_request", "invalid assignee", [
          { field: "assignee", message: "`me` needs a member's own key" },
        ]);
    }
    res.json({ conversations: await listConversations(ctx, { ...query, assignee }) });
  });

  router.get("/conversations/:id/timeline", eitherKey, async (req, res) => {
    // Where this hub's callbacks are: `hub chat show` prints a running job's callback URL on it.
    res.set("X-Hub-Public-Url", ctx.publicUrl());
    res.json(await conversationTimeline(ctx, req.params.id as string));
  });

  // The agent runtime or a human may close a conversation; the person writing again reopens it.
  router.post("/conversations/:id/close", eitherKey, async (req, res) => {
    await requireLiveConversation(ctx.sql, req.params.id as string);
    const conversation = await closeOnRequest(ctx, req.params.id as string);
    res.json({ conversation: conversationView(conversation, ctx.now()) });
  });

  router.post("/conversations/:id/takeover", consoleOnly, async (req, res) => {
    await requireLiveConversation(ctx.sql, req.params.id as string);
    const body = parseInput(takeoverBody, req.body);
    const member = memberOf(res);
    // A member's own key: the conversation becomes theirs (assigned), someone else's only when they say so.
    if (member) {
      const taken = await takeConversation(ctx, req.params.id as string, member, body.take === true);
      res.json({ conversation: await consoleConversation(ctx, taken) });
      return;
    }
    if (!body.agent)
      throw new HubError(400, "invalid_request", "invalid agent", [
        { field: "agent", message: "who takes over is needed with the shared console key" },
      ]);
    const conversation = await takeOver(ctx, req.params.id as string, body.agent);
    res.json({ conversation: await consoleConversation(ctx, conversation) });
  });

  router.post("/conversations/:id/handback", consoleOnly, async (req, res) => {
    await requireLiveConversation(ctx.sql, req.params.id as string);
    const conversation = await handBack(ctx, req.params.id as string);
    await publishReleased(ctx, conversation);
    res.json({ conversation: await consoleConversation(ctx, conversation) });
  });

  // A runtime or a rule hands the conversation to a team; the answer says what became of it (a closed team: the
  // agent keeps it until the opening, which the answer gives).
  router.post("/conversations/:id/handoff", eitherKey, async (req, res) => {
    await requireLiveConversation(ctx.sql, req.params.id as string);
    const body = parseInput(handoffSchema, req.body);
    const handoff = await requestHuman(ctx, req.params.id as string, body.reason, body.team);
    const conversation = await getConversation(ctx.sql, req.params.id as string);
    res.json({ conversation: await consoleConversation(ctx, conversation), handoff });
  });

  // An admin moves the conversation to a member, or back to a team's queue.
  router.post("/conversations/:id/assign", consoleOnly, requireAdmin, async (req, res) => {
    await requireLiveConversation(ctx.sql, req.params.id as string);
    const body = parseInput(assignBody, req.body);
    const moved = await moveConversation(ctx, req.params.id as string, body);
    res.json({ conversation: await consoleConversation(ctx, moved) });
  });

  router.post("/conversations/:id/human-messages", consoleOnly, async (req, res) => {
    await requireLiveConversation(ctx.sql, req.params.id as string);
    const body = parseInput(humanMessageBody, req.body);
    requireHttpsInProduction(ctx.config.production, body.attachments, "attachments");
    // A member's own key speaks as them: their reply is what keeps a conversation assigned to them.
    const member = memberOf(res);
    const agent = body.agent ?? (member ? { id: member.id, name: member.name } : undefined);
    const text =
      body.text ??
      (await cannedText(ctx.sql, req.params.id as string, body.canned!, {
        agent: agent?.name,
        variables: body.variables,
      }));
    const message = await postHumanMessage(ctx, req.params.id as string, text, agent, body);
    res.status(201).json({ message: messageView(message) });
  });

  return router;
}
