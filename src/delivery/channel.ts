// The channels a conversation can be on: the widget's (web and the apps, over socket.io) and Meta's.

export type Channel = "web" | "ios" | "android" | "flutter" | "whatsapp" | "instagram" | "messenger";
export const WIDGET_CHANNELS: readonly Channel[] = ["web", "ios", "android", "flutter"];
export const CHANNELS: readonly Channel[] = [...WIDGET_CHANNELS, "whatsapp", "instagram", "messenger"];
export const isWidgetChannel = (channel: string) => (WIDGET_CHANNELS as readonly string[]).includes(channel);
