// The choice a person tapped, read from what Meta delivered with their message: WhatsApp's reply button or
// list row (`interactive.button_reply.id`, `interactive.list_reply.id`) or a template's quick-reply button
// (`button.payload`); Instagram's and Messenger's quick reply (`message.quick_reply.payload`) or postback.
// The hub set these ids to the buttons' payloads, so the agent's turn gets the payload it offered.
type Json = Record<string, unknown>;

const record = (value: unknown): Json =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {};
const text = (value: unknown): string | undefined => (typeof value === "string" && value ? value : undefined);

/** `data` as the webhook readers record it on the person's message: `{type, message}` or `{type, event}`. */
export function tapPayload(data: unknown): string | undefined {
  const { message, event } = record(data);
  if (message !== undefined) {
    const whatsapp = record(message);
    const interactive = record(whatsapp.interactive);
    return (
      text(record(interactive.button_reply).id) ??
      text(record(interactive.list_reply).id) ??
      text(record(whatsapp.button).payload)
    );
  }
  const item = record(event);
  return text(record(record(item.message).quick_reply).payload) ?? text(record(item.postback).payload);
}
