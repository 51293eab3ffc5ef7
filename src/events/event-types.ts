// The outgoing events an operator's systems can hear of (docs/events.md). Each is a row of the outbox
// ("HubEvent"), written in the same transaction as the change it tells of.
export const EVENT_TYPES = [
  "message.created",
  "message.status",
  "delivery.decided",
  "conversation.control",
  "conversation.erased",
  "conversation.assigned",
  "conversation.response_breached",
  "job.started",
  "job.approval",
  "job.progress",
  "job.ended",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
