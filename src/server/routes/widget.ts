// Widget sessions: a visitor gets (or gets back) their conversation and a token for the socket; and the
// socket.io client the widget loads.
import { Router } from "express";
import { z } from "zod";
import { acceptableVisitorId, issueVisitorId } from "../../channels/widget/visitor-id.js";
import { createWidgetToken } from "../../channels/widget/widget-token.js";
import type { HubContext } from "../../context.js";
import { findOrCreateWidgetConversation } from "../../conversations/conversations.js";
import { WIDGET_CHANNELS } from "../../delivery/channel-port.js";
import { HubError, rateLimited } from "../../errors.js";
import { parseInput } from "../validate.js";
import { serveWidgetSocketClient } from "./widget-socket-client.js";
import { widgetPushRoutes } from "./widget-push.js";

export const WIDGET_ACCOUNT = "widget";

const sessionBody = z.object({
  channel: z.enum(WIDGET_CHANNELS as ["web", "ios", "android", "flutter"]).default("web"),
  // Unguessable ids only: the visitor id is what brings a returning visitor back to their conversation.
  visitorId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{16,100}$/, "must be 16–100 letters, digits, _ or -")
    .optional(),
  name: z.string().trim().max(200).optional(),
});

export function widgetRoutes(ctx: HubContext): Router {
  const router = Router();
  // The widget is embedded on other sites: sessions are open to any origin (no cookies are involved).
  router.use((req, res, next) => {
    res.set({
      "Access-Control-Allow-Origin": "*",
      "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
      "Access-Control-Allow-Headers": "Content-Type, Authorization",
      "Access-Control-Max-Age": "600",
    });
    if (req.method === "OPTIONS") return void res.status(204).end();
    next();
  });
  router.get("/socket.io.js", serveWidgetSocketClient);
  router.post("/sessions", async (req, res) => {
    const body = parseInput(sessionBody, req.body);
    const secret = ctx.config.secrets.callbackSecret;
    if (body.visitorId && !acceptableVisitorId(secret, body.visitorId)) {
      throw new HubError(400, "invalid_request", "invalid visitorId", [
        { field: "visitorId", message: "too easy to guess: omit it and keep the one the hub issues" },
      ]);
    }
    const verdict = await ctx.limits.session(req.ip ?? "");
    if (!verdict.ok) throw rateLimited(verdict.retryAfterMs);
    const visitorId = body.visitorId ?? issueVisitorId(secret);
    const { conversation, created } = await findOrCreateWidgetConversation(ctx.sql, {
      channel: body.channel,
      // Apart from conversations the agent runtime creates: a visitor id can never open one of those.
      account: WIDGET_ACCOUNT,
      visitorId,
      name: body.name,
    });
    res.status(created ? 201 : 200).json({
      conversationId: conversation.id,
      visitorId,
      token: createWidgetToken(secret, conversation.id, visitorId),
    });
  });
  router.use(widgetPushRoutes(ctx));
  return router;
}
