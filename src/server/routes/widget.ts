// Widget sessions: a visitor gets (or gets back) their conversation and a token for the socket; and the
// socket.io client the widget loads.
import { Router } from "express";
import { z } from "zod";
import type { HubContext } from "../../context.js";
import { openWidgetSession } from "../../conversations/widget-sessions.js";
import { WIDGET_CHANNELS } from "../../delivery/channel.js";
import { hasControlCharacters, isPlainText } from "../../data-text.js";
import { rateLimited } from "../../errors.js";
import { parseInput } from "../validate.js";
import { serveWidgetSocketClient } from "./widget-socket-client.js";
import { widgetPushRoutes } from "./widget-push.js";

const sessionBody = z.object({
  channel: z.enum(WIDGET_CHANNELS as ["web", "ios", "android", "flutter"]).default("web"),
  // Only ids the hub issued: checked against its signature (widget-sessions.ts).
  visitorId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{16,100}$/, "must be 16–100 letters, digits, _ or -: keep the id the hub issued")
    .optional(),
  // The integrator's own user id, verified by identifierHash (docs/widget-protocol.md, Verified identities).
  identifier: z
    .string()
    .min(1)
    .max(200)
    .refine((text) => !hasControlCharacters(text), "must not contain control characters")
    .optional(),
  identifierHash: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, "must be the hex HMAC-SHA256 of identifier (64 hex digits)")
    .optional(),
  // Make the conversation now, before the person writes (an agent runtime that greets first); otherwise the
  // person's first message, file or push registration makes it.
  start: z.boolean().optional(),
  // Data, never lines or direction changes in the console, the terminal or the model's prompt (data-text.ts).
  name: z
    .string()
    .refine(isPlainText, "must not contain control characters, line breaks or bidirectional controls")
    .trim()
    .max(200)
    .optional(),
});

export function widgetRoutes(ctx: HubContext): Router {
  const router = Router();
  // The widget is embedded on other sites: sessions are open to any origin (no cookies are involved).
  router.use((req, res, next) => {
    res.set({
      "Access-Control-Allow-Origin": "*",
      "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
      "Access-Control-Allow-Headers": "Content-Type, Authorization",
      "Access-Control-Max-Age": "600",
    });
    if (req.method === "OPTIONS") return void res.status(204).end();
    next();
  });
  router.get("/socket.io.js", serveWidgetSocketClient);
  router.post("/sessions", async (req, res) => {
    const body = parseInput(sessionBody, req.body);
    const verdict = await ctx.limits.session(req.ip ?? "");
    if (!verdict.ok) throw rateLimited(verdict.retryAfterMs);
    const { created, ...session } = await openWidgetSession(
      ctx.sql,
      {
        secret: ctx.config.secrets.callbackSecret,
        identitySecret: ctx.config.widget.identitySecret,
        tokenTtlMs: ctx.config.widget.tokenTtlMs,
      },
      body,
    );
    res.status(created ? 201 : 200).json(session);
  });
  router.use(widgetPushRoutes(ctx));
  return router;
}
