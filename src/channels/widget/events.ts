// The widget protocol's events, one definition for the hub and every TypeScript client (SPEC §6).
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
}

export interface WidgetProgress {
  jobId: string;
  tool: string;
  text: string;
  at: string;
}

export interface WidgetAuth {
  token: string;
  /** The last message id the client has; history starts after it. */
  lastMessageId?: string;
}

export type Ack<T> = (answer: T) => void;
export type SendAnswer = { id: string } | { error: { code: string; message: string } };

export interface ServerToClientEvents {
  /** Messages after `lastMessageId`, oldest first, sent once on connect. */
  history: (payload: { messages: WidgetMessage[] }) => void;
  /** A new message; the client acks it so it is marked delivered. */
  message: (message: WidgetMessage, ack: Ack<{ ok: true }>) => void;
  /** A running job's progress. */
  progress: (progress: WidgetProgress) => void;
  /** The agent is composing a reply (true) or done (false). */
  typing: (payload: { typing: boolean }) => void;
}

export interface ClientToServerEvents {
  /** The person's message; acked with its id. Idempotent on clientId. */
  send: (payload: { text: string; clientId: string }, ack: Ack<SendAnswer>) => void;
  /** The person has seen every message up to and including `upTo`. */
  read: (payload: { upTo: string }, ack?: Ack<{ ok: boolean }>) => void;
}

export interface SocketData {
  conversationId: string;
}

export const WIDGET_NAMESPACE = "/widget";
export const roomOf = (conversationId: string) => `conversation:${conversationId}`;
