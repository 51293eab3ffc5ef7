// The agent-turn port (docs/agent-runtime.md, Agent turns): what the hub sends the agent runtime, and what it answers.
import { z } from "zod";
import { attachmentsSchema, buttonsSchema, type Attachment, type Button } from "../conversations/attachments.js";

const attachmentList = attachmentsSchema(false);

const jobRef = {
  job: z.uuid().describe("the job's id"),
  tool: z.string(),
  toolCallId: z.string().nullable().describe("the id the agent gave the tool call, if any"),
};

/** On the result or failure of a job that ran again because the one before it was lost. */
const rerunRef = {
  attempt: z
    .number()
    .int()
    .min(2)
    .optional()
    .describe("present when the job ran again after a lost attempt (the tool's `rerun`): 2 for the first re-run"),
  rerunOf: z.uuid().optional().describe("with `attempt`: the first job's id, the one the agent started"),
};

/** One thing the agent runtime must answer in a turn. */
export const turnInputSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("user_message"),
    messageId: z.string().describe("the person's message in the timeline"),
    text: z.string().describe("what the person wrote; other kinds (a location, a button, a file) as readable text"),
    attachments: z
      .array(
        z.object({
          url: z.url().describe("the hub's own `/media/<token>` URL: no key needed, works until it expires"),
          mimeType: z.string(),
          name: z.string().optional().describe("the file's name, when the channel gave one"),
          size: z.number().int().optional().describe("bytes, when known before the file is fetched"),
        }),
      )
      .optional()
      .describe("the files the person sent (image, video, audio, document, sticker), present when there are any"),
    payload: z
      .string()
      .optional()
      .describe(
        "the person tapped a button offered in this conversation and still open (one tap per message's choices unless `reusable`): its `payload` (else its title), as offered; absent for a tap of anything else",
      ),
  }),
  z.object({
    type: z.literal("tool_result"),
    ...jobRef,
    ...rerunRef,
    result: z.unknown().describe("the result mapped by the tool file's `respond`: usually {message, data}"),
    attachments: attachmentList
      .optional()
      .describe("files the result carries (links the hub does not fetch): attach them to the reply that gives it"),
    givenWithTemplate: attachmentList
      .optional()
      .describe("WhatsApp: a file the person already got in the header of the template that brought them back"),
  }),
  z.object({
    type: z.literal("tool_failed"),
    ...jobRef,
    ...rerunRef,
    reason: z
      .enum(["error", "timeout", "cancelled", "refused"])
      .describe(
        "refused: the call needed an approval that was refused or not given in time; its backend never heard of it",
      ),
    message: z.string().describe("why, in a sentence (the backend's own message for an error)"),
  }),
  z
    .object({
      type: z.literal("tool_expired"),
      ...jobRef,
      ...rerunRef,
      arrivedAt: z.iso.datetime({ offset: true }).describe("when the result (or failure) arrived"),
      outcome: z.enum(["succeeded", "failed"]).describe("what it was: a result or a failure"),
      reason: z
        .enum(["deliver_within", "conversation_closed"])
        .describe("the tool's `deliver_within` passed before it could be given, or it came to a closed conversation"),
    })
    .describe("a result that went stale before it could be given: it was not given; offer to run the tool again"),
  z.object({
    type: z.literal("progress"),
    ...jobRef,
    text: z.string().describe("a progress line the backend marked notify: true"),
  }),
  z.object({ type: z.literal("handback").describe("a human handed the conversation back") }),
]);
export type TurnInput = z.output<typeof turnInputSchema>;

/** What the hub posts to AGENT_URL. `requestId` and `sentAt` are added per request (see http-agent.ts). */
export const turnRequestSchema = z.object({
  requestId: z.uuid().describe("new for every request, retries included: refuse one you have seen"),
  sentAt: z.iso.datetime({ offset: true }).describe("when the hub sent it: refuse one older than 5 minutes"),
  conversation: z.object({
    id: z.uuid(),
    channel: z.string(),
    account: z.string().describe("Meta channels: the hub's number, account or page; empty for the widget"),
    contact: z.string(),
    name: z.string().nullable(),
    control: z.enum(["agent", "human"]),
  }),
  inputs: z.array(turnInputSchema).min(1).describe("in the order they happened"),
  runningJobs: z
    .array(
      z.object({
        id: z.uuid(),
        tool: z.string(),
        toolCallId: z.string().nullable(),
        startedAt: z.iso.datetime({ offset: true }),
        lastProgress: z.string().nullable(),
      }),
    )
    .describe("jobs still running in this conversation"),
  history: z
    .array(
      z.object({
        id: z.uuid(),
        role: z.string(),
        text: z.string().nullable(),
        data: z.unknown(),
        toolCallId: z.string().nullable(),
        createdAt: z.iso.datetime({ offset: true }),
      }),
    )
    .describe("the conversation's recent messages, oldest first (sent to a remote runtime only)"),
  notes: z
    .array(
      z.object({
        id: z.uuid(),
        text: z.string(),
        author: z.object({ id: z.string(), name: z.string() }).describe("the member of the team who wrote it"),
        createdAt: z.iso.datetime({ offset: true }),
      }),
    )
    .optional()
    .describe(
      "private notes the support team wrote for the agent (forAgent), oldest first, the latest 20; absent when " +
        "there are none. The team's words, not the person's: never show them to the person as they are",
    ),
});
/** A turn as the hub builds it; the HTTP agent adds `requestId` and `sentAt` to each request. */
export type TurnRequest = Omit<z.output<typeof turnRequestSchema>, "requestId" | "sentAt">;

/** A hand-off to the support team: why, and which team (its id; none or an unknown one: the default team). */
export const handoffSchema = z.object({
  reason: z.string().trim().min(1).max(2000).describe("why, in a sentence the team will read"),
  team: z.string().trim().min(1).max(100).optional().describe("the team's id; the default team when absent or unknown"),
});

/** The agent runtime's answer: `messages: []` (or none) says nothing and counts the inputs as answered. */
export const turnReplySchema = z.object({
  messages: z
    .array(
      z.object({
        text: z.string().min(1),
        attachments: attachmentList.optional().describe("files sent with the message (links the channel fetches)"),
        buttons: buttonsSchema
          .optional()
          .describe("choices offered with it; a tap comes back as the person's `user_message` with its `payload`"),
      }),
    )
    .default([])
    .describe("said to the person in order; a long text is split at the channel's limit"),
  handoff: handoffSchema
    .optional()
    .describe(
      "hand the conversation to a team once these messages have gone (to learn at once whether the team is " +
        "open, use POST /v1/conversations/{id}/handoff instead)",
    ),
});
export interface TurnReply {
  /**
   * Said to the person in order. `data`, from the hub's own agents only, is what the timeline records about a
   * message (what the LLM agent's safeguard removed, and why).
   */
  messages: { text: string; data?: Record<string, unknown>; attachments?: Attachment[]; buttons?: Button[] }[];
  /**
   * The agent handed the conversation to a team (the LLM agent's tool, or a remote runtime's reply): done once
   * this reply has gone out. `team`: a team's id; none, or one the hub does not know, is the default team.
   */
  handoff?: { reason: string; team?: string | undefined };
  /**
   * Jobs the hub's LLM agent called off in this turn (its cancel tool): the reply tells of them, so it answers
   * their failure notices too — no turn of their own follows to tell the model what it did itself.
   */
  endedJobs?: string[];
}

export interface AgentPort {
  /**
   * A runtime of its own over the network: it is sent the conversation's recent history, and its turns
   * take long enough to show the person that a reply is coming. The built-in composer is neither.
   */
  readonly remote: boolean;
  /**
   * Whether the turn reads the conversation's recent history for it: by default a remote runtime's does. False
   * for an agent that reads the conversation itself (the LLM agent); `"person"` for the built-in composer, which
   * answers the person's questions about a result from it (a turn with no message of the person reads none).
   */
  readonly wantsHistory?: boolean | "person";
  runTurn(request: TurnRequest): Promise<TurnReply>;
}

/**
 * The agent could not answer (down, 5xx, timeout, bad answer): the turn is retried, never sooner than
 * `retryAfterMs` when the agent said how long to wait (a model's 429 with Retry-After).
 */
export class AgentUnavailableError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}
