// The team's private notes and canned replies (src/team/notes.ts, src/team/canned-replies.ts). Notes: the
// console's keys write and read them all; the agent runtime's key reads only those written for the agent, and
// writes none. Canned replies: every console key reads them; an admin's key (or the shared console key) changes
// them.
import { Router, type Response } from "express";
import { z } from "zod";
import type { HubContext } from "../../context.js";
import { HubError } from "../../errors.js";
import { deleteCannedReply, listCannedReplies, putCannedReply } from "../../team/canned-replies.js";
import { addNote, CONSOLE_AUTHOR, listNotes } from "../../team/notes.js";
import { memberOf, requireAdmin, requireBearer } from "../auth.js";
import { parseInput } from "../validate.js";

export const noteBody = z.object({
  text: z.string().trim().min(1).max(4000),
  forAgent: z
    .boolean()
    .default(false)
    .describe("given to the agent (as the hub's notice, never as the person's words); false: the team's eyes only"),
});

/** A shortcut people type after "/": letters, digits, `_` and `-`. */
export const cannedId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, "1 to 64 letters, digits, _ or -, starting with a letter or digit");

export const cannedReplyBody = z.object({
  title: z.string().trim().min(1).max(200),
  text: z
    .string()
    .trim()
    .min(1)
    .max(4000)
    .describe("may name {{name}}, {{agent}}, {{team}} and any variable the reply's sender gives"),
});

const forbidden = () => new HubError(403, "forbidden", "the agent runtime's key may only read notes written for it");

export function noteRoutes(ctx: HubContext): Router {
  const router = Router();
  const { consoleApiKey, hubApiKey } = ctx.config.secrets;
  const eitherKey = requireBearer({ human: consoleApiKey, agent: hubApiKey });
  const consoleOnly = requireBearer({ human: consoleApiKey });
  const isAgent = (res: Response) => res.locals.principal === "agent";

  router.get("/conversations/:id/notes", eitherKey, async (req, res) => {
    res.json({ notes: await listNotes(ctx.sql, req.params.id as string, { forAgentOnly: isAgent(res) }) });
  });

  router.post("/conversations/:id/notes", eitherKey, async (req, res) => {
    if (isAgent(res)) throw forbidden();
    const body = parseInput(noteBody, req.body);
    const member = memberOf(res);
    const note = await addNote(ctx, req.params.id as string, {
      text: body.text,
      forAgent: body.forAgent,
      author: member ? { id: member.id, name: member.name } : CONSOLE_AUTHOR,
    });
    res.status(201).json({ note });
  });

  router.get("/canned-replies", consoleOnly, async (_req, res) => {
    res.json({ cannedReplies: await listCannedReplies(ctx.sql) });
  });

  router.put("/canned-replies/:id", consoleOnly, requireAdmin, async (req, res) => {
    const id = parseInput(z.object({ id: cannedId }), req.params).id;
    const body = parseInput(cannedReplyBody, req.body);
    const { cannedReply, created } = await putCannedReply(ctx.sql, id, body, ctx.now());
    res.status(created ? 201 : 200).json({ cannedReply });
  });

  router.delete("/canned-replies/:id", consoleOnly, requireAdmin, async (req, res) => {
    if (!(await deleteCannedReply(ctx.sql, req.params.id as string)))
      throw new HubError(404, "not_found", "canned reply not found");
    res.status(204).end();
  });

  return router;
}
