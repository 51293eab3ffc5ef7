// Every kind of inbound Meta event has one outcome (docs/operations.md "Meta webhooks", the inbound table): the
// parsers are pure, so the table is checked here kind by kind; test/real-webhooks-replay.test.ts replays
// real deliveries through the running hub.
import { describe, expect, it } from "vitest";
import { parseWebhook } from "../src/channels/meta/meta-webhooks.js";
import type { MetaEvent } from "../src/channels/meta/meta-event.js";

const NUMBER = "1111111111";
const IG = "17841400000000001";
const PAGE = "100000000000001";
const T = "1764500000"; // seconds

function whatsapp(message: Record<string, unknown>, extra: Record<string, unknown> = {}, field = "messages") {
  return {
    object: "whatsapp_business_account",
    entry: [
      {
        id: "waba",
        changes: [
          {
            field,
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: "15550000000", phone_number_id: NUMBER },
              contacts: [{ profile: { name: "Ana" }, wa_id: "56911111111", user_id: "CL.123456789" }],
              messages: [{ from: "56911111111", id: "wamid.A", timestamp: T, ...message }],
              ...extra,
            },
          },
        ],
      },
    ],
  };
}

function messaging(object: "instagram" | "page", event: Record<string, unknown>, list = "messaging") {
  const account = object === "page" ? PAGE : IG;
  return {
    object,
    entry: [
      {
        id: account,
        time: 1,
        [list]: [{ sender: { id: "person-1" }, recipient: { id: account }, timestamp: 1764500000000, ...event }],
      },
    ],
  };
}

type Outcome = Partial<Record<string, unknown>> & { kind: MetaEvent["kind"] };

const table: [string, string, unknown, Outcome][] = [
  ["WhatsApp text", "whatsapp", whatsapp({ type: "text", text: { body: "hola" } }), { kind: "message", text: "hola" }],
  [
    "WhatsApp image with a caption",
    "whatsapp",
    whatsapp({ type: "image", image: { id: "m1", caption: "my receipt" } }),
    { kind: "message", text: "[image] my receipt" },
  ],
  [
    "WhatsApp voice note",
    "whatsapp",
    whatsapp({ type: "audio", audio: { id: "m1", voice: true } }),
    { kind: "message", text: "[voice message]" },
  ],
  [
    "WhatsApp document",
    "whatsapp",
    whatsapp({ type: "document", document: { id: "m1", filename: "informe.pdf" } }),
    { kind: "message", text: "[document: informe.pdf]" },
  ],
  [
    "WhatsApp location: name, address and coordinates",
    "whatsapp",
    whatsapp({
      type: "location",
      location: { latitude: -33.45, longitude: -70.66, name: "Clínica", address: "Av. Grecia 1" },
    }),
    { kind: "message", text: "[location] Clínica, Av. Grecia 1 (-33.45, -70.66)" },
  ],
  [
    "WhatsApp contact card: name and number",
    "whatsapp",
    whatsapp({
      type: "contacts",
      contacts: [{ name: { formatted_name: "Marta Soto" }, phones: [{ phone: "+56 9 2222 2222" }] }],
    }),
    { kind: "message", text: "[contact] Marta Soto +56 9 2222 2222" },
  ],
  [
    "WhatsApp order: its items and note",
    "whatsapp",
    whatsapp({
      type: "order",
      order: {
        catalog_id: "cat1",
        text: "para hoy",
        product_items: [{ product_retailer_id: "sku-1", quantity: 2, item_price: 9.5, currency: "USD" }],
      },
    }),
    { kind: "message", text: '[order from catalog cat1] 2 × sku-1 at 9.5 USD — "para hoy"' },
  ],
  [
    "WhatsApp flow reply: its fields, without the flow token",
    "whatsapp",
    whatsapp({
      type: "interactive",
      interactive: {
        type: "nfm_reply",
        nfm_reply: { name: "flow", body: "Sent", response_json: '{"email":"a@b.cl","flow_token":"x"}' },
      },
    }),
    { kind: "message", text: "[form: flow] email: a@b.cl" },
  ],
  [
    "WhatsApp button reply: title and payload",
    "whatsapp",
    whatsapp({ type: "interactive", interactive: { type: "button_reply", button_reply: { id: "yes", title: "Sí" } } }),
    { kind: "message", text: "Sí (payload: yes)" },
  ],
  [
    "WhatsApp template quick reply",
    "whatsapp",
    whatsapp({ type: "button", button: { text: "Ver resultados", payload: "see" } }),
    { kind: "message", text: "Ver resultados (payload: see)" },
  ],
  [
    "WhatsApp interactive with no content (Meta could not read it)",
    "whatsapp",
    whatsapp({ type: "interactive" }),
    { kind: "message", text: "[an interactive reply WhatsApp could not read]" },
  ],
  [
    "WhatsApp unsupported type",
    "whatsapp",
    whatsapp({
      type: "unsupported",
      unsupported: { type: "pool" },
      errors: [{ code: 131051, title: "Message type unknown" }],
    }),
    { kind: "message", text: "[a message WhatsApp does not support (pool)] Message type unknown" },
  ],
  [
    "WhatsApp reaction: on the message it names, no turn",
    "whatsapp",
    whatsapp({ type: "reaction", reaction: { message_id: "wamid.B", emoji: "👍" } }),
    { kind: "reaction", target: "wamid.B", emoji: "👍" },
  ],
  [
    "WhatsApp reaction withdrawn (empty emoji)",
    "whatsapp",
    whatsapp({ type: "reaction", reaction: { message_id: "wamid.B", emoji: "" } }),
    { kind: "reaction", target: "wamid.B", emoji: null },
  ],
  [
    "WhatsApp revoke: deletes the message it names",
    "whatsapp",
    whatsapp({ type: "revoke", revoke: { original_message_id: "wamid.B" } }),
    { kind: "delete", target: "wamid.B" },
  ],
  [
    "WhatsApp edit: the new text of the message it names",
    "whatsapp",
    whatsapp({
      type: "edit",
      edit: { original_message_id: "wamid.B", message: { type: "image", image: { caption: "new caption" } } },
    }),
    { kind: "edit", target: "wamid.B", text: "[image] new caption" },
  ],
  [
    "WhatsApp system notice: recorded, no turn",
    "whatsapp",
    whatsapp({ type: "system", system: { body: "Ana changed their number", type: "user_changed_number" } }),
    { kind: "record", role: "event", why: "system", text: "Ana changed their number" },
  ],
  [
    "WhatsApp Business app echo: recorded as the business's message",
    "whatsapp",
    whatsapp(
      {},
      {
        messages: undefined,
        message_echoes: [
          {
            from: "15550000000",
            to: "56911111111",
            id: "wamid.E",
            timestamp: T,
            type: "text",
            text: { body: "written in the app" },
          },
        ],
      },
      "smb_message_echoes",
    ),
    { kind: "record", role: "human", why: "echo", text: "written in the app" },
  ],
  [
    "WhatsApp status",
    "whatsapp",
    whatsapp({}, { messages: undefined, statuses: [{ id: "wamid.S", status: "delivered", timestamp: T }] }),
    { kind: "status", id: "wamid.S", status: "delivered" },
  ],
  [
    "WhatsApp account_update: not a conversation",
    "whatsapp",
    whatsapp({}, { messages: undefined }, "account_update"),
    { kind: "ignored", reason: "field account_update" },
  ],
  [
    "Instagram text",
    "instagram",
    messaging("instagram", { message: { mid: "m1", text: "hola" } }),
    { kind: "message", text: "hola" },
  ],
  [
    "Instagram quick reply: text and payload",
    "instagram",
    messaging("instagram", { message: { mid: "m1", text: "Sí", quick_reply: { payload: "YES" } } }),
    { kind: "message", text: "Sí (payload: YES)" },
  ],
  [
    "Instagram story reply",
    "instagram",
    messaging("instagram", { message: { mid: "m1", text: "¡linda!", reply_to: { story: { id: "s", url: "u" } } } }),
    { kind: "message", text: "[reply to your story] ¡linda!" },
  ],
  [
    "Instagram story mention",
    "instagram",
    messaging("instagram", { message: { mid: "m1", attachments: [{ type: "story_mention", payload: { url: "u" } }] } }),
    { kind: "message", text: "[mentioned you in their story]" },
  ],
  [
    "Instagram shared reel",
    "instagram",
    messaging("instagram", { message: { mid: "m1", attachments: [{ type: "ig_reel", payload: { title: "Tips" } }] } }),
    { kind: "message", text: "[shared a reel: Tips]" },
  ],
  [
    "Instagram unsupported message",
    "instagram",
    messaging("instagram", { message: { mid: "m1", is_unsupported: true } }),
    { kind: "message", text: "[a message Instagram cannot show here]" },
  ],
  [
    "Instagram unsend: deletes the message",
    "instagram",
    messaging("instagram", { message: { mid: "m1", is_deleted: true } }),
    { kind: "delete", target: "m1" },
  ],
  [
    "Instagram edit",
    "instagram",
    messaging("instagram", { message_edit: { mid: "m1", text: "fixed", num_edit: 1 } }),
    { kind: "edit", target: "m1", text: "fixed" },
  ],
  [
    "Instagram reaction",
    "instagram",
    messaging("instagram", { reaction: { mid: "m1", action: "react", emoji: "❤️" } }),
    { kind: "reaction", target: "m1", emoji: "❤️" },
  ],
  [
    "Instagram unreact",
    "instagram",
    messaging("instagram", { reaction: { mid: "m1", action: "unreact" } }),
    { kind: "reaction", target: "m1", emoji: null },
  ],
  ["Instagram read", "instagram", messaging("instagram", { read: { mid: "m9" } }), { kind: "read", target: "m9" }],
  [
    "Instagram echo: recorded, not answered",
    "instagram",
    {
      object: "instagram",
      entry: [
        {
          id: IG,
          messaging: [
            {
              sender: { id: IG },
              recipient: { id: "person-1" },
              timestamp: 1,
              message: { mid: "m2", text: "hi", is_echo: true },
            },
          ],
        },
      ],
    },
    { kind: "record", role: "human", why: "echo", text: "hi" },
  ],
  [
    "Instagram standby (another app holds the thread): recorded, not answered",
    "instagram",
    messaging("instagram", { message: { mid: "m3", text: "hello?" } }, "standby"),
    { kind: "record", role: "user", why: "standby", text: "hello?" },
  ],
  [
    "Instagram postback (a button tap): title and payload",
    "instagram",
    messaging("instagram", { postback: { title: "Reservar", payload: "BOOK" } }),
    { kind: "message", text: "Reservar (payload: BOOK)" },
  ],
  [
    "Instagram referral: recorded, not answered",
    "instagram",
    messaging("instagram", { referral: { ref: "promo", source: "SHORTLINK", type: "OPEN_THREAD" } }),
    { kind: "record", role: "event", why: "referral", text: "[referral: SHORTLINK, OPEN_THREAD] ref promo" },
  ],
  [
    "Instagram comments field: not a conversation",
    "instagram",
    { object: "instagram", entry: [{ id: IG, changes: [{ field: "comments", value: {} }] }] },
    { kind: "ignored", reason: "field comments" },
  ],
  [
    "Messenger text",
    "messenger",
    messaging("page", { message: { mid: "m1", text: "hola página" } }),
    { kind: "message", channel: "messenger", account: PAGE, text: "hola página" },
  ],
  [
    "Messenger delivery receipt: a status of what the page sent",
    "messenger",
    messaging("page", { delivery: { mids: ["m.sent"], watermark: 1 } }),
    { kind: "status", id: "m.sent", status: "delivered" },
  ],
  [
    "Messenger read watermark",
    "messenger",
    messaging("page", { read: { watermark: 1764500000000 } }),
    { kind: "read", target: null },
  ],
  [
    "Messenger optin: nothing to do, named",
    "messenger",
    messaging("page", { optin: { ref: "x" } }),
    { kind: "ignored", reason: "event optin" },
  ],
];

describe("the inbound table: one outcome per kind of Meta event", () => {
  it.each(table)("%s", (_name, source, body, expected) => {
    const events = parseWebhook(source, body);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject(expected);
    // Never an empty string to the agent.
    const event = events[0]!;
    if (event.kind === "message" || event.kind === "record" || event.kind === "edit")
      expect(event.text.trim()).not.toBe("");
  });

  it("a WhatsApp person is their wa_id, with the BSUID kept; with only a BSUID, the BSUID", () => {
    const both = parseWebhook("whatsapp", whatsapp({ type: "text", text: { body: "x" } }))[0]!;
    expect(both).toMatchObject({ person: { id: "56911111111", userId: "CL.123456789", name: "Ana" } });
    const body = whatsapp({ type: "text", text: { body: "x" } });
    const value = body.entry[0]!.changes[0]!.value as { contacts: unknown; messages: Record<string, unknown>[] };
    value.contacts = [{ profile: { name: "Ana" }, user_id: "CL.123456789" }];
    delete value.messages[0]!.from;
    expect(parseWebhook("whatsapp", body)[0]).toMatchObject({
      kind: "message",
      person: { id: "CL.123456789", userId: "CL.123456789" },
    });
  });

  it("a delivery batching entries, changes and messages gives every event, in order", () => {
    const one = whatsapp({ type: "text", text: { body: "uno" } });
    const two = whatsapp({ id: "wamid.B", type: "text", text: { body: "dos" } });
    const batched = { object: one.object, entry: [...one.entry, ...two.entry] };
    expect(parseWebhook("whatsapp", batched).map((event) => (event as { text: string }).text)).toEqual(["uno", "dos"]);
  });
});
