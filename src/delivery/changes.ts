// Every change of delivery state, published once after the commit that made it, by the effects of that commit
// (effects.ts); the console and widget namespaces, the job waiters (and anything else that wants to know)
// subscribe. Nothing notifies by hand.
import type { JobStatus } from "../jobs/job-status.js";
import type { ConsoleAssignment, ConsoleClock, ConsoleNote, ConsolePresence } from "../console/console-events.js";
import type { ConversationRow, MessageRow } from "./rows.js";

export type Change =
  | { type: "messages"; conversationId: string; messages: MessageRow[] }
  | { type: "control"; conversation: ConversationRow }
  | {
      type: "job";
      conversationId: string;
      job: { id: string; tool: string; status: JobStatus; at: Date };
      /** Committed by another process and heard from it (src/jobs/job-events.ts): not to be relayed again. */
      remote?: true;
    }
  /** A job's progress for the person (not while a human has the conversation); `notify`: it comes as a message too. */
  | {
      type: "progress";
      conversationId: string;
      job: { id: string; tool: string };
      text: string;
      at: Date;
      notify: boolean;
    }
  /** A reply is being composed (a remote agent runtime's turn), or no longer. */
  | { type: "typing"; conversationId: string; typing: boolean }
  /** A result left unseen in the widget was sent to the person on another channel (escalation.ts). */
  | { type: "escalated"; conversationId: string; messageId: string; to: "whatsapp"; at: Date }
  /** The support team's side (src/team/): an assignment, a member's availability, a response clock, a note. */
  | ({ type: "assignment" } & ConsoleAssignment)
  | ({ type: "presence" } & ConsolePresence)
  | ({ type: "clock" } & ConsoleClock)
  | { type: "note"; conversationId: string; note: ConsoleNote };

export interface Changes {
  publish(change: Change): void;
  subscribe(listener: (change: Change) => void): () => void;
}

export function createChanges(onListenerError: (error: unknown) => void = () => undefined): Changes {
  const listeners = new Set<(change: Change) => void>();
  return {
    publish(change) {
      if (change.type === "messages" && change.messages.length === 0) return;
      for (const listener of listeners) {
        try {
          listener(change);
        } catch (error) {
          onListenerError(error);
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
