// Push registration for widget conversations: a browser's Web Push subscription, an app's FCM token. Each
// request carries the widget session's token (`Authorization: Bearer <token>`), which names the conversation.
// Every answer is the same whether the address was new, the conversation's own or another conversation's
// (201 to a registration, 204 to an unregistration): a visitor holding someone's endpoint or token learns
// nothing from posting it.
import { erasedConversation, isErased } from "../../conversations/erased.js";
import { randomUUID } from "node:crypto";
import { Router, type Request } from "express";
import { z } from "zod";
import { checkWidgetToken } from "../../channels/widget/widget-token.js";
import {
  conversationOfToken,
  startWidgetConversation,
  type WidgetConversationRef,
} from "../../conversations/widget-sessions.js";
import type { HubContext } from "../../context.js";
import { HubError, rateLimited } from "../../errors.js";
import type { DeviceRegistration } from "../../push/push-devices.js";
import { endpointAllowed } from "../../push/push-endpoints.js";
import { parseInput } from "../validate.js";

const base64urlBytes = (length: number) =>
  z
    .string()
    .refine(
      (value) => /^[A-Za-z0-9_-]+={0,2}$/.test(value) && Buffer.from(value, "base64url").length === length,
      `must be ${length} bytes, base64url`,
    );

const httpUrl = z.url({ protocol: /^https?$/, message: "must be an http(s) URL" }).max(2048);

// PushSubscription.toJSON() as browsers give it (extra keys are ignored).
const subscriptionBody = z.object({
  subscription: z.object({
    endpoint: httpUrl,
    expirationTime: z.number().nullable().optional(),
    keys: z.object({
      // An uncompressed P-256 point and a 16-byte secret (RFC 8291).
      p256dh: base64urlBytes(65),
      auth: base64urlBytes(16),
    }),
  }),
  /** The chat page, opened when the notification is clicked. */
  url: httpUrl.optional(),
});

// FCM registration tokens: printable ASCII, no spaces (a few hundred characters; 1024 keeps it indexable).
const fcmToken = z.string().regex(/^[\x21-\x7e]{1,1024}$/, "must be an FCM registration token");

const deviceBody = z.object({ platform: z.enum(["ios", "android", "flutter"]), token: fcmToken });

// Unregistering names the address in the body, not the URL: tokens and endpoints stay out of access logs.
const subscriptionGone = z.object({ endpoint: httpUrl });
const deviceGone = z.object({ token: fcmToken });

/**
 * The token's conversation, once its registrations are within the conversation's limit (with its receipts).
 * A registration makes the conversation if the person has not started it yet (startWidgetConversation): the
 * device is kept with it, to be told of the results the person's first message asks for.
 */
async function conversationOf(ctx: HubContext, req: Request): Promise<WidgetConversationRef> {
  const header = req.get("authorization") ?? "";
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  const secret = ctx.config.secrets.callbackSecret;
  const check = match ? checkWidgetToken(secret, match[1]) : undefined;
  if (!check || !("conversationId" in check)) {
    throw new HubError(401, "unauthorized", "a widget session token is required (Authorization: Bearer <token>)");
  }
  const verdict = await ctx.limits.receipt(check.conversationId);
  if (!verdict.ok) throw rateLimited(verdict.retryAfterMs);
  if (await isErased(ctx.sql, check.conversationId)) throw erasedConversation();
  return conversationOfToken(ctx.sql, secret, check);
}

export function widgetPushRoutes(ctx: HubContext): Router {
  const router = Router();

  /** The device id to answer with: the device's own, or for another conversation's device one never stored. */
  async function register(device: DeviceRegistration): Promise<string> {
    const outcome = await ctx.push.devices.register(device);
    // A token signed by this hub for a conversation that no longer exists.
    if (!outcome) throw new HubError(401, "unauthorized", "the session's conversation no longer exists");
    const log = { conversation_id: device.conversationId, platform: device.platform };
    if (outcome.kind === "taken") {
      ctx.log.info(log, "push device belongs to another conversation; left with it");
      return randomUUID();
    }
    if (outcome.created) ctx.metrics.pushRegistrations.inc({ platform: device.platform });
    ctx.log.info(
      { ...log, device_id: outcome.id },
      outcome.created ? "push device registered" : "push device registered again",
    );
    return outcome.id;
  }

  async function unregister(conversationId: string, address: string): Promise<void> {
    if (await ctx.push.devices.unregister(conversationId, address))
      ctx.log.info({ conversation_id: conversationId }, "push device unregistered");
  }

  router.get("/push-key", (_req, res) => {
    if (!ctx.push.webPushKey) throw new HubError(404, "push_off", "Web Push is not configured on this hub");
    res.json({ publicKey: ctx.push.webPushKey });
  });

  router.post("/push-subscriptions", async (req, res) => {
    const conversation = await conversationOf(ctx, req);
    if (!ctx.push.webPushKey) throw new HubError(404, "push_off", "Web Push is not configured on this hub");
    const body = parseInput(subscriptionBody, req.body);
    if (!endpointAllowed(ctx.config.push.webPush?.endpoints ?? [], body.subscription.endpoint)) {
      throw new HubError(400, "invalid_request", "invalid subscription.endpoint", [
        { field: "subscription.endpoint", message: "not a push service this hub sends to (WEB_PUSH_ENDPOINTS)" },
      ]);
    }
    const id = await register({
      conversationId: await startWidgetConversation(ctx.sql, conversation),
      platform: "web",
      address: body.subscription.endpoint,
      keys: body.subscription.keys,
      url: body.url,
    });
    res.status(201).json({ device: { id, platform: "web" } });
  });

  router.delete("/push-subscriptions", async (req, res) => {
    const { id: conversationId } = await conversationOf(ctx, req);
    await unregister(conversationId, parseInput(subscriptionGone, req.body).endpoint);
    res.status(204).end();
  });

  router.post("/devices", async (req, res) => {
    const conversation = await conversationOf(ctx, req);
    const body = parseInput(deviceBody, req.body);
    const conversationId = await startWidgetConversation(ctx.sql, conversation);
    const id = await register({ conversationId, platform: body.platform, address: body.token });
    res.status(201).json({ device: { id, platform: body.platform } });
  });

  router.delete("/devices", async (req, res) => {
    const { id: conversationId } = await conversationOf(ctx, req);
    await unregister(conversationId, parseInput(deviceGone, req.body).token);
    res.status(204).end();
  });

  return router;
}
