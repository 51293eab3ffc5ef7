// The `/console` namespace's events, shared by the hub and console clients: what a support team sees
// change live, from any hub process.
import type { MessageView } from "../conversations/timeline.js";

export interface ConsoleControl {
  conversationId: string;
  control: "agent" | "human";
  humanAgent: { id: string; name: string } | null;
}

export interface ConsoleMessageChange {
  conversationId: string;
  message: MessageView;
}

export interface ConsoleServerToClient {
  /**
   * Timeline entries written or changed (a new message, a delivery decision, a status, a hold), gathered
   * over a short window (each message once, as it stands at the end of it).
   */
  messages: (payload: { changes: ConsoleMessageChange[] }) => void;
  /** Someone took the conversation over, or handed it back. */
  control: (payload: ConsoleControl) => void;
}

export type ConsoleClientToServer = Record<string, never>;

export const CONSOLE_NAMESPACE = "/console";
export const CONSOLE_ROOM = "console";
