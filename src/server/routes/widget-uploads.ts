// POST /widget/uploads: the person attaches a file in the widget. The raw body is the file, its type the
// Content-Type, its name `?name=`; the widget token (`Authorization: Bearer <token>`) says whose
// conversation it goes to. The token, the type and the declared length are checked before the body is read.
import { erasedConversation, isErased } from "../../conversations/erased.js";
import express, { Router, type NextFunction, type Request, type Response } from "express";
import { z } from "zod";
import { checkWidgetToken } from "../../channels/widget/widget-token.js";
import type { HubContext } from "../../context.js";
import { storeUpload } from "../../conversations/widget-uploads.js";
import { HubError, rateLimited } from "../../errors.js";
import { typeAllowed } from "../../media/media-config.js";
import { parseInput } from "../validate.js";

const query = z.object({
  name: z
    .string()
    .trim()
    .min(1)
    .max(255)
    .refine(
      (name) =>
        [...name].every((char) => char.charCodeAt(0) > 0x1f && char !== "\u007f" && char !== "/" && char !== "\\"),
      "must be a file name without control characters or slashes",
    )
    .refine((name) => name.isWellFormed(), "contains a lone surrogate")
    .optional(),
});

const MIME = /^[\w.+-]+\/[\w.+-]+$/;

export function widgetUploadRoutes(ctx: HubContext): Router {
  const router = Router();
  const { types, maxBytes } = ctx.config.media.widgetUploads;
  router.use((req, res, next) => {
    res.set({
      "Access-Control-Allow-Origin": "*",
      "Access-Control-Allow-Methods": "POST, OPTIONS",
      "Access-Control-Allow-Headers": "Content-Type, Authorization",
      "Access-Control-Max-Age": "600",
    });
    if (req.method === "OPTIONS") return void res.status(204).end();
    next();
  });
  const conversationOf = (req: Request): string => {
    const header = req.get("authorization") ?? "";
    const token = header.startsWith("Bearer ") ? header.slice("Bearer ".length) : undefined;
    const check = checkWidgetToken(ctx.config.secrets.callbackSecret, token, ctx.now());
    if (check && "expired" in check)
      throw new HubError(401, "token_expired", "the widget token has expired: ask for a session again");
    if (!check) throw new HubError(401, "unauthorized", "Authorization: Bearer <widget token> is missing or not valid");
    return check.conversationId;
  };
  const precheck = async (req: Request, res: Response, next: NextFunction) => {
    const conversationId = conversationOf(req);
    const { name } = parseInput(query, req.query);
    const type = (req.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (!MIME.test(type) || !typeAllowed(types, type)) {
      throw new HubError(
        415,
        "unsupported_media_type",
        `Content-Type ${type || "(none)"} is not one the widget may upload`,
        [{ field: "Content-Type", message: `expected one of ${types.join(", ")}` }],
      );
    }
    const declared = Number(req.get("content-length") ?? NaN);
    if (declared > maxBytes) throw tooLarge(maxBytes);
    const verdict = await ctx.limits.message(conversationId, req.ip ?? "");
    if (!verdict.ok) throw rateLimited(verdict.retryAfterMs);
    if (await isErased(ctx.sql, conversationId)) throw erasedConversation();
    res.locals.conversationId = conversationId;
    res.locals.mimeType = type;
    res.locals.name = name;
    next();
  };
  router.post("/", precheck, express.raw({ type: () => true, limit: maxBytes }), async (req, res) => {
    const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    if (bytes.length === 0)
      throw new HubError(400, "invalid_body", "the body is empty: send the file's bytes", [
        { field: "(body)", message: "empty" },
      ]);
    const upload = await storeUpload(ctx.sql, {
      conversationId: res.locals.conversationId as string,
      mimeType: res.locals.mimeType as string,
      name: res.locals.name as string | undefined,
      bytes,
      at: ctx.now(),
    });
    res.status(201).json({ upload });
  });
  // A body that turned out larger than declared (or declared nothing): body-parser's own refusal, named.
  router.use((error: unknown, _req: Request, _res: Response, next: NextFunction) =>
    next((error as { type?: string }).type === "entity.too.large" ? tooLarge(maxBytes) : error),
  );
  return router;
}

const tooLarge = (max: number) =>
  new HubError(413, "file_too_large", `the file is larger than WIDGET_UPLOAD_MAX_BYTES (${max} bytes)`, [
    { field: "(body)", message: `at most ${max} bytes` },
  ]);
