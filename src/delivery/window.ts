// The messaging window: Meta channels accept free-form messages until 24 h after the person's last
// inbound message (by Meta's own timestamp). Widget channels, Telegram, SMS and e-mail have no window.
import { isWidgetChannel, isWindowlessChannel } from "./channel.js";

export const WINDOW_MS = 24 * 3_600_000;

export interface WindowState {
  open: boolean;
  closesAt: string | null;
}

export function windowOf(channel: string, lastInboundAt: Date | null, now: Date): WindowState {
  if (isWidgetChannel(channel) || isWindowlessChannel(channel)) return { open: true, closesAt: null };
  if (!lastInboundAt) return { open: false, closesAt: null };
  const closesAt = new Date(lastInboundAt.getTime() + WINDOW_MS);
  return { open: now < closesAt, closesAt: closesAt.toISOString() };
}
