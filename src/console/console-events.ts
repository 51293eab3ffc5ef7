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

/** Who a conversation is assigned to, in which team, and what it waits for (src/team/assignment.ts). */
export interface ConsoleAssignment {
  conversationId: string;
  team: { id: string; name: string } | null;
  assignee: { id: string; name: string } | null;
  assignedAt: string | null;
  /** Waiting in the team's queue with nobody on it, since then. */
  queuedAt: string | null;
  /** The team is closed: the conversation stays with the agent until then. */
  opensAt: string | null;
  /** Why it changed: a hand-off, a re-assignment after no reply, a member taking it, an admin moving it… */
  reason: "handoff" | "assigned" | "reassigned" | "taken" | "moved" | "queued" | "opened" | "released";
}

/** A member's availability as the console shows it (online: connected or seen within MEMBER_OFFLINE_AFTER). */
export interface ConsolePresence {
  member: { id: string; name: string; availability: "online" | "busy" | "offline" };
}

/** What the team owes the person: a first or next response, by when; breachedAt once it is late. */
export interface ConsoleClock {
  conversationId: string;
  clock: { kind: "first" | "next"; dueAt: string; breachedAt: string | null } | null;
}

/** A private note (src/team/notes.ts): never sent to the person, given to the agent only when forAgent. */
export interface ConsoleNote {
  id: string;
  conversationId: string;
  text: string;
  author: { id: string; name: string };
  forAgent: boolean;
  createdAt: string;
}

export interface ConsoleServerToClient {
  /**
   * Timeline entries written or changed (a new message, a delivery decision, a status, a hold), gathered
   * over a short window (each message once, as it stands at the end of it).
   */
  messages: (payload: { changes: ConsoleMessageChange[] }) => void;
  /** Someone took the conversation over, or handed it back. */
  control: (payload: ConsoleControl) => void;
  /** Assigned, re-assigned, queued, moved, or its team opened. */
  assignment: (payload: ConsoleAssignment) => void;
  /** A member's availability changed. */
  presence: (payload: ConsolePresence) => void;
  /** A response clock started, stopped or was breached. */
  clock: (payload: ConsoleClock) => void;
  /** A private note was written. */
  note: (payload: { conversationId: string; note: ConsoleNote }) => void;
}

/** The event names, for the browser's modules too (served as /console/events.js). */
export const CONSOLE_EVENTS = ["messages", "control", "assignment", "presence", "clock", "note"] as const;
export type ConsoleEventName = (typeof CONSOLE_EVENTS)[number];

export type ConsoleClientToServer = Record<string, never>;

export const CONSOLE_NAMESPACE = "/console";
export const CONSOLE_ROOM = "console";
/** Each member's connections join their own room too: what is theirs alone (an assignment) can reach them. */
export const memberRoom = (memberId: string) => `member:${memberId}`;
