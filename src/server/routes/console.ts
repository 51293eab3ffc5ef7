// The human-agent console's API (Bearer CONSOLE_API_KEY): take over, reply, hand back.
import { requireLiveConversation } from "../../conversations/erased.js";
import { attachmentsSchema, buttonsSchema, requireHttpsInProduction } from "../../conversations/attachments.js";
import { Router } from "express";
import { z } from "zod";
import { handBack, postHumanMessage, takeOver } from "../../console/control.js";
import { closeOnRequest } from "../../conversations/close-conversation.js";
import type { HubContext } from "../../context.js";
import { conversationView } from "../../conversations/conversations.js";
import { conversationTimeline, listConversations } from "../../console/console-queries.js";
import { messageView } from "../../conversations/timeline.js";
import { CHANNELS } from "../../delivery/channel.js";
import { memberOf, requireBearer } from "../auth.js";
import { cannedText } from "../../team/canned-replies.js";
import { humanAgentBody, parseInput } from "../validate.js";

const humanAgent = humanAgentBody;
export const takeoverBody = z.object({
  agent: z.union([
    z
      .string()
      .trim()
      .min(1)
      .max(100)
      .transform((id) => ({ id, name: id })),
    humanAgent,
  ]),
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
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

export function consoleRoutes(ctx: HubContext): Router {
  const router = Router();
  const consoleOnly = requireBearer({ human: ctx.config.secrets.consoleApiKey });
  const eitherKey = requireBearer({ human: ctx.config.secrets.consoleApiKey, agent: ctx.config.secrets.hubApiKey });

  router.get("/conversations", eitherKey, async (req, res) => {
    res.json({ conversations: await listConversations(ctx, parseInput(listQuery, req.query)) });
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
    const conversation = await takeOver(ctx, req.params.id as string, body.agent);
    res.json({ conversation: conversationView(conversation, ctx.now()) });
  });

  router.post("/conversations/:id/handback", consoleOnly, async (req, res) => {
    await requireLiveConversation(ctx.sql, req.params.id as string);
    const conversation = await handBack(ctx, req.params.id as string);
    res.json({ conversation: conversationView(conversation, ctx.now()) });
  });

  router.post("/conversations/:id/human-messages", consoleOnly, async (req, res) => {
    await requireLiveConversation(ctx.sql, req.params.id as string);
    const body = parseInput(humanMessageBody, req.body);
    requireHttpsInProduction(ctx.config.production, body.attachments, "attachments");
    const text =
      body.text ??
      (await cannedText(ctx.sql, req.params.id as string, body.canned!, {
        agent: body.agent?.name ?? memberOf(res)?.name,
        variables: body.variables,
      }));
    const message = await postHumanMessage(ctx, req.params.id as string, text, body.agent, body);
    res.status(201).json({ message: messageView(message) });
  });

  return router;
}
