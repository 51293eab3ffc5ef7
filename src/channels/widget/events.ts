// The widget protocol's events, one definition for the hub and every TypeScript client (docs/widget-protocol.md).
// Browser and mobile clients implement the same events; see docs/widget-protocol.md.

export type WidgetChannel = "web" | "ios" | "android" | "flutter";

/** A message as the person's client sees it. */
export interface WidgetMessage {
  id: string;
  role: "user" | "agent" | "human";
  text: string;
  createdAt: string;
  /** The client's idempotency key, on the person's own messages. */
  clientId?: string | null;
  /** The job whose result or progress this message gives, if any. */
  jobId?: string | null;
  /** A human agent's reply: the name they gave the console (never their id), when they gave one. */
  senderName?: string;
  /**
   * `notice`: the hub's own word to the person (the agent runtime cannot answer right now), not the agent's.
   * Absent on ordinary messages; a client that does not know it shows the message as the agent's.
   */
  kind?: "notice";
  /** Files the message carries (absent for none): links the client opens or shows, never fetched by the hub. */
  attachments?: WidgetAttachment[];
  /** Choices offered with it (absent for none): a tap sends `{text: title, payload}` as the person's answer. */
  buttons?: WidgetButton[];
  /**
   * Present when the message, left unseen here, was sent to the person on another channel they consented to
   * (the hub's escalation; an `escalated` event tells an open widget). Absent otherwise.
   */
  escalatedTo?: "whatsapp";
}

/** A message of the conversation, left unseen here, was sent to the person on another channel. */
export interface WidgetEscalation {
  /** The message's id. */
  id: string;
  escalatedTo: "whatsapp";
  /** When it was sent on. */
  at: string;
}

/** A file of a message, with what the client needs to show it: its name, type and kind read once by the hub. */
export interface WidgetAttachment {
  url: string;
  name: string;
  mimeType: string;
  /** `image`: shown inline; `video`, `audio`, `file`: a card with the name and type that opens the file. */
  kind: "image" | "video" | "audio" | "file";
  caption?: string;
}

export interface WidgetButton {
  title: string;
  /** What a tap answers with (the title when absent). */
  payload?: string;
  /**
   * Present (true) when the button may be tapped again; else the message's first tap answers its choices and
   * the hub refuses another tap of them (`invalid_request` naming `payload`).
   */
  reusable?: true;
}

export interface WidgetProgress {
  jobId: string;
  tool: string;
  text: string;
  at: string;
  /** The same text also comes as a message of the conversation (a notify-progress): show it once. */
  notify?: boolean;
}

export type WidgetJobStatus =
  "awaiting_approval" | "running" | "succeeded" | "failed" | "timed_out" | "cancelled" | "refused";

/** A slow job starting (`running`) or ending (any other status), whatever then happens to its result. */
export interface WidgetJob {
  jobId: string;
  tool: string;
  status: WidgetJobStatus;
  /** When it started (running) or ended. */
  at: string;
}

/** A job still running when the history was read, with its latest progress (if the person may see it). */
export interface WidgetRunningJob extends WidgetJob {
  status: "running";
  progress: WidgetProgress | null;
}

export interface WidgetAuth {
  token: string;
  /** The last message id the client has; history starts after it. */
  lastMessageId?: string;
}

export type Ack<T> = (answer: T) => void;
export type SendAnswer = { id: string } | { error: { code: string; message: string } };

export interface WidgetHistory {
  /** Oldest first: the messages after `lastMessageId`, or the newest ones (see `reset`). */
  messages: WidgetMessage[];
  /** The jobs running when the history was read (absent from hubs that predate it). */
  jobs?: WidgetRunningJob[];
  /**
   * Present (true) when the client sent a `lastMessageId` this conversation does not have: the messages are
   * the newest ones, not what follows the client's cursor, so the client replaces what it shows with them.
   */
  reset?: true;
}

export interface ServerToClientEvents {
  /** Sent once on every connection; the client confirms what it has shown with `received`. */
  history: (payload: WidgetHistory) => void;
  /** A new message; the client acks it once stored or shown — any ack counts, whatever it carries — so it is delivered. */
  message: (message: WidgetMessage, ack: Ack<{ ok: true }>) => void;
  /** A running job's progress. */
  progress: (progress: WidgetProgress) => void;
  /** A job started or ended: a client shows a job as running from its start to its end. */
  job: (job: WidgetJob) => void;
  /** The agent is composing a reply (true) or done (false). */
  typing: (payload: { typing: boolean }) => void;
  /** A message left unseen was sent to the person on another channel: show it as given there. */
  escalated: (escalation: WidgetEscalation) => void;
}

export interface ClientToServerEvents {
  /**
   * The person's message; acked with its id. Idempotent on clientId. `attachments` name files uploaded first
   * (`POST /widget/uploads`); `text` may then be empty. A tapped button sends its title as `text` and its
   * `payload`, which reaches the agent's turn with the message.
   */
  send: (
    payload: { text: string; clientId: string; attachments?: { uploadId: string }[]; payload?: string },
    ack: Ack<SendAnswer>,
  ) => void;
  /** The person has seen every message up to and including `upTo`. */
  read: (payload: { upTo: string }, ack?: Ack<{ ok: boolean }>) => void;
  /**
   * The client has shown (or stored) this connection's history up to and including `upTo`: those messages
   * are delivered. A history the client never confirms stays stored and comes again.
   */
  received: (payload: { upTo: string }, ack?: Ack<{ ok: boolean }>) => void;
}

export interface SocketData {
  conversationId: string;
  /** Set while the person has not written yet: what their first message makes (unstarted-conversation.ts). */
  unstarted?: UnstartedConversation | undefined;
}

export const WIDGET_NAMESPACE = "/widget";
export const roomOf = (conversationId: string) => `conversation:${conversationId}`;

/** How long the hub waits for a client's ack of a `message` before counting it stored. */
export const MESSAGE_ACK_TIMEOUT_MS = 5000;
import type { UnstartedConversation } from "./unstarted-conversation.js";
