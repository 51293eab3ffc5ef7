// Telegram's webhook: an update is taken only with the secret the hub gave setWebhook
// (X-Telegram-Bot-Api-Secret-Token, compared in constant time), checked against the Update's shape, and
// committed (once per update_id) before the 200; the webhooks queue processes it (telegram-updates.ts).
import express, { Router } from "express";
import { storeTelegramUpdate } from "../../channels/telegram/telegram-updates.js";
import { telegramUpdateSchema } from "../../channels/telegram/telegram-update.js";
import type { HubContext } from "../../context.js";
import { HubError, UnavailableError } from "../../errors.js";
import { sameSecret } from "../auth.js";
import { repairOrRefuse } from "../json-guard.js";
import { parseInput } from "../validate.js";

export function telegramWebhookRoutes(ctx: HubContext): Router {
  const router = Router();
  const telegram = ctx.config.telegram;
  const secretFirst: express.RequestHandler = (req, _res, next) => {
    if (!telegram) return next(new HubError(404, "not_configured", "Telegram is off: TELEGRAM_BOT_TOKEN is not set"));
    const given = req.get("x-telegram-bot-api-secret-token");
    if (given === undefined)
      return next(new HubError(401, "missing_secret", "X-Telegram-Bot-Api-Secret-Token is missing"));
    if (!sameSecret(given, telegram.webhookSecret))
      return next(new HubError(403, "invalid_secret", "X-Telegram-Bot-Api-Secret-Token does not match"));
    next();
  };
  // The secret before the body: an update without it is refused before its body is read.
  router.post("/", secretFirst, express.json({ limit: "1mb", type: () => true }), async (req, res) => {
    // From Telegram (it knew the secret): a stray character is repaired, never a reason to refuse.
    const update = parseInput(telegramUpdateSchema, repairOrRefuse(req.body), "invalid_update");
    let outcome: "committed" | "duplicate";
    try {
      outcome = await storeTelegramUpdate(ctx, telegram!.botId, update);
    } catch (error) {
      throw new UnavailableError("store", error);
    }
    res.json({ ok: true, ...(outcome === "duplicate" ? { duplicate: true } : {}) });
  });
  return router;
}
