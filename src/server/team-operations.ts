// The support team's operations under /v1 (src/server/routes/team.ts), for the OpenAPI document.
import { z } from "zod";
import type { ApiOperation } from "./api-operations.js";
import { availabilityBody, createMemberBody, memberView, updateMemberBody } from "../team/members.js";
import { putTeamBody, teamView } from "../team/teams.js";

const member = z.object({ member: memberView });
const memberWithKey = z.object({
  member: memberView,
  key: z.string().describe("the member's own key (hubm_…): shown this once, only its SHA-256 is kept"),
});
const team = z.object({ team: teamView });
const adminOnly = "a member's key without the admin role, or the agent runtime's key (forbidden)";
const consoleOnly = "the agent runtime's key (forbidden)";

export const teamOperations: ApiOperation[] = [
  {
    method: "get",
    path: "/members",
    summary: "The team's members, disabled ones too, with their availability in effect and their load",
    keys: ["console", "member"],
    responses: { 200: { description: "members", schema: z.object({ members: z.array(memberView) }) } },
    errors: { 403: consoleOnly },
  },
  {
    method: "post",
    path: "/members",
    summary: "Add a member; their key is in the answer and nowhere else",
    keys: ["console", "member"],
    body: createMemberBody,
    responses: { 201: { description: "added", schema: memberWithKey } },
    errors: { 403: adminOnly, 409: "the id is taken (member_exists), by a disabled member too" },
  },
  {
    method: "get",
    path: "/members/:id",
    summary: "A member",
    keys: ["console", "member"],
    responses: { 200: { description: "the member", schema: member } },
    errors: { 403: consoleOnly, 404: "no such member" },
  },
  {
    method: "patch",
    path: "/members/:id",
    summary: "Change a member's name, role, capacity, availability or teams",
    description: "An admin changes anyone; a member changes only their own `availability`.",
    keys: ["console", "member"],
    body: updateMemberBody,
    responses: { 200: { description: "changed", schema: member } },
    errors: { 403: "not an admin, and not only their own availability", 404: "no such member" },
  },
  {
    method: "post",
    path: "/members/:id/key",
    summary: "A new key for the member; the old one stops working within seconds",
    keys: ["console", "member"],
    responses: { 200: { description: "the new key", schema: memberWithKey } },
    errors: { 403: adminOnly, 404: "no such member" },
  },
  {
    method: "delete",
    path: "/members/:id",
    summary: "Disable a member: their key stops working; the record of them stays",
    keys: ["console", "member"],
    responses: { 200: { description: "disabled (or already disabled)", schema: member } },
    errors: { 403: adminOnly, 404: "no such member" },
  },
  {
    method: "get",
    path: "/me",
    summary: "The member whose key this is (null for the shared console key)",
    keys: ["console", "member"],
    responses: { 200: { description: "who", schema: z.object({ member: memberView.nullable() }) } },
    errors: { 403: consoleOnly },
  },
  {
    method: "put",
    path: "/me/availability",
    summary: "Set one's own availability: online, busy (takes no new conversations) or offline",
    keys: ["member"],
    body: availabilityBody,
    responses: { 200: { description: "set", schema: member } },
    errors: { 403: "the shared console key or the agent runtime's key: neither is a member's" },
  },
  {
    method: "get",
    path: "/teams",
    summary: "The teams, with whether each is open, its members and how many conversations wait in its queue",
    keys: ["console", "member", "agent"],
    responses: { 200: { description: "teams", schema: z.object({ teams: z.array(teamView) }) } },
  },
  {
    method: "get",
    path: "/teams/:id",
    summary: "A team",
    keys: ["console", "member"],
    responses: { 200: { description: "the team", schema: team } },
    errors: { 403: consoleOnly, 404: "no such team" },
  },
  {
    method: "put",
    path: "/teams/:id",
    summary: "Create or replace a team",
    description:
      "Fields left out take their defaults, except `members`, which stay as they are. `isDefault: true` takes " +
      'the default from the team that had it. `hours`: `{timeZone, weekly: {mon: [["09:00", "17:00"]], …}, ' +
      'holidays: ["2026-12-25"]}`.',
    keys: ["console", "member"],
    body: putTeamBody,
    responses: {
      201: { description: "created", schema: team },
      200: { description: "replaced", schema: team },
    },
    errors: { 403: adminOnly },
  },
  {
    method: "delete",
    path: "/teams/:id",
    summary: "Delete a team and its memberships",
    keys: ["console", "member"],
    responses: { 200: { description: "deleted", schema: team } },
    errors: { 403: adminOnly, 404: "no such team" },
  },
];
