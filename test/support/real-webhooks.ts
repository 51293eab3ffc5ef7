// Real Meta webhook bodies (WhatsApp Cloud API, Instagram, Messenger) collected from other projects, read
// at test time from a folder outside the repository and adapted for replay as its SOURCES.md says: the
// business ids become the hub's, timestamps become now (a millisecond apart, in manifest order, so a
// reaction and its withdrawal keep their order), every id the fixtures reuse (`wamid.ID`,
// `message-id-1` ...) becomes unique to its file and run, placeholder phones become numbers, and the
// events that name an earlier message (`link`) or an outbound one (`status.target`) are pointed at it.
//
// Pure: reads files, touches no network and imports nothing of the hub, so a replay test checks the hub
// against bodies shaped by Meta, not by the hub's own idea of them.
import fs from "node:fs";
import path from "node:path";

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** One webhook delivery: what Meta POSTs. */
export interface WebhookBody {
  [key: string]: JsonValue;
  object: string;
  entry: JsonObject[];
}

/** The channel the manifest files a body under ("page" is the Messenger delivery). */
export type ReplayChannel = "whatsapp" | "instagram" | "page";

export interface ManifestEntry {
  file: string;
  channel: ReplayChannel;
  source?: { repo: string; path: string; commit: string; key?: string };
  /** The event names an earlier message (deleted, edited, reacted to, read, replied to) of file `to`. */
  link?: { path: string; to: string };
  /** A status to point at an outbound message of the run (`target` A..H), or left unknown (null). */
  status?: { target: string | null; order?: number };
  /** Replayed under this `object` (Messenger Platform events replayed as Instagram ones). */
  asObject?: string;
  /** Replayed with every id as Meta sends it (its times still become now). */
  keepIds?: boolean;
  note?: string;
}

export interface RealWebhookOptions {
  whatsappPhoneNumberId: string;
  instagramAccountId: string;
  pageId: string;
  now: Date;
  /** Unique per test run, so that two runs never share an id (no "~" in it). */
  run: string;
  /** Status target letter (A..H) → a wamid the hub really sent; a letter left out keeps the status's own id. */
  statusTargets?: Partial<Record<string, string>>;
  /** The folder to read; realWebhooksDir() by default. */
  dir?: string;
}

export interface RealWebhook {
  file: string;
  channel: ReplayChannel;
  /** The body's `object` after `asObject`. */
  object: string;
  body: WebhookBody;
  /** Ids of the person's new messages, as adapted: WhatsApp messages[].id; Instagram/Messenger message.mid
   *  of events that are neither echoes nor deletions (postback.mid too). */
  messageIds: string[];
  /** Ids of echoes of what the business sent: Instagram is_echo mids, WhatsApp message_echoes[].id. */
  echoIds: string[];
  /** WhatsApp calls[].id. */
  callIds: string[];
  /** The earlier message the event names, and the id it now holds (the linked file's replayed id). */
  linkedTo?: { path: string; file: string; id: string };
  statusTarget?: { letter: string; order?: number };
  /** statuses[].id after adaptation: the target's wamid when one was given, else the status's own id. */
  statusIds: string[];
  keepIds: boolean;
  /** The person ids: WhatsApp wa_id/from (or user_id), status recipient, echo `to`; Instagram/Messenger the
   *  sender of the person's events and the recipient of echoes. */
  contacts: string[];
}

export function realWebhooksDir(): string {
  return process.env.REAL_WEBHOOKS_DIR ?? path.resolve("../shared/real-webhooks");
}

/** Whether the folder and its manifest are there; never throws, so a test can skip with a reason. */
export function realWebhooksAvailable(dir: string = realWebhooksDir()): boolean {
  try {
    return fs.statSync(path.join(dir, "manifest.json")).isFile();
  } catch {
    return false;
  }
}

/** The suffix every id of `file` gets in `run` (before it, `.2`, `.3` for an id repeated in one delivery). */
export function replayIdSuffix(file: string, run: string): string {
  return `~${file}~${run}`;
}

export function readManifest(dir: string = realWebhooksDir()): ManifestEntry[] {
  const parsed: unknown = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8"));
  if (!Array.isArray(parsed)) throw new Error(`${dir}/manifest.json: not a list`);
  return parsed.map((item: unknown, index) => manifestEntry(item, `${dir}/manifest.json[${index}]`));
}

/** A file exactly as stored. */
export function readRealWebhook(file: string, dir: string = realWebhooksDir()): WebhookBody {
  const parsed: unknown = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
  if (!isObject(parsed) || typeof parsed.object !== "string" || !Array.isArray(parsed.entry))
    throw new Error(`${file}: not a webhook body (object and entry)`);
  const entry = parsed.entry.filter(isObject);
  if (entry.length !== parsed.entry.length) throw new Error(`${file}: an entry is not an object`);
  return { ...parsed, object: parsed.object, entry };
}

/** Every manifest file, adapted for replay, in manifest order. */
export function loadRealWebhooks(options: RealWebhookOptions): RealWebhook[] {
  if (!options.run || options.run.includes("~")) throw new Error("run: a non-empty suffix without '~'");
  const dir = options.dir ?? realWebhooksDir();
  const manifest = readManifest(dir);
  const phones = new Map<string, string>();
  // The files' times end at now, a millisecond apart: Meta's order of two events is in their times.
  const nowMs = options.now.getTime();
  const adapted = manifest.map((entry, index) =>
    adapt(entry, readRealWebhook(entry.file, dir), options, phones, nowMs - (manifest.length - 1 - index)),
  );
  // Links last: the file a link names is adapted (its own id suffixed) by now, wherever it is in the list.
  const byFile = new Map(adapted.map((record) => [record.file, record]));
  for (const [index, entry] of manifest.entries()) {
    const record = adapted[index];
    if (!entry.link || !record) continue;
    const target = byFile.get(entry.link.to);
    const id = target?.messageIds[0];
    if (!target || target.messageIds.length !== 1 || id === undefined)
      throw new Error(`${entry.file}: link to ${entry.link.to}, which is not one message in the manifest`);
    const events = eventsOf(record.body);
    let set = 0;
    for (const event of events) if (setPath(event, entry.link.path, id)) set++;
    if (set === 0) throw new Error(`${entry.file}: no event has ${entry.link.path}`);
    record.linkedTo = { path: entry.link.path, file: target.file, id };
  }
  return adapted;
}

/** A copy of a WhatsApp delivery addressed to another phone number of the app, with fresh ids for what the
 *  person sent (statuses keep theirs: they name messages the hub sent; links keep the message they name). */
export function withPhoneNumberId(
  body: WebhookBody,
  phoneNumberId: string,
  idTag: string = phoneNumberId,
): WebhookBody {
  if (body.object !== "whatsapp_business_account") throw new Error(`not a WhatsApp delivery: ${body.object}`);
  const copy = structuredClone(body);
  for (const value of whatsAppValues(copy)) {
    const metadata = value.metadata;
    if (isObject(metadata)) metadata.phone_number_id = phoneNumberId;
    for (const key of ["messages", "message_echoes", "calls"])
      for (const item of objects(value[key])) if (typeof item.id === "string") item.id = `${item.id}~${idTag}`;
  }
  return copy;
}

/** A copy of an Instagram delivery for another Instagram account of the app, with fresh mids for the messages
 *  and echoes (reads, reactions, edits, replies and deletions keep naming the message they name). */
export function withInstagramAccount(body: WebhookBody, accountId: string, idTag: string = accountId): WebhookBody {
  if (body.object !== "instagram") throw new Error(`not an Instagram delivery: ${body.object}`);
  const copy = structuredClone(body);
  for (const entry of copy.entry) {
    entry.id = accountId;
    for (const event of messagingEvents(entry)) {
      const message = isObject(event.message) ? event.message : undefined;
      const side = message?.is_echo === true ? event.sender : event.recipient;
      if (isObject(side)) side.id = accountId;
      if (message && message.is_deleted !== true && typeof message.mid === "string")
        message.mid = `${message.mid}~${idTag}`;
      const postback = event.postback;
      if (isObject(postback) && typeof postback.mid === "string") postback.mid = `${postback.mid}~${idTag}`;
    }
  }
  return copy;
}

/** Several deliveries of one object as one body, entries in order, the way Meta batches them. */
export function batch(bodies: WebhookBody[]): WebhookBody {
  const [first] = bodies;
  if (!first) throw new Error("batch: no delivery");
  const other = bodies.find((body) => body.object !== first.object);
  if (other) throw new Error(`batch: ${first.object} and ${other.object} are not one object`);
  return { object: first.object, entry: bodies.flatMap((body) => structuredClone(body.entry)) };
}

// ---------------------------------------------------------------------------------------------------------

const CHANNELS: readonly string[] = ["whatsapp", "instagram", "page"];

function manifestEntry(item: unknown, where: string): ManifestEntry {
  if (!isObject(item) || typeof item.file !== "string" || typeof item.channel !== "string")
    throw new Error(`${where}: no file or channel`);
  // A channel with no adaptation rules here would be replayed wrongly; better to stop.
  if (!CHANNELS.includes(item.channel)) throw new Error(`${where}: unknown channel ${item.channel}`);
  const entry: ManifestEntry = { file: item.file, channel: item.channel as ReplayChannel };
  const { source, link, status, asObject, keepIds, note } = item;
  if (isObject(source) && typeof source.repo === "string" && typeof source.path === "string")
    entry.source = {
      repo: source.repo,
      path: source.path,
      commit: String(source.commit ?? ""),
      ...(typeof source.key === "string" ? { key: source.key } : {}),
    };
  if (link !== undefined) {
    if (!isObject(link) || typeof link.path !== "string" || typeof link.to !== "string")
      throw new Error(`${where}: link needs path and to`);
    entry.link = { path: link.path, to: link.to };
  }
  if (status !== undefined) {
    if (!isObject(status) || !(typeof status.target === "string" || status.target === null))
      throw new Error(`${where}: status needs a target (a letter or null)`);
    entry.status = { target: status.target };
    if (typeof status.order === "number") entry.status.order = status.order;
  }
  if (typeof asObject === "string") entry.asObject = asObject;
  if (keepIds === true) entry.keepIds = true;
  if (typeof note === "string") entry.note = note;
  return entry;
}

/** What one load shares across files: one fake number per placeholder. */
type Phones = Map<string, string>;

function adapt(
  entry: ManifestEntry,
  original: WebhookBody,
  options: RealWebhookOptions,
  phones: Phones,
  atMs: number,
): RealWebhook {
  const body = structuredClone(original);
  if (entry.asObject) body.object = entry.asObject;
  const keepIds = entry.keepIds === true;
  const record: RealWebhook = {
    file: entry.file,
    channel: entry.channel,
    object: body.object,
    body,
    messageIds: [],
    echoIds: [],
    callIds: [],
    statusIds: [],
    keepIds,
    contacts: [],
  };
  if (entry.status?.target)
    record.statusTarget = {
      letter: entry.status.target,
      ...(entry.status.order !== undefined ? { order: entry.status.order } : {}),
    };
  // Fixtures reuse ids across files and even within one delivery: each own id gets the file and run, and a
  // repeat within the delivery a .2, .3 before them.
  const seen = new Map<string, number>();
  const ownId = (id: string) => {
    if (keepIds) return id;
    const count = (seen.get(id) ?? 0) + 1;
    seen.set(id, count);
    return `${id}${count > 1 ? `.${count}` : ""}${replayIdSuffix(entry.file, options.run)}`;
  };
  if (body.object === "whatsapp_business_account") {
    adaptWhatsApp(record, entry, options, phones, ownId);
  } else if (body.object === "instagram" || body.object === "page") {
    const account = body.object === "page" ? options.pageId : options.instagramAccountId;
    adaptMessaging(record, entry, account, ownId);
  } else {
    throw new Error(`${entry.file}: no replay rules for object ${body.object}`);
  }
  retime(body, atMs, undefined);
  return record;
}

function adaptWhatsApp(
  record: RealWebhook,
  entry: ManifestEntry,
  options: RealWebhookOptions,
  phones: Phones,
  ownId: (id: string) => string,
): void {
  const target = entry.status?.target ? options.statusTargets?.[entry.status.target] : undefined;
  const contacts = new Set<string>();
  const add = (...ids: (JsonValue | undefined)[]) => {
    const id = ids.find((candidate) => typeof candidate === "string" && candidate !== "");
    if (typeof id === "string") contacts.add(id);
  };
  if (!record.keepIds) fakePhones(record.body, phones);
  for (const value of whatsAppValues(record.body)) {
    const metadata = value.metadata;
    if (isObject(metadata) && !record.keepIds) metadata.phone_number_id = options.whatsappPhoneNumberId;
    for (const contact of objects(value.contacts)) add(contact.wa_id, contact.user_id);
    for (const message of objects(value.messages)) {
      if (typeof message.id === "string") record.messageIds.push((message.id = ownId(message.id)));
      add(message.from, message.from_user_id);
    }
    for (const status of objects(value.statuses)) {
      if (typeof status.id === "string") record.statusIds.push((status.id = target ?? ownId(status.id)));
      if (status.recipient_type === "group") add(status.recipient_participant_id, status.recipient_participant_user_id);
      else add(status.recipient_id, status.recipient_user_id);
    }
    for (const echo of objects(value.message_echoes)) {
      if (typeof echo.id === "string") record.echoIds.push((echo.id = ownId(echo.id)));
      add(echo.to, echo.to_user_id);
    }
    for (const call of objects(value.calls)) {
      if (typeof call.id === "string") record.callIds.push((call.id = ownId(call.id)));
      add(call.from);
    }
    for (const preference of objects(value.user_preferences)) add(preference.wa_id);
  }
  record.contacts = [...contacts];
}

/** Instagram and Messenger `messaging[]`/`standby[]` events (and the Dashboard test's `changes[].value`). */
function adaptMessaging(
  record: RealWebhook,
  entry: ManifestEntry,
  account: string,
  ownId: (id: string) => string,
): void {
  const contacts = new Set<string>();
  const add = (id: JsonValue | undefined) => {
    if ((typeof id === "string" && id !== "") || typeof id === "number") contacts.add(String(id));
  };
  // A link on message.mid makes that mid name an earlier message (an unsend), not a new one.
  const midIsLink = entry.link?.path === "message.mid";
  for (const item of record.body.entry) {
    if (!record.keepIds) item.id = account;
    for (const event of messagingEvents(item)) {
      const message = isObject(event.message) ? event.message : undefined;
      const echo = message?.is_echo === true;
      // The business is the recipient of the person's events and the sender of its own (echoes).
      const business = echo ? event.sender : event.recipient;
      if (isObject(business) && !record.keepIds) business.id = account;
      const person = echo ? event.recipient : event.sender;
      if (isObject(person)) add(person.id);
      if (message && typeof message.mid === "string" && !midIsLink) {
        message.mid = ownId(message.mid);
        if (echo) record.echoIds.push(message.mid);
        else if (message.is_deleted !== true) record.messageIds.push(message.mid);
      }
      const postback = event.postback;
      if (isObject(postback) && typeof postback.mid === "string")
        record.messageIds.push((postback.mid = ownId(postback.mid)));
    }
    for (const change of objects(item.changes)) {
      const value = change.value;
      if (isObject(value) && isObject(value.from)) add(value.from.id);
    }
  }
  record.contacts = [...contacts];
}

/** Events with the messaging shape: sender, recipient and one of message, read, reaction, postback ... */
function messagingEvents(entry: JsonObject): JsonObject[] {
  const changeValues = objects(entry.changes)
    .map((change) => change.value)
    .filter(isObject)
    .filter((value) => isObject(value.sender) || isObject(value.recipient));
  return [...objects(entry.messaging), ...objects(entry.standby), ...changeValues];
}

/** The events a link path is relative to: WhatsApp messages and echoes, Instagram/Messenger messaging. */
function eventsOf(body: WebhookBody): JsonObject[] {
  if (body.object !== "whatsapp_business_account") return body.entry.flatMap(messagingEvents);
  return whatsAppValues(body).flatMap((value) => [...objects(value.messages), ...objects(value.message_echoes)]);
}

function whatsAppValues(body: WebhookBody): JsonObject[] {
  return body.entry.flatMap((entry) => objects(entry.changes).map((change) => change.value)).filter(isObject);
}

/** Sets an existing field at a dotted path; false when the path is not in this event. */
function setPath(node: JsonObject, dotted: string, value: string): boolean {
  const keys = dotted.split(".");
  const last = keys.pop();
  let at: JsonValue | undefined = node;
  for (const key of keys) at = isObject(at) ? at[key] : undefined;
  if (!isObject(at) || last === undefined || !(last in at)) return false;
  at[last] = value;
  return true;
}

// Fields that hold a person's or the business's phone number in WhatsApp bodies.
const PHONE_KEYS = new Set(["from", "to", "wa_id", "recipient_id", "display_phone_number", "recipient_participant_id"]);
const PHONE_IN_SYSTEM = new Set(["wa_id", "customer"]);
const NUMERIC_PHONE = /^\+?\d+$/;

/** Placeholders such as PHONE_NUMBER or <WHATSAPP_USER_PHONE_NUMBER> → one fictional number each. */
function fakePhones(node: JsonValue, phones: Phones, parentKey = ""): void {
  if (Array.isArray(node)) {
    for (const item of node) fakePhones(item, phones, parentKey);
    return;
  }
  if (!isObject(node)) return;
  for (const [key, value] of Object.entries(node)) {
    const phoneField = PHONE_KEYS.has(key) || (parentKey === "system" && PHONE_IN_SYSTEM.has(key));
    // A group's recipient_id is the group's id, not a phone number.
    const groupId = key === "recipient_id" && node.recipient_type === "group";
    if (phoneField && !groupId && typeof value === "string" && !NUMERIC_PHONE.test(value)) {
      let fake = phones.get(value);
      if (fake === undefined) phones.set(value, (fake = `155501${String(phones.size + 1).padStart(5, "0")}`));
      node[key] = fake;
    } else {
      fakePhones(value, phones, key);
    }
  }
}

const EVENT_TIME_KEYS = ["time", "timestamp", "created_timestamp"];
const EXPIRY_KEYS = ["expiration", "expiration_timestamp"];

/** Event times → now, in the unit and type the original had (seconds or ms, string or number; an ISO string
 *  becomes ms). Expiries keep their distance from the event they belong to. */
function retime(node: JsonValue, nowMs: number, baseMs: number | undefined): void {
  if (Array.isArray(node)) {
    for (const item of node) retime(item, nowMs, baseMs);
    return;
  }
  if (!isObject(node)) return;
  let base = baseMs;
  for (const key of EVENT_TIME_KEYS) {
    const parsed = parseTime(node[key]);
    if (!parsed) continue;
    base = parsed.ms;
    node[key] = formatTime(parsed, nowMs);
  }
  for (const key of EXPIRY_KEYS) {
    const parsed = parseTime(node[key]);
    if (parsed && base !== undefined) node[key] = formatTime(parsed, nowMs + (parsed.ms - base));
  }
  for (const [key, value] of Object.entries(node))
    if (!EVENT_TIME_KEYS.includes(key) && !EXPIRY_KEYS.includes(key)) retime(value, nowMs, base);
}

interface ParsedTime {
  ms: number;
  unit: "s" | "ms" | "iso";
  asString: boolean;
}

function parseTime(value: JsonValue | undefined): ParsedTime | undefined {
  const asString = typeof value === "string";
  if (typeof value === "number" || (asString && /^\d+$/.test(value))) {
    const n = Number(value);
    // Meta's times are seconds (10 digits) or milliseconds (13).
    return n < 1e11 ? { ms: n * 1000, unit: "s", asString } : { ms: n, unit: "ms", asString };
  }
  if (asString) {
    const ms = Date.parse(value.replace(/([+-]\d\d)(\d\d)$/, "$1:$2"));
    if (!Number.isNaN(ms)) return { ms, unit: "iso", asString };
  }
  return undefined;
}

function formatTime(parsed: ParsedTime, ms: number): JsonValue {
  if (parsed.unit === "iso") return ms;
  const n = parsed.unit === "s" ? Math.floor(ms / 1000) : ms;
  return parsed.asString ? String(n) : n;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function objects(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}
