// Meta's webhooks: the subscription handshake, and signed deliveries committed before the 200.
import express, { Router } from "express";
import { storeWebhook, type WebhookSource } from "../../channels/meta/meta-webhooks.js";
import { deliveryTooOld } from "../../channels/meta/webhook-retention.js";
import { verifyMetaSignature } from "../../channels/meta/webhook-signature.js";
import type { HubContext } from "../../context.js";
import { HubError, UnavailableError } from "../../errors.js";
import { sameSecret } from "../auth.js";
import { repairOrRefuse } from "../json-guard.js";

const SOURCES: Record<string, WebhookSource> = {
  whatsapp_business_account: "whatsapp",
  instagram: "instagram",
  page: "messenger",
};

export function metaWebhookRoutes(ctx: HubContext): Router {
  const router = Router();
  const { appSecret, verifyToken } = ctx.config.meta;

  router.get("/", (req, res) => {
    const mode = req.query["hub.mode"];
    const token = req.query["hub.verify_token"];
    const challenge = req.query["hub.challenge"];
    if (verifyToken && mode === "subscribe" && sameSecret(token, verifyToken) && typeof challenge === "string") {
      res.type("text/plain").send(challenge);
      return;
    }
    res.status(403).json({ error: { code: "forbidden", message: "verification failed" } });
  });

  router.post("/", express.raw({ type: () => true, limit: "5mb" }), async (req, res) => {
    if (!appSecret) throw new HubError(404, "not_configured", "Meta webhooks are off: META_APP_SECRET is not set");
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    if (!verifyMetaSignature(appSecret, raw, req.get("x-hub-signature-256"))) {
      throw new HubError(401, "invalid_signature", "X-Hub-Signature-256 does not match the body");
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString("utf8"));
      if (!parsed || typeof parsed !== "object") throw new Error("not an object");
    } catch {
      throw new HubError(400, "invalid_body", "the body is not JSON", [{ field: "(body)", message: "not valid JSON" }]);
    }
    // Signed by Meta: a stray character is repaired, never a reason to refuse (Meta would retry for days).
    const body = repairOrRefuse(parsed) as { object?: unknown };
    const source = SOURCES[String(body.object)];
    if (!source) {
      // Signed by Meta, for a product this hub does not serve (a `user` or `permissions` subscription):
      // a 4xx would be retried for days, so it is acknowledged and counted.
      ctx.metrics.metaIgnored.inc({ channel: "none", reason: "object" });
      ctx.log.info({ object: String(body.object) }, "meta webhook for an object this hub does not serve ignored");
      res.json({ ok: true, ignored: "object" });
      return;
    }
    if (deliveryTooOld(body, ctx.now(), ctx.config.meta.webhookRetentionMs)) {
      // Acknowledged (a 4xx would be retried), never processed: see webhook-retention.ts.
      ctx.metrics.metaIgnored.inc({ channel: source, reason: "too_old" });
      ctx.log.info({ channel: source }, "meta webhook older than WEBHOOK_RETENTION ignored");
      res.json({ ok: true, ignored: "too_old" });
      return;
    }
    try {
      await storeWebhook(ctx, source, body);
    } catch (error) {
      throw new UnavailableError("store", error);
    }
    res.json({ ok: true });
  });
  return router;
}
