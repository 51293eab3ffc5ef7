// /v1/people/{identifier}/reach/whatsapp: the integrator records, reads and revokes where a verified widget
// person may be reached when a result waits unseen (src/conversations/person-reach.ts). The hub's key only: the
// consent is the integrator's record, never the person's own claim through the widget. Thin.
import { Router } from "express";
import { z } from "zod";
import { accountsOf } from "../../channels/meta/meta-accounts.js";
import type { HubContext } from "../../context.js";
import {
  reachIdentifier,
  readReach,
  recordWhatsappReach,
  revokeReach,
  whatsappReachBody,
} from "../../conversations/person-reach.js";
import { HubError, notFound } from "../../errors.js";
import { requireBearer } from "../auth.js";
import { parseInput } from "../validate.js";

export const reachParams = z.object({ identifier: reachIdentifier });

export function personReachRoutes(ctx: HubContext): Router {
  const router = Router();
  const agentOnly = requireBearer({ agent: ctx.config.secrets.hubApiKey });
  const identifierOf = (params: unknown) => parseInput(reachParams, params).identifier;

  router.put("/people/:identifier/reach/whatsapp", agentOnly, async (req, res) => {
    const identifier = identifierOf(req.params);
    const body = parseInput(whatsappReachBody, req.body);
    const served = accountsOf(ctx.config.meta.accounts, "whatsapp").map((account) => account.id);
    if (served.length === 0)
      throw new HubError(
        409,
        "whatsapp_not_configured",
        "this hub has no WhatsApp number (WA_PHONE_NUMBER_ID or META_ACCOUNTS) to reach the person from",
      );
    if (body.account !== undefined && !served.includes(body.account))
      throw new HubError(400, "invalid_request", "invalid account", [
        { field: "account", message: `expected one of this hub's WhatsApp numbers: ${served.join(", ")}` },
      ]);
    const { reach, created } = await recordWhatsappReach(
      ctx.sql,
      identifier,
      { contact: body.contact, account: body.account ?? served[0]!, consent: body.consent },
      ctx.now(),
    );
    ctx.log.info({ channel: "whatsapp", created }, "reach recorded");
    res.status(created ? 201 : 200).json({ reach });
  });

  router.get("/people/:identifier/reach/whatsapp", agentOnly, async (req, res) => {
    const reach = await readReach(ctx.sql, identifierOf(req.params), "whatsapp");
    if (!reach) throw notFound("reach");
    res.json({ reach });
  });

  router.delete("/people/:identifier/reach/whatsapp", agentOnly, async (req, res) => {
    const reach = await revokeReach(ctx.sql, identifierOf(req.params), "whatsapp", ctx.now());
    if (!reach) throw notFound("reach");
    ctx.log.info({ channel: "whatsapp" }, "reach revoked");
    res.json({ reach });
  });

  return router;
}
