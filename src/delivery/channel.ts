// The channels a conversation can be on: the widget's (web and the apps, over socket.io), Meta's, and the
// ones with no messaging window (Telegram, SMS through Twilio, e-mail).

export type Channel =
  "web" | "ios" | "android" | "flutter" | "whatsapp" | "instagram" | "messenger" | "telegram" | "sms" | "email";
export const WIDGET_CHANNELS: readonly Channel[] = ["web", "ios", "android", "flutter"];
/** Channels that let a business write at any time: a late result is always sent (no window, no template). */
export const WINDOWLESS_CHANNELS: readonly Channel[] = ["telegram", "sms", "email"];
export const CHANNELS: readonly Channel[] = [
  ...WIDGET_CHANNELS,
  "whatsapp",
  "instagram",
  "messenger",
  ...WINDOWLESS_CHANNELS,
];
export const isWidgetChannel = (channel: string) => (WIDGET_CHANNELS as readonly string[]).includes(channel);
export const isWindowlessChannel = (channel: string) => (WINDOWLESS_CHANNELS as readonly string[]).includes(channel);
