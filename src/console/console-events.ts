// The `/console` namespace's events, shared by the hub and console clients: what a support team sees
// change live, from any hub process.
import type { MessageView } from "../conversations/timeline.js";

export interface ConsoleControl {
  conversationId: string;
  control: "agent" | "human";
  humanAgent: { id: string; name: string } | null;
}

export interface ConsoleServerToClient {
  /** A timeline entry was written or changed (a new message, a delivery decision, a status, a hold). */
  message: (payload: { conversationId: string; message: MessageView }) => void;
  /** Someone took the conversation over, or handed it back. */
  control: (payload: ConsoleControl) => void;
}

export type ConsoleClientToServer = Record<string, never>;

export const CONSOLE_NAMESPACE = "/console";
export const CONSOLE_ROOM = "console";
