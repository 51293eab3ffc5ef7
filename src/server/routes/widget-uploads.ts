// POST /widget/uploads: the person attaches a file in the widget. The raw body is the file, its type the
// Content-Type, its name `?name=`; the widget token (`Authorization: Bearer <token>`) says whose
// conversation it goes to. The token, the type, the declared length and the visitor's upload budgets
// (upload-budgets.ts) are checked before the body is read; the body is then stored as it arrives, never held
// whole (widget-uploads.ts), and cut off past WIDGET_UPLOAD_MAX_BYTES.
import { erasedConversation, isErased } from "../../conversations/erased.js";
import { Router, type NextFunction, type Request, type Response } from "express";
import { z } from "zod";
import { checkWidgetToken } from "../../channels/widget/widget-token.js";
import { conversationOfToken, startWidgetConversation } from "../../conversations/widget-sessions.js";
import type { HubContext } from "../../context.js";
import { storeUpload } from "../../conversations/widget-uploads.js";
import type { UploadVerdict } from "../../channels/widget/upload-budgets.js";
import { HubError } from "../../errors.js";
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
  const tokenOf = (req: Request) => {
    const header = req.get("authorization") ?? "";
    const token = header.startsWith("Bearer ") ? header.slice("Bearer ".length) : undefined;
    const check = checkWidgetToken(ctx.config.secrets.callbackSecret, token, ctx.now());
    if (check && "expired" in check)
      throw new HubError(401, "token_expired", "the widget token has expired: ask for a session again");
    if (!check) throw new HubError(401, "unauthorized", "Authorization: Bearer <widget token> is missing or not valid");
    return check;
  };
  const precheck = async (req: Request, res: Response, next: NextFunction) => {
    const token = tokenOf(req);
    let conversationId = token.conversationId;
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
    // Counted for the length declared; a body that declares none is counted as the largest allowed, and
    // what it did not use is given back once it is stored.
    const counted = Number.isFinite(declared) ? declared : maxBytes;
    const address = req.ip ?? "";
    const verdict = await ctx.limits.uploads.take(conversationId, address, counted);
    if (!verdict.ok) throw uploadLimited(verdict);
    if (await isErased(ctx.sql, conversationId)) throw erasedConversation();
    // A file is the person writing: the conversation a page view left unstarted is made now.
    const secret = ctx.config.secrets.callbackSecret;
    conversationId = await startWidgetConversation(ctx.sql, await conversationOfToken(ctx.sql, secret, token));
    res.locals.upload = { conversationId, mimeType: type, name, address, counted } satisfies Checked;
    next();
  };
  router.post("/", precheck, async (req, res) => {
    const checked = res.locals.upload as Checked;
    const stored = await storeUpload(ctx.sql, { ...checked, at: ctx.now() }, bodyOf(req), maxBytes, ctx.now).catch(
      (error: unknown) => {
        // The client went away mid-body: nothing was kept, and there is no one to answer.
        if (req.destroyed && !req.complete) return undefined;
        throw error;
      },
    );
    if (!stored) return;
    const unused = checked.counted - (stored.ok ? stored.upload.size : 0);
    await ctx.limits.uploads.giveBack(checked.conversationId, checked.address, unused);
    if (stored.ok) return void res.status(201).json({ upload: stored.upload });
    if (stored.reason === "too_large") {
      // The rest is read off and dropped (never kept), as body-parser did, so the answer reaches the client;
      // Node's requestTimeout bounds a body that never ends. The connection is not reused.
      res.set("Connection", "close");
      await drained(req);
      throw tooLarge(maxBytes);
    }
    throw new HubError(400, "invalid_body", "the body is empty: send the file's bytes", [
      { field: "(body)", message: "empty" },
    ]);
  });
  return router;
}

/** The body's chunks as they arrive; a body cut off before its end is an error, never a shorter file. */
async function* bodyOf(req: Request): AsyncGenerator<Uint8Array> {
  // Not destroyed when storing stops early: the refusal must still reach the client.
  for await (const chunk of req.iterator({ destroyOnReturn: false })) yield chunk as Uint8Array;
  if (!req.complete) throw new Error("the upload's body was cut off");
}

/** Once the rest of a body no one will store has been read and dropped. */
function drained(req: Request): Promise<void> {
  if (req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise<void>((resolve) => {
    req.once("end", resolve).once("close", resolve).once("error", resolve);
    req.on("data", () => undefined).resume();
  });
}

/** What the checks before the body found. */
interface Checked {
  conversationId: string;
  mimeType: string;
  name: string | undefined;
  address: string;
  /** The bytes counted against the budgets. */
  counted: number;
}

/** Past an upload limit: 429 naming the setting and what it counts, with when to try again. */
const uploadLimited = (verdict: Extract<UploadVerdict, { ok: false }>) =>
  new HubError(
    429,
    verdict.setting.includes("BYTES") ? "upload_budget_exceeded" : "rate_limited",
    `too many uploads: ${verdict.setting} (${verdict.counts}) is used up; try again later`,
    [{ field: verdict.setting, message: verdict.counts }],
    verdict.retryAfterMs,
  );

const tooLarge = (max: number) =>
  new HubError(413, "file_too_large", `the file is larger than WIDGET_UPLOAD_MAX_BYTES (${max} bytes)`, [
    { field: "(body)", message: `at most ${max} bytes` },
  ]);
