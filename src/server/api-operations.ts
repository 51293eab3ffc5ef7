// Every operation under /v1, with the zod schemas its route validates with and the views it answers with.
// The OpenAPI document is generated from this table; the OpenAPI test checks it against the mounted routes.
import { z } from "zod";
import { handoffSchema, turnReplySchema, turnRequestSchema } from "../agent/agent-port.js";
import {
  consoleConversationView,
  conversationSummaryView,
  conversationView,
  jobView,
  messageView,
  tombstoneView,
  noteView,
  cannedReplyView,
  toolView,
  toolReloadView,
} from "./api-views.js";
import { eraseBody } from "./routes/erasure.js";
import { cannedReplyBody, noteBody } from "./routes/notes.js";
import { reachView, whatsappReachBody } from "../conversations/person-reach.js";
import { assignBody, humanMessageBody, listQuery, takeoverBody } from "./routes/console.js";
import {
  agentMessageBody,
  approvalBody,
  cancelBody,
  createConversationBody,
  jobMessageBody,
  jobQuery,
  jobsQuery,
  messagesQuery,
  toolCallBody,
} from "./routes/v1.js";

/** `member`: a team member's own key (src/team/member-keys.ts). */
export type ApiKey = "agent" | "console" | "member";

export interface ApiResponse {
  description: string;
  schema?: z.ZodType;
}

export interface ApiOperation {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** Express-style, relative to /v1: `/conversations/:id`. */
  path: string;
  summary: string;
  description?: string;
  keys: ApiKey[];
  query?: z.ZodObject;
  body?: z.ZodType;
  bodyOptional?: true;
  /** Success answers; the error answers every operation shares are added by the document. */
  responses: Record<number, ApiResponse>;
  /** Error answers particular to this operation (each is an `Error`). */
  errors?: Record<number, string>;
}

export const toolResult = z
  .object({ message: z.string().optional(), data: z.unknown() })
  .describe("a synchronous tool's answer, mapped by its tool file's `respond`");
const timeline = z.object({
  conversation: consoleConversationView,
  messages: z.array(messageView),
  held: z.array(
    messageView.extend({ heldSince: z.iso.datetime({ offset: true }).describe("when it was held for the person") }),
  ),
  jobs: z.array(jobView),
});

const isoTime = z.iso.datetime({ offset: true });
const named = z.object({ id: z.string(), name: z.string() });
const handoffOutcomeView = z.object({
  status: z
    .enum(["assigned", "queued", "closed", "unchanged"])
    .describe(
      "assigned: a member has it; queued: waiting for someone available; closed: the team is closed, the agent " +
        "keeps the conversation until opensAt; unchanged: it already was with the team",
    ),
  team: named.nullable(),
  assignee: named.nullable(),
  queuedAt: isoTime.nullable(),
  opensAt: isoTime.nullable().describe("when the closed team opens (and the conversation becomes its)"),
  awayMessageSent: z.boolean().describe("the team's out-of-office message went to the person with this hand-off"),
});

export const apiOperations: ApiOperation[] = [
  {
    method: "post",
    path: "/conversations",
    summary: "Find or create the conversation of a contact on a channel",
    keys: ["agent"],
    body: createConversationBody,
    responses: {
      201: { description: "created", schema: z.object({ conversation: conversationView }) },
      200: { description: "it already existed", schema: z.object({ conversation: conversationView }) },
    },
  },
  {
    method: "get",
    path: "/conversations/:id",
    summary: "A conversation, with who has control and whether its window is open",
    keys: ["agent"],
    responses: { 200: { description: "the conversation", schema: z.object({ conversation: conversationView }) } },
    errors: { 404: "no such conversation" },
  },
  {
    method: "get",
    path: "/conversations/:id/messages",
    summary: "The timeline, oldest first, with each message's delivery status",
    keys: ["agent"],
    query: messagesQuery,
    responses: { 200: { description: "messages", schema: z.object({ messages: z.array(messageView) }) } },
    errors: { 404: "no such conversation" },
  },
  {
    method: "post",
    path: "/conversations/:id/messages",
    summary: "Say something to the person as the agent (recorded, then routed like any reply)",
    keys: ["agent"],
    body: agentMessageBody,
    responses: { 201: { description: "recorded and queued", schema: z.object({ message: messageView }) } },
    errors: { 404: "no such conversation", 410: "the conversation was erased (erased)" },
  },
  {
    method: "post",
    path: "/conversations/:id/tool-calls",
    summary: "Start a tool call: a job for an async tool, the answer for a synchronous one",
    description:
      "The agent runtime starts tools itself, during or outside a turn. An async tool's backend answers 202 " +
      "and the job runs; its result arrives later as a `tool_result` input of a turn. The same toolCallId " +
      "twice starts one job (`deduplicated`).",
    keys: ["agent"],
    body: toolCallBody,
    responses: {
      202: {
        description: "the job runs (or already ran for this toolCallId)",
        schema: z.object({ job: jobView, message: z.string().nullable(), deduplicated: z.literal(true).optional() }),
      },
      200: { description: "a synchronous tool's answer", schema: z.object({ result: toolResult }) },
    },
    errors: {
      404: "no such conversation or tool",
      410: "the conversation was erased (erased)",
      429: "too many jobs running in this conversation",
      502: "the tool's backend refused or failed",
    },
  },
  {
    method: "get",
    path: "/conversations/:id/jobs",
    summary: "A conversation's jobs, each with its latest progress",
    keys: ["agent"],
    query: jobsQuery,
    responses: { 200: { description: "jobs", schema: z.object({ jobs: z.array(jobView) }) } },
    errors: { 404: "no such conversation" },
  },
  {
    method: "get",
    path: "/jobs/:id",
    summary: "A job with all its progress and, once ended, its result or error",
    description:
      "With `waitMs` (0–30000) the answer waits until the job has ended — succeeded, failed, timed out, " +
      "cancelled — or until that many milliseconds have passed, and gives the job as it is then: `status` " +
      "tells which. A result posted to any hub process wakes waiters on every process.",
    keys: ["agent"],
    query: jobQuery,
    responses: { 200: { description: "the job", schema: z.object({ job: jobView }) } },
    errors: { 404: "no such job" },
  },
  {
    method: "post",
    path: "/jobs/:id/cancel",
    summary: "Call a running job off; its backend gets the tool's cancel request",
    description: "With the console key, `{agent: {id, name}}` records who cancelled it (the body is optional).",
    keys: ["agent", "console"],
    body: cancelBody,
    bodyOptional: true,
    responses: { 200: { description: "the job, now cancelled", schema: z.object({ job: jobView }) } },
    errors: { 404: "no such job", 409: "the job has already ended" },
  },
  {
    method: "post",
    path: "/jobs/:id/messages",
    summary: "Give a running job a message (the person's follow-up); the backend's answer comes back",
    description:
      "Sent at once to the tool's `async.message` request, the text in its JSON body. Nothing is stored: " +
      "the answer is the backend's status and body.",
    keys: ["agent"],
    body: jobMessageBody,
    responses: {
      200: {
        description: "the job, and the backend's answer",
        schema: z.object({ job: jobView, answer: z.object({ status: z.number().int(), body: z.unknown() }) }),
      },
    },
    errors: {
      404: "no such job",
      409: "the job has ended, or its tool takes no messages",
      502: "the backend failed or refused the message",
    },
  },
  {
    method: "post",
    path: "/jobs/:id/approval",
    summary: "Approve or refuse a call that waits for the team's approval",
    description:
      "A tool file's `approval: team`: the call's backend hears nothing before `approve`. `refuse` ends the call " +
      "(`refused`) and the agent tells the person. `{agent: {id, name}}` records who decided.",
    keys: ["console"],
    body: approvalBody,
    responses: { 200: { description: "the job, now running or refused", schema: z.object({ job: jobView }) } },
    errors: { 404: "no such job", 409: "the call is not waiting for the team's approval" },
  },
  {
    method: "post",
    path: "/tools/reload",
    summary: "Reads the tool files again, here and in every other hub process (`hub tools reload`)",
    description:
      "The new set replaces the one in force only if every file validates; otherwise `outcome` is `refused`, " +
      "`problems` says why, and the previous tools stay in force. Running jobs keep the definition they started with.",
    keys: ["agent"],
    responses: { 200: { description: "what the reload did", schema: toolReloadView } },
  },
  {
    method: "get",
    path: "/tools",
    summary: "The tools the hub knows, with their argument schemas",
    keys: ["agent"],
    responses: { 200: { description: "tools", schema: z.object({ tools: z.array(toolView) }) } },
  },
  {
    method: "get",
    path: "/conversations",
    summary: "Conversations, most recently active first, with held and waiting counts",
    keys: ["console", "agent"],
    query: listQuery,
    responses: {
      200: { description: "conversations", schema: z.object({ conversations: z.array(conversationSummaryView) }) },
    },
  },
  {
    method: "get",
    path: "/conversations/:id/timeline",
    summary: "Everything about a conversation: messages with decisions and reasons, held items, jobs",
    keys: ["console", "agent"],
    responses: { 200: { description: "the timeline", schema: timeline } },
    errors: { 404: "no such conversation" },
  },
  {
    method: "post",
    path: "/conversations/:id/takeover",
    summary: "A human takes the conversation over: results are held until hand-back",
    keys: ["console"],
    body: takeoverBody,
    responses: { 200: { description: "control is human", schema: z.object({ conversation: conversationView }) } },
    errors: {
      400: "the shared console key names no `agent`",
      404: "no such conversation",
      409: "another human has it (already_taken); a member's key: it is assigned to someone else (assigned_to_other)",
      410: "the conversation was erased (erased)",
    },
  },
  {
    method: "post",
    path: "/conversations/:id/handoff",
    summary: "Hand the conversation to a support team (a runtime's or a rule's hand-off)",
    description:
      "The conversation goes to the team named (its id; none, or an unknown one, is the default team) and is " +
      "assigned to an available member, or waits in the team's queue. A closed team (its business hours) leaves " +
      "it with the agent until `handoff.opensAt`, and the person is sent the team's out-of-office message once: " +
      "the agent should keep helping meanwhile. A conversation already with the team is `unchanged`.",
    keys: ["agent", "console"],
    body: handoffSchema,
    responses: {
      200: {
        description: "what became of it",
        schema: z.object({ conversation: conversationView, handoff: handoffOutcomeView }),
      },
    },
    errors: { 404: "no such conversation", 410: "the conversation was erased (erased)" },
  },
  {
    method: "post",
    path: "/conversations/:id/assign",
    summary: "Move the conversation to a member, or back to a team's queue (admins)",
    description:
      "An admin's member key, or the shared console key. `member: null` puts it back in the queue of its team " +
      "(or of `team`), where it is assigned to someone else available.",
    keys: ["console"],
    body: assignBody,
    responses: { 200: { description: "moved", schema: z.object({ conversation: conversationView }) } },
    errors: {
      400: "no such member or team",
      403: "a member's key without the admin role",
      404: "no such conversation",
      409: "no team whose queue it could go to (no_team)",
      410: "the conversation was erased (erased)",
    },
  },
  {
    method: "post",
    path: "/conversations/:id/handback",
    summary: "Give the conversation back to the agent: one turn runs with every held item",
    keys: ["console"],
    responses: { 200: { description: "control is agent", schema: z.object({ conversation: conversationView }) } },
    errors: { 404: "no such conversation", 410: "the conversation was erased (erased)" },
  },
  {
    method: "post",
    path: "/conversations/:id/close",
    summary: "Close the conversation: nothing automated reaches the person until they write again",
    description:
      "A human who had the conversation lets go of it. Results and failures not given yet expire " +
      "(`conversation_closed`), as does every result that arrives while it is closed; the agent gets each as a " +
      "`tool_expired` input with the person's next message, which reopens the conversation. Progress and the " +
      "agent's replies not yet sent are dropped. Closing a closed conversation changes nothing.",
    keys: ["console", "agent"],
    responses: { 200: { description: "closed", schema: z.object({ conversation: conversationView }) } },
    errors: { 404: "no such conversation", 410: "the conversation was erased (erased)" },
  },
  {
    method: "post",
    path: "/conversations/:id/human-messages",
    summary: "The human's reply, routed as it is (never held)",
    description:
      "`text`, or `canned` (a canned reply's shortcut) with the `variables` its text needs beyond {{name}}, " +
      "{{agent}} and {{team}}: a variable left without a value is refused (400, `variables.<name>`). The reply stops " +
      "the team's response clock.",
    keys: ["console"],
    body: humanMessageBody,
    responses: { 201: { description: "recorded and queued", schema: z.object({ message: messageView }) } },
    errors: {
      404: "no such conversation",
      409: "the channel's window is closed (window_closed)",
      410: "the conversation was erased (erased)",
    },
  },
  {
    method: "get",
    path: "/conversations/:id/notes",
    summary: "The team's private notes on a conversation, oldest first",
    description:
      "Notes are never sent to the person. The console's keys read them all; the agent runtime's key reads only " +
      "those written for the agent (`forAgent`), which also come in its turns' `notes`.",
    keys: ["console", "agent"],
    responses: { 200: { description: "the notes", schema: z.object({ notes: z.array(noteView) }) } },
    errors: { 404: "no such conversation", 410: "the conversation was erased (erased)" },
  },
  {
    method: "post",
    path: "/conversations/:id/notes",
    summary: "Write a private note: never sent to the person; given to the agent only when forAgent",
    description:
      'Signed by the member whose key wrote it (`{id: "console", name: "Console"}` for the shared console key); ' +
      "every console hears it (`note`). The agent runtime's key may not write notes (403).",
    keys: ["console"],
    body: noteBody,
    responses: { 201: { description: "written", schema: z.object({ note: noteView }) } },
    errors: {
      403: "the agent runtime's key (forbidden)",
      404: "no such conversation",
      410: "the conversation was erased (erased)",
    },
  },
  {
    method: "get",
    path: "/canned-replies",
    summary: "The canned replies, by shortcut, with the variables each names",
    keys: ["console"],
    responses: {
      200: { description: "the canned replies", schema: z.object({ cannedReplies: z.array(cannedReplyView) }) },
    },
  },
  {
    method: "put",
    path: "/canned-replies/:id",
    summary: "Create or replace a canned reply (an admin's key, or the shared console key)",
    description:
      "Its text may name {{name}} (the person's name, else the console's label), {{agent}} (the replying member), " +
      "{{team}} (the conversation's team, else the default team) and any variable the sender gives " +
      "(`POST /conversations/{id}/human-messages` with `canned` and `variables`).",
    keys: ["console"],
    body: cannedReplyBody,
    responses: {
      200: { description: "replaced", schema: z.object({ cannedReply: cannedReplyView }) },
      201: { description: "created", schema: z.object({ cannedReply: cannedReplyView }) },
    },
    errors: { 403: "a member's key without the admin role (forbidden)" },
  },
  {
    method: "delete",
    path: "/canned-replies/:id",
    summary: "Delete a canned reply (an admin's key, or the shared console key)",
    keys: ["console"],
    responses: { 204: { description: "deleted" } },
    errors: { 403: "a member's key without the admin role (forbidden)", 404: "no such canned reply" },
  },
  {
    method: "post",
    path: "/conversations/:id/erase",
    summary: "Erase the person's data; the conversation stays as a tombstone",
    description:
      "Deletes the conversation's messages (every role), the team's private notes on it, its jobs with their arguments, results and progress, " +
      "turn inputs, uploads, push devices, outgoing events, the person's recorded reach (its consent with it) and " +
      "the Meta webhook deliveries that carry the person's messages; the name and contact details go (the " +
      "contact becomes `erased:<id>`, so the person writing again starts a new conversation). One transaction, " +
      "with one `conversation.erased` event. " +
      "Afterwards a late result for one of its jobs is answered 410 and never delivered, and tool calls, " +
      "messages and widget sessions for it are refused (410). Erasing again answers the same tombstone.",
    keys: ["console", "agent"],
    body: eraseBody,
    bodyOptional: true,
    responses: { 200: { description: "erased (or already erased)", schema: z.object({ erasure: tombstoneView }) } },
    errors: { 404: "no such conversation" },
  },
  {
    method: "put",
    path: "/people/:identifier/reach/whatsapp",
    summary: "Record that a verified widget person may be reached on WhatsApp, with their consent",
    description:
      "`identifier` is the integrator's user id, the one a widget session proves with `identifierHash`. A result " +
      "left unseen in that person's widget conversation for ESCALATE_AFTER is then sent to this number, once " +
      "(docs/escalation.md). Recording again replaces the number or the consent; after a revocation it gives " +
      "the consent again. Only results stored after the consent was recorded are escalated.",
    keys: ["agent"],
    body: whatsappReachBody,
    responses: {
      201: { description: "recorded", schema: z.object({ reach: reachView }) },
      200: { description: "replaced (or recorded again)", schema: z.object({ reach: reachView }) },
    },
    errors: { 409: "the hub has no WhatsApp number (whatsapp_not_configured)" },
  },
  {
    method: "get",
    path: "/people/:identifier/reach/whatsapp",
    summary: "The person's WhatsApp reach and the consent recorded for it (revoked ones too)",
    keys: ["agent"],
    responses: { 200: { description: "the reach", schema: z.object({ reach: reachView }) } },
    errors: { 404: "none recorded for this person" },
  },
  {
    method: "delete",
    path: "/people/:identifier/reach/whatsapp",
    summary: "Revoke it: nothing more is escalated to WhatsApp; the record of the consent stays until erasure",
    keys: ["agent"],
    responses: { 200: { description: "revoked (or already revoked)", schema: z.object({ reach: reachView }) } },
    errors: { 404: "none recorded for this person" },
  },
];

/** The turn request the hub posts to AGENT_URL: an OpenAPI webhook. */
export const agentTurnWebhook = { request: turnRequestSchema, reply: turnReplySchema };

/** Statuses every operation may answer with, besides its own. */
export const commonErrors: Record<number, string> = {
  400: "a field is invalid (invalid_request, naming each field)",
  401: "no key, or not a key for this operation",
  429:
    "rate limited; or too_many_failed_authentications: more than AUTH_FAILURES_PER_MINUTE wrong keys came " +
    "from the caller's address, and every key from it is refused until Retry-After has passed",
  503: "the store is unavailable (store_unavailable); retry",
};
