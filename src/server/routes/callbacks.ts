// Tool backends post progress and results here; the token in the path is the only credential.
import express, { Router } from "express";
import type { HubContext } from "../../context.js";
import { HubError } from "../../errors.js";
import { verifyCallbackToken, type CallbackClaim } from "../../jobs/callback-token.js";
import { RESULT_MAX_BYTES } from "../../jobs/backend-call.js";
import { handleCallback, unknownJob } from "../../jobs/callbacks.js";
import { repairBody } from "../json-guard.js";
import { inRequestSpan, openRequestSpan } from "../../tracing/request-span.js";
import { inSpanSync } from "../../tracing/spans.js";

/** A result posted here is at most what a backend's answer may be (RESULT_MAX_BYTES, 1 MiB); larger: 413. */
export const CALLBACK_BODY_LIMIT = RESULT_MAX_BYTES;

export function callbackRoutes(ctx: HubContext): Router {
  const router = Router();
  router.post(
    "/:token",
    // The token is the only credential: checked before the body is read, so a stranger's body is never parsed.
    (req, res, next) => {
      // The callback's span: verify → commit → turn request (the token itself is never recorded).
      openRequestSpan(res, "callback");
      const claim = inRequestSpan(res, (callback) =>
        inSpanSync("callback.verify", {}, (span) => {
          const found = verifyCallbackToken(ctx.config.secrets.callbackSecret, req.params.token as string, ctx.now());
          span.setAttribute("hub.callback.valid", found !== undefined);
          if (found) callback?.setAttributes({ "hub.job.id": found.jobId, "hub.tool": found.tool ?? "" });
          return found;
        }),
      );
      if (!claim) return next(unknownJob());
      res.locals.claim = claim;
      next();
    },
    express.json({ limit: CALLBACK_BODY_LIMIT, type: () => true }),
    repairBody("invalid_body"),
    async (req, res) => {
      try {
        const answer = await inRequestSpan(res, () => handleCallback(ctx, res.locals.claim as CallbackClaim, req.body));
        ctx.metrics.callbacks.inc({ outcome: answer.duplicate ? "duplicate" : "accepted" });
        res.json(answer);
      } catch (error) {
        ctx.metrics.callbacks.inc({ outcome: error instanceof HubError ? error.code : "error" });
        throw error;
      }
    },
  );
  return router;
}
