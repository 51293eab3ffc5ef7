// The support team's API: members (each with a key of their own) and teams. Reading is for any console key (the
// shared one or a member's); changing is for admins and the shared key; a member may set their own availability.
// The agent runtime's key may only list the teams.
import { Router, type NextFunction, type Request, type Response } from "express";
import { z } from "zod";
import type { HubContext } from "../../context.js";
import { HubError } from "../../errors.js";
import {
  availabilityBody,
  createMember,
  createMemberBody,
  disableMember,
  getMember,
  handle,
  listMembers,
  rotateMemberKey,
  updateMember,
  updateMemberBody,
  type MemberStoreDeps,
} from "../../team/members.js";
import { withPresence } from "../../team/presence.js";
import { deleteTeam, getTeam, listTeams, putTeam, putTeamBody } from "../../team/teams.js";
import { memberOf, requireAdmin } from "../auth.js";
import { disconnectMember } from "../sockets/console-namespace.js";
import { parseInput } from "../validate.js";

const forbidden = (sentence: string) => new HubError(403, "forbidden", sentence);

/** A console's key, shared or a member's: the agent runtime's key is refused (403). */
function requireConsole(_req: Request, res: Response, next: NextFunction) {
  if (res.locals.principal === "human") return next();
  next(forbidden("a console key (the shared one or a member's) is needed for this"));
}

const params = z.object({ id: handle });
const idOf = (req: Request) => parseInput(params, req.params).id;

export function teamRoutes(ctx: HubContext): Router {
  const router = Router();
  const store: MemberStoreDeps = {
    sql: ctx.sql,
    now: ctx.now,
    offlineAfterMs: ctx.config.team.memberOfflineAfterMs,
  };

  router.get("/members", requireConsole, async (_req, res) => {
    res.json({ members: await listMembers(store) });
  });

  router.post("/members", requireAdmin, async (req, res) => {
    res.status(201).json(await createMember(store, parseInput(createMemberBody, req.body)));
  });

  router.get("/members/:id", requireConsole, async (req, res) => {
    res.json({ member: await getMember(store, req.params.id as string) });
  });

  // Admins change anything; a member changes only their own availability.
  router.patch("/members/:id", requireConsole, async (req, res) => {
    const id = req.params.id as string;
    const self = memberOf(res);
    const admin = !self || self.role === "admin";
    if (!admin && self.id !== id) throw forbidden("only an admin changes another member");
    const body = parseInput(updateMemberBody, req.body);
    if (!admin && Object.keys(body).some((field) => field !== "availability"))
      throw forbidden("a member changes only their own availability; the rest is an admin's");
    res.json({ member: await withPresence(ctx, id, (deps) => updateMember(deps, id, body)) });
  });

  // Consoles opened with the old key (or by a disabled member) are closed: they would keep hearing everything.
  router.post("/members/:id/key", requireAdmin, async (req, res) => {
    const rotated = await rotateMemberKey(store, req.params.id as string);
    disconnectMember(ctx, rotated.member.id);
    res.json(rotated);
  });

  router.delete("/members/:id", requireAdmin, async (req, res) => {
    const id = req.params.id as string;
    const member = await withPresence(ctx, id, (deps) => disableMember(deps, id));
    disconnectMember(ctx, id);
    res.json({ member });
  });

  router.get("/me", requireConsole, async (_req, res) => {
    const self = memberOf(res);
    res.json({ member: self ? await getMember(store, self.id) : null });
  });

  router.put("/me/availability", requireConsole, async (req, res) => {
    const self = memberOf(res);
    if (!self) throw forbidden("the shared console key is nobody's: use a member's own key");
    const { availability } = parseInput(availabilityBody, req.body);
    res.json({ member: await withPresence(ctx, self.id, (deps) => updateMember(deps, self.id, { availability })) });
  });

  // The agent runtime may list the teams, to name one when it hands a conversation off.
  router.get("/teams", async (_req, res) => {
    res.json({ teams: await listTeams(ctx) });
  });

  router.get("/teams/:id", requireConsole, async (req, res) => {
    res.json({ team: await getTeam(ctx, req.params.id as string) });
  });

  router.put("/teams/:id", requireAdmin, async (req, res) => {
    const id = idOf(req);
    const { team, created } = await putTeam(ctx, id, parseInput(putTeamBody, req.body));
    res.status(created ? 201 : 200).json({ team });
  });

  router.delete("/teams/:id", requireAdmin, async (req, res) => {
    res.json({ team: await deleteTeam(ctx, req.params.id as string) });
  });

  return router;
}
