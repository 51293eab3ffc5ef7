// The two accounts widget conversations live under (widget-sessions.ts): anonymous visitors and people the
// integrator verified. Apart, with no imports, so that erasure and the person's reach can name them.

/** Anonymous visitors' conversations; apart from those the agent runtime creates (account ""). */
export const VISITOR_ACCOUNT = "widget";
/** Conversations of people the integrator verified (their `identifier` is the contact). */
export const IDENTIFIED_ACCOUNT = "widget-identified";
