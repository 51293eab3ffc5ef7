// Push registration for widget conversations: a browser's Web Push subscription, an app's FCM token. Each
// request carries the widget session's token (`Authorization: Bearer <token>`), which names the conversation.
import { Router, type Request } from "express";
import { z } from "zod";
import { verifyWidgetToken } from "../../channels/widget/widget-token.js";
import type { HubContext } from "../../context.js";
import { HubError } from "../../errors.js";
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

const deviceBody = z.object({
  platform: z.enum(["ios", "android", "flutter"]),
  // FCM registration tokens: printable ASCII, no spaces (a few hundred characters; 1024 keeps it indexable).
  token: z.string().regex(/^[\x21-\x7e]{1,1024}$/, "must be an FCM registration token"),
});

function conversationOf(ctx: HubContext, req: Request): string {
  const header = req.get("authorization") ?? "";
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  const conversationId = match ? verifyWidgetToken(ctx.config.secrets.callbackSecret, match[1]) : undefined;
  if (!conversationId) {
    throw new HubError(401, "unauthorized", "a widget session token is required (Authorization: Bearer <token>)");
  }
  return conversationId;
}

export function widgetPushRoutes(ctx: HubContext): Router {
  const router = Router();

  async function register(device: DeviceRegistration) {
    const registered = await ctx.push.devices.register(device);
    // A token signed by this hub for a conversation that no longer exists.
    if (!registered) throw new HubError(401, "unauthorized", "the session's conversation no longer exists");
    if (registered.created) ctx.metrics.pushRegistrations.inc({ platform: device.platform });
    ctx.log.info(
      { conversation_id: device.conversationId, device_id: registered.id, platform: device.platform },
      registered.created ? "push device registered" : "push device registered again",
    );
    return registered;
  }

  router.get("/push-key", (_req, res) => {
    if (!ctx.push.webPushKey) throw new HubError(404, "push_off", "Web Push is not configured on this hub");
    res.json({ publicKey: ctx.push.webPushKey });
  });

  router.post("/push-subscriptions", async (req, res) => {
    const conversationId = conversationOf(ctx, req);
    if (!ctx.push.webPushKey) throw new HubError(404, "push_off", "Web Push is not configured on this hub");
    const body = parseInput(subscriptionBody, req.body);
    if (!endpointAllowed(ctx.config.push.webPush?.endpoints ?? [], body.subscription.endpoint)) {
      throw new HubError(400, "invalid_request", "invalid subscription.endpoint", [
        { field: "subscription.endpoint", message: "not a push service this hub sends to (WEB_PUSH_ENDPOINTS)" },
      ]);
    }
    const device = await register({
      conversationId,
      platform: "web",
      address: body.subscription.endpoint,
      keys: body.subscription.keys,
      url: body.url,
    });
    res.status(device.created ? 201 : 200).json({ device: { id: device.id, platform: "web" } });
  });

  router.post("/devices", async (req, res) => {
    const conversationId = conversationOf(ctx, req);
    const body = parseInput(deviceBody, req.body);
    const device = await register({ conversationId, platform: body.platform, address: body.token });
    res.status(device.created ? 201 : 200).json({ device: { id: device.id, platform: body.platform } });
  });

  return router;
}
