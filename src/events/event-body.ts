// The JSON body an endpoint receives for one event: the envelope every event shares (its stable id, type,
// when, which conversation on which channel, its place in the hub's order) and the change's own fields
// under `data` (docs/events.md lists them per type).
import type { OwedEvent } from "./event-deliveries.js";
import type { EventType } from "./event-types.js";

export interface EventBody {
  id: string;
  type: EventType;
  occurredAt: string;
  conversationId: string | null;
  channel: string | null;
  /** Increases with every event the hub writes: a receiver can order what it got (per conversation it comes in order). */
  seq: number;
  data: Record<string, unknown>;
}

export function eventBody(event: OwedEvent): EventBody {
  return {
    id: event.eventId,
    type: event.type,
    occurredAt: event.occurredAt.toISOString(),
    conversationId: event.conversationId,
    channel: event.channel,
    seq: Number(event.seq),
    data: event.payload,
  };
}
