// The shapes the API answers with, as zod schemas: the OpenAPI document is generated from them, and the
// OpenAPI test checks real answers against them, so the document cannot drift from what the hub sends.
import { z } from "zod";
import { CHANNELS } from "../delivery/channel.js";

const isoTime = z.iso.datetime({ offset: true });

const attachmentView = z.object({
  url: z.string(),
  name: z.string().optional(),
  mimeType: z.string().optional(),
  caption: z.string().optional(),
  size: z.number().int().optional().describe("a file the person sent: bytes, when known"),
});
const buttonView = z.object({ title: z.string(), payload: z.string().optional(), reusable: z.boolean().optional() });

export const errorView = z.object({
  error: z.object({
    code: z.string().describe("machine-readable: invalid_request, not_found, unauthorized, rate_limited, …"),
    message: z.string(),
    details: z
      .array(z.object({ field: z.string(), message: z.string() }))
      .optional()
      .describe("for invalid_request: each field that failed and why"),
  }),
});

/** What is left of an erased conversation: when, by whom (which kind of key, a non-secret id of it), why. */
export const tombstoneView = z.object({
  conversationId: z.uuid(),
  channel: z.enum(CHANNELS),
  erasedAt: isoTime,
  by: z.enum(["console", "agent", "cli"]),
  keyId: z.string().optional().describe("which key: its setting and the first 12 hex digits of its SHA-256"),
  reason: z.string().optional(),
});

export const conversationView = z.object({
  id: z.uuid(),
  channel: z.enum(CHANNELS),
  account: z.string().describe("Meta channels: the hub's number, account or page the person writes to"),
  contact: z
    .string()
    .describe(
      "widget: a label of the visitor id (anon-…, never the id) or the identifier an integrator verified; " +
        "WhatsApp wa_id or business-scoped id; Instagram/Messenger id",
    ),
  name: z.string().nullable(),
  control: z.enum(["agent", "human"]),
  humanAgent: z.unknown().describe("who has taken over ({id, name}), while control is human"),
  window: z.object({
    open: z.boolean().describe("whether a free-form message can reach the person now"),
    closesAt: isoTime.nullable(),
  }),
  lastInboundAt: isoTime.nullable(),
  closedAt: isoTime
    .nullable()
    .describe("when the agent or a human closed it; null while open (the person writing again reopens it)"),
  handoff: z
    .object({ at: isoTime, reason: z.string().nullable() })
    .nullable()
    .describe("the LLM agent handed the conversation to the team (hand-off-to-human): waiting for a person"),
  erasure: tombstoneView
    .nullable()
    .describe("erased (POST /v1/conversations/{id}/erase): the person's data is gone and this is what is left"),
  team: z
    .object({ id: z.string(), name: z.string() })
    .nullable()
    .describe("the support team it was handed to (the one named, else the default team)"),
  assignee: z.object({ id: z.string(), name: z.string() }).nullable().describe("the team member it is assigned to"),
  assignedAt: isoTime.nullable(),
  queuedAt: isoTime.nullable().describe("waiting in the team's queue with nobody on it, since then"),
  opensAt: isoTime
    .nullable()
    .describe("the team was closed at the hand-off: the agent keeps the conversation until this opening"),
  clock: z
    .object({
      kind: z.enum(["first", "next"]),
      dueAt: isoTime,
      breachedAt: isoTime.nullable().describe("when the sweep found it past due; null while on time"),
    })
    .nullable()
    .describe("what the support team owes the person (a first or next response) and by when; null: nothing"),
  createdAt: isoTime,
});

export const messageView = z.object({
  id: z.uuid(),
  conversationId: z.uuid(),
  role: z.string().describe("user, agent, human, tool_call, tool_result, progress, system or event"),
  text: z.string().nullable(),
  data: z.unknown(),
  jobId: z.uuid().nullable(),
  toolCallId: z.string().nullable(),
  status: z.string().nullable().describe("delivery status: pending, held, sent, delivered, read, failed, expired, …"),
  decision: z
    .string()
    .nullable()
    .describe("the router's decision: live, stored, held, channel, template, …; expired for a stale result"),
  statusReason: z.string().nullable(),
  attachments: z
    .array(attachmentView)
    .optional()
    .describe(
      "files the message carries, absent for none: an outgoing message's links (the hub does not fetch them), " +
        "or the person's files as the hub's `/media/<token>` URLs (they expire, MEDIA_URL_TTL; read the list again)",
    ),
  buttons: z.array(buttonView).optional().describe("choices offered with the message; absent for none"),
  editedAt: isoTime.optional(),
  edits: z.unknown().optional().describe("earlier texts of an edited message"),
  deletedAt: isoTime.optional(),
  reaction: z.unknown().optional(),
  escalatedTo: z
    .string()
    .optional()
    .describe("a widget result left unseen and sent to the person on this channel (whatsapp); absent otherwise"),
  escalatedAt: isoTime.optional(),
  createdAt: isoTime,
});

export const jobView = z.object({
  id: z.uuid(),
  conversationId: z.uuid(),
  tool: z.string(),
  toolCallId: z.string().nullable(),
  status: z.enum(["awaiting_approval", "running", "succeeded", "failed", "timed_out", "cancelled", "refused"]),
  arguments: z.unknown(),
  message: z.string().nullable().describe("what the backend said when it accepted the job"),
  progress: z.array(z.object({ text: z.string(), notify: z.boolean(), at: isoTime })),
  result: z.unknown(),
  attachments: z.array(attachmentView).describe("files the result carries (the callback's `attachments`)"),
  error: z.string().nullable(),
  timeoutAt: isoTime,
  attempt: z.number().int().min(1).describe("1, or 2, 3 … for a job that ran again after a lost attempt"),
  rerunOf: z.uuid().nullable().describe("a re-run: the first job of the chain, the one the agent started"),
  rerunAs: z.uuid().nullable().describe("a lost job that ran again: the job that took its place"),
  approval: z
    .object({
      by: z.enum(["person", "team"]),
      decision: z
        .object({
          decision: z.enum(["approved", "refused", "timed_out"]),
          by: z.object({ kind: z.enum(["person", "team", "agent", "hub"]) }).loose(),
          at: isoTime,
          note: z.string().optional(),
        })
        .nullable(),
    })
    .nullable()
    .describe("a call that waited for a yes (the tool file's `approval`): whose, and what was decided"),
  correctedResult: z
    .unknown()
    .describe(
      "a different result (or error) posted after the job had ended, `{status, result, error, attachments}`: " +
        "recorded, the first result stands; null when none came",
    ),
  correctedAt: isoTime.nullable().describe("when that different result came"),
  createdAt: isoTime,
  endedAt: isoTime.nullable(),
  charges: z
    .object({
      messages: z.number().int().describe("messages sent for the job that Meta reported pricing for"),
      billable: z.number().int().describe("of those, the ones Meta said it bills"),
      by_category: z.record(z.string(), z.number().int()).describe("messages by Meta's pricing category"),
    })
    .optional()
    .describe(
      "WhatsApp: what Meta reported charging for the messages sent for the job (its template, its result's " +
        "reply), from the statuses' `pricing`, each message once; GET /v1/jobs/{id} only",
    ),
});

export const toolView = z.object({
  name: z.string(),
  description: z.string(),
  when_to_use: z.string().nullable(),
  parameters: z.unknown().describe("JSON Schema of the arguments"),
  async: z.union([
    z.literal(false),
    z.object({ timeoutSeconds: z.number(), cancellable: z.boolean(), takesMessages: z.boolean() }),
  ]),
  approval: z
    .object({ by: z.enum(["person", "team"]), timeoutSeconds: z.number() })
    .nullable()
    .describe("who must say yes before a call is made, and how long it waits"),
});

export const toolReloadView = z.object({
  outcome: z
    .enum(["applied", "unchanged", "refused"])
    .describe("refused: a tool file has a problem; the previous tools stay in force"),
  at: isoTime,
  trigger: z.enum(["files changed", "command", "another process"]),
  tools: z.array(z.string()).describe("the tools in force after the reload"),
  added: z.array(z.string()),
  removed: z.array(z.string()),
  changed: z.array(z.string()),
  problems: z.array(z.string()).describe("why it was refused, each as `file: key: reason`"),
  processes: z
    .number()
    .int()
    .nullable()
    .describe("how many hub processes were asked to reload (this one included); null when Redis did not answer"),
});

/** A conversation as the console shows it: with the label a person recognises it by. */
export const consoleConversationView = conversationView.extend({
  label: z.string().describe("the contact's name, number or handle, else a short label like `Visitor 3f9a`"),
  heldSince: isoTime.nullable().describe("while a human has it: when the oldest item held for the person was held"),
});

export const conversationSummaryView = consoleConversationView.extend({
  held: z.number().int().describe("results held for the person while a human has the conversation"),
  waiting: z.number().int().describe("results waiting for the person's answer to a template"),
  lastMessage: messageView.nullable(),
});

/** A private note (src/team/notes.ts): never sent to the person; given to the agent only when forAgent. */
export const noteView = z.object({
  id: z.uuid(),
  conversationId: z.uuid(),
  text: z.string(),
  author: z
    .object({ id: z.string(), name: z.string() })
    .describe("the member who wrote it ({id: console} for the shared key)"),
  forAgent: z.boolean(),
  createdAt: isoTime,
});

/** A canned reply (src/team/canned-replies.ts): its shortcut, title, text and the {{variables}} it names. */
export const cannedReplyView = z.object({
  id: z.string().describe("the shortcut typed after / in the console's composer"),
  title: z.string(),
  text: z.string(),
  variables: z.array(z.string()).describe("the {{variables}} its text names, in order"),
});
