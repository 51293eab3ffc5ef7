// Twilio's webhooks for SMS: the person's messages (`/sms`) and status callbacks (`/status`), form-encoded,
// signed with the account's auth token over the hub's public URL. Checked, validated, committed, then 200.
import express, { Router, type Request } from "express";
import { storeSmsWebhook, type SmsWebhookKind } from "../../channels/sms/sms-webhooks.js";
import { inboundSchema, statusSchema } from "../../channels/sms/sms-webhook.js";
import { verifyTwilioSignature } from "../../channels/sms/twilio-signature.js";
import type { HubContext } from "../../context.js";
import { HubError, UnavailableError } from "../../errors.js";
import { parseInput } from "../validate.js";

/** What Twilio is answered for an inbound message: nothing to send back (the agent answers through the API). */
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>';

export function twilioWebhookRoutes(ctx: HubContext): Router {
  const router = Router();
  router.use(express.raw({ type: () => true, limit: "256kb" }));

  /** The signed fields, or a refusal: 404 with SMS off, 403 when the signature does not match. */
  function signedFields(req: Request): Record<string, string> {
    const sms = ctx.config.sms;
    if (!sms) throw new HubError(404, "not_configured", "SMS is off: TWILIO_ACCOUNT_SID is not set");
    const raw = Buffer.isBuffer(req.body) ? req.body.toString("utf8") : "";
    const fields = new URLSearchParams(raw);
    // The URL Twilio was given: the hub's public one, whatever Host a proxy passed on.
    const url = `${ctx.publicUrl()}${req.originalUrl}`;
    if (!verifyTwilioSignature(sms.authToken, url, fields, req.get("x-twilio-signature")))
      throw new HubError(403, "invalid_signature", "X-Twilio-Signature does not match the request");
    return Object.fromEntries(fields);
  }

  async function commit(kind: SmsWebhookKind, fields: Record<string, string>): Promise<void> {
    try {
      await storeSmsWebhook(ctx, kind, fields);
    } catch (error) {
      throw new UnavailableError("store", error);
    }
  }

  router.post("/sms", async (req, res) => {
    const fields = signedFields(req);
    parseInput(inboundSchema(fields), fields);
    await commit("inbound", fields);
    res.type("text/xml").send(EMPTY_TWIML);
  });

  router.post("/status", async (req, res) => {
    const fields = signedFields(req);
    parseInput(statusSchema, fields);
    await commit("status", fields);
    res.json({ ok: true });
  });
  return router;
}
