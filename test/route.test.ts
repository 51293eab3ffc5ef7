// The routing core, as a table: every row of the spec's "where the conversation is" table, with its reason.
import { describe, expect, it } from "vitest";
import { route, type RouteConversation, type RouteItem } from "../src/delivery/route.js";

const now = new Date("2026-06-01T12:00:00Z");
const hoursAgo = (hours: number) => new Date(now.getTime() - hours * 3_600_000);

const base: RouteConversation = {
  channel: "web",
  control: "agent",
  lastInboundAt: null,
  templateSentAt: null,
  windowClosedAt: null,
  channelEnabled: true,
  templateAvailable: true,
};
const agent: RouteItem = { author: "agent" };
const human: RouteItem = { author: "human" };

const rows: [string, Partial<RouteConversation>, RouteItem, { action: string; reason: string }][] = [
  [
    "web widget: pushed (live or stored, by the socket)",
    { channel: "web" },
    agent,
    { action: "push", reason: "widget" },
  ],
  ["iOS app", { channel: "ios" }, agent, { action: "push", reason: "widget" }],
  ["Android app", { channel: "android" }, agent, { action: "push", reason: "widget" }],
  ["Flutter app", { channel: "flutter" }, agent, { action: "push", reason: "widget" }],
  [
    "widget never has a window",
    { channel: "web", lastInboundAt: hoursAgo(500) },
    agent,
    { action: "push", reason: "widget" },
  ],
  [
    "WhatsApp, window open",
    { channel: "whatsapp", lastInboundAt: hoursAgo(2) },
    agent,
    { action: "send", reason: "window_open" },
  ],
  [
    "WhatsApp, 23h59m after the last message",
    { channel: "whatsapp", lastInboundAt: new Date(now.getTime() - 86_340_000) },
    agent,
    { action: "send", reason: "window_open" },
  ],
  [
    "WhatsApp, exactly 24h after: closed",
    { channel: "whatsapp", lastInboundAt: hoursAgo(24) },
    agent,
    { action: "template", reason: "window_closed" },
  ],
  [
    "WhatsApp, window closed: template",
    { channel: "whatsapp", lastInboundAt: hoursAgo(30) },
    agent,
    { action: "template", reason: "window_closed" },
  ],
  ["WhatsApp, never wrote: template", { channel: "whatsapp" }, agent, { action: "template", reason: "window_closed" }],
  [
    "WhatsApp, closed, template already sent this period: wait for the reply",
    { channel: "whatsapp", lastInboundAt: hoursAgo(30), templateSentAt: hoursAgo(1) },
    agent,
    { action: "await_reply", reason: "template_sent_this_period" },
  ],
  [
    "WhatsApp, closed, template sent in an earlier period: a new template",
    { channel: "whatsapp", lastInboundAt: hoursAgo(30), templateSentAt: hoursAgo(40) },
    agent,
    { action: "template", reason: "window_closed" },
  ],
  [
    "WhatsApp, closed, no template configured: wait for the reply",
    { channel: "whatsapp", lastInboundAt: hoursAgo(30), templateAvailable: false },
    agent,
    { action: "await_reply", reason: "window_closed_no_template" },
  ],
  [
    "WhatsApp, window closed, the template paused by Meta (and no usable fallback): waits",
    { channel: "whatsapp", lastInboundAt: hoursAgo(30), template: { usable: false, marketing: false } },
    agent,
    { action: "await_reply", reason: "template_unavailable" },
  ],
  [
    "WhatsApp, window closed, template not looked up yet: template path",
    { channel: "whatsapp", lastInboundAt: hoursAgo(30), marketingHeldUntil: new Date(now.getTime() + 3_600_000) },
    agent,
    { action: "template", reason: "window_closed" },
  ],
  [
    "WhatsApp, marketing template while the 131049 hold lasts: waits",
    {
      channel: "whatsapp",
      lastInboundAt: hoursAgo(30),
      template: { usable: true, marketing: true },
      marketingHeldUntil: new Date(now.getTime() + 1),
    },
    agent,
    { action: "await_reply", reason: "marketing_limit" },
  ],
  [
    "WhatsApp, marketing template once the 131049 hold is over: template",
    {
      channel: "whatsapp",
      lastInboundAt: hoursAgo(30),
      template: { usable: true, marketing: true },
      marketingHeldUntil: now,
    },
    agent,
    { action: "template", reason: "window_closed" },
  ],
  [
    "WhatsApp, utility template during a 131049 hold: not held",
    {
      channel: "whatsapp",
      lastInboundAt: hoursAgo(30),
      template: { usable: true, marketing: false },
      marketingHeldUntil: new Date(now.getTime() + 3_600_000),
    },
    agent,
    { action: "template", reason: "window_closed" },
  ],
  [
    "WhatsApp, window open: a paused template does not matter",
    { channel: "whatsapp", lastInboundAt: hoursAgo(2), template: { usable: false, marketing: true } },
    agent,
    { action: "send", reason: "window_open" },
  ],
  [
    "Instagram, window open",
    { channel: "instagram", lastInboundAt: hoursAgo(23) },
    agent,
    { action: "send", reason: "window_open" },
  ],
  [
    "Instagram, window closed: held for the next message, no template",
    { channel: "instagram", lastInboundAt: hoursAgo(25) },
    agent,
    { action: "await_reply", reason: "window_closed_instagram" },
  ],
  [
    "Instagram, automated output 2 days out: never the HUMAN_AGENT tag",
    { channel: "instagram", lastInboundAt: hoursAgo(48) },
    agent,
    { action: "await_reply", reason: "window_closed_instagram" },
  ],
  [
    "human control, widget: held",
    { channel: "web", control: "human" },
    agent,
    { action: "hold", reason: "human_control" },
  ],
  [
    "human control, WhatsApp open: held",
    { channel: "whatsapp", control: "human", lastInboundAt: hoursAgo(1) },
    agent,
    { action: "hold", reason: "human_control" },
  ],
  [
    "human control, Instagram: held",
    { channel: "instagram", control: "human", lastInboundAt: hoursAgo(1) },
    agent,
    { action: "hold", reason: "human_control" },
  ],
  [
    "a human's reply is not held by their own takeover",
    { channel: "web", control: "human" },
    human,
    { action: "push", reason: "widget" },
  ],
  [
    "a human's reply on WhatsApp inside the window",
    { channel: "whatsapp", control: "human", lastInboundAt: hoursAgo(3) },
    human,
    { action: "send", reason: "window_open" },
  ],
  [
    "a human's reply on WhatsApp outside the window",
    { channel: "whatsapp", control: "human", lastInboundAt: hoursAgo(30) },
    human,
    { action: "fail", reason: "window_closed" },
  ],
  [
    "a human's reply on Instagram 2 days out: HUMAN_AGENT tag",
    { channel: "instagram", control: "human", lastInboundAt: hoursAgo(48) },
    human,
    { action: "send", reason: "human_agent_tag" },
  ],
  [
    "a human's reply on Instagram 8 days out: refused",
    { channel: "instagram", control: "human", lastInboundAt: hoursAgo(8 * 24) },
    human,
    { action: "fail", reason: "window_closed" },
  ],
  [
    "Messenger, window open",
    { channel: "messenger", lastInboundAt: hoursAgo(23) },
    agent,
    { action: "send", reason: "window_open" },
  ],
  [
    "Messenger, window closed: held for the next message, no template",
    { channel: "messenger", lastInboundAt: hoursAgo(25) },
    agent,
    { action: "await_reply", reason: "window_closed_messenger" },
  ],
  [
    "a human's reply on Messenger 2 days out: HUMAN_AGENT tag",
    { channel: "messenger", control: "human", lastInboundAt: hoursAgo(48) },
    human,
    { action: "send", reason: "human_agent_tag" },
  ],
  [
    "a human's reply on Messenger 8 days out: refused",
    { channel: "messenger", control: "human", lastInboundAt: hoursAgo(8 * 24) },
    human,
    { action: "fail", reason: "window_closed" },
  ],
  [
    "human control, Messenger: held",
    { channel: "messenger", control: "human", lastInboundAt: hoursAgo(1) },
    agent,
    { action: "hold", reason: "human_control" },
  ],
  [
    "WhatsApp not configured on this hub",
    { channel: "whatsapp", lastInboundAt: hoursAgo(1), channelEnabled: false },
    agent,
    { action: "fail", reason: "channel_off" },
  ],
  [
    "Telegram: no window, a result months later is sent",
    { channel: "telegram", lastInboundAt: hoursAgo(2000) },
    agent,
    { action: "send", reason: "no_window" },
  ],
  ["SMS, never wrote: sent (no template needed)", { channel: "sms" }, agent, { action: "send", reason: "no_window" }],
  [
    "e-mail: a human's reply days later",
    { channel: "email", control: "human", lastInboundAt: hoursAgo(200) },
    human,
    { action: "send", reason: "no_window" },
  ],
  [
    "human control, Telegram: held",
    { channel: "telegram", control: "human", lastInboundAt: hoursAgo(1) },
    agent,
    { action: "hold", reason: "human_control" },
  ],
  [
    "Telegram: the person blocked the bot",
    { channel: "telegram", lastInboundAt: hoursAgo(1), unreachable: true },
    agent,
    { action: "fail", reason: "unreachable" },
  ],
  [
    "SMS: the person sent STOP (a human's reply too)",
    { channel: "sms", control: "human", lastInboundAt: hoursAgo(1), unreachable: true },
    human,
    { action: "fail", reason: "unreachable" },
  ],
  [
    "SMS not configured on this hub",
    { channel: "sms", channelEnabled: false },
    agent,
    { action: "fail", reason: "channel_off" },
  ],
];

describe("route(conversation, item, now)", () => {
  it.each(rows)("%s", (_name, conversation, item, expected) => {
    expect(route({ ...base, ...conversation }, item, now)).toMatchObject(expected);
  });
});
