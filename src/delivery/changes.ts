// Every change of delivery state, published once by the transition that made it (delivery-state.ts,
// control changes, a job starting or ending); the console and widget namespaces (and anything else that
// wants to know) subscribe. Nothing notifies by hand.
import type { JobStatus } from "../jobs/job-status.js";
import type { ConversationRow, MessageRow } from "./rows.js";

export type Change =
  | { type: "messages"; conversationId: string; messages: MessageRow[] }
  | { type: "control"; conversation: ConversationRow }
  | { type: "job"; conversationId: string; job: { id: string; tool: string; status: JobStatus; at: Date } };

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
