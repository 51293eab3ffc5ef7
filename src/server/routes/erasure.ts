// POST /v1/conversations/{id}/erase: the person's data goes, the conversation stays as a tombstone
// (src/conversations/erasure.ts). The console key or the agent key; which one is recorded, never the key.
import { Router } from "express";
import { z } from "zod";
import type { HubContext } from "../../context.js";
import { eraseConversation } from "../../conversations/erasure.js";
import { isUuid } from "../../conversations/conversations.js";
import { HubError, notFound } from "../../errors.js";
import { keyIdOf, requireBearer, type Principal } from "../auth.js";
import { disconnectConversation } from "../sockets/widget-namespace.js";
import { parseInput } from "../validate.js";

export const eraseBody = z.strictObject({
  reason: z
    .string()
    .trim()
    .min(1)
    .max(500)
    .optional()
    .describe("why, for the record (kept in the tombstone: write nothing of the person here)"),
});

export function erasureRoutes(ctx: HubContext): Router {
  const router = Router();
  const { hubApiKey, consoleApiKey } = ctx.config.secrets;
  router.post(
    "/conversations/:id/erase",
    requireBearer({ agent: hubApiKey, human: consoleApiKey }),
    async (req, res) => {
      const id = req.params.id as string;
      if (!isUuid(id))
        throw new HubError(400, "invalid_request", "invalid id", [
          { field: "id", message: "expected a conversation id (a UUID)" },
        ]);
      const body = parseInput(eraseBody, req.body);
      const principal = res.locals.principal as Principal;
      const outcome = await eraseConversation(ctx, id, {
        by: principal === "human" ? "console" : "agent",
        keyId: principal === "human" ? keyIdOf("CONSOLE_API_KEY", consoleApiKey) : keyIdOf("HUB_API_KEY", hubApiKey),
        reason: body.reason,
      });
      if (!outcome) throw notFound("conversation");
      if (outcome.erased) {
        ctx.log.info({ conversation_id: id, by: outcome.tombstone.by }, "conversation erased");
        // Open widget sockets of the conversation, on every process, are closed: nothing more is pushed to them.
        disconnectConversation(ctx, id);
      }
      res.json({ erasure: outcome.tombstone });
    },
  );
  return router;
}
