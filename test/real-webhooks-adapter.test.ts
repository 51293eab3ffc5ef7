// The adapter that turns the real Meta webhook bodies (read from ../shared/real-webhooks at test time) into
// deliveries a replay can sign and post: every rule of the folder's SOURCES.md checked on the real files.
// Needs neither PostgreSQL nor Redis; skipped, saying why, when the folder is not there.
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  batch,
  loadRealWebhooks,
  readManifest,
  readRealWebhook,
  realWebhooksAvailable,
  realWebhooksDir,
  replayIdSuffix,
  withInstagramAccount,
  withPhoneNumberId,
  type JsonValue,
  type RealWebhook,
  type RealWebhookOptions,
} from "./support/real-webhooks.js";

const FILE_COUNT = 117;
const PHONE_NUMBER_ID = "109000000000001";
const INSTAGRAM_ACCOUNT = "17841400000000001";
const PAGE_ID = "100000000000001";
const TARGETS = { A: "wamid.HUB-SENT-A", B: "wamid.HUB-SENT-B", C: "wamid.HUB-SENT-C", G: "wamid.HUB-SENT-G" };

const options = (run: string, extra: Partial<RealWebhookOptions> = {}): RealWebhookOptions => ({
  whatsappPhoneNumberId: PHONE_NUMBER_ID,
  instagramAccountId: INSTAGRAM_ACCOUNT,
  pageId: PAGE_ID,
  now: new Date(),
  run,
  statusTargets: TARGETS,
  ...extra,
});

const isObject = (value: unknown): value is Record<string, JsonValue> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Every [key, value, holder] triple in a body, at any depth. */
function* fields(node: JsonValue): Generator<[string, JsonValue, Record<string, JsonValue>]> {
  if (Array.isArray(node)) for (const item of node) yield* fields(item);
  else if (isObject(node))
    for (const [key, value] of Object.entries(node)) {
      yield [key, value, node];
      yield* fields(value);
    }
}

const at = (node: JsonValue, dotted: string): JsonValue | undefined =>
  dotted.split(".").reduce<JsonValue | undefined>((value, key) => (isObject(value) ? value[key] : undefined), node);

/** The events a manifest link path is relative to. */
const eventsOf = (record: RealWebhook): JsonValue[] =>
  record.body.entry.flatMap((entry) => {
    const changes = Array.isArray(entry.changes) ? entry.changes.filter(isObject).map((c) => c.value ?? null) : [];
    const whatsApp = changes
      .filter(isObject)
      .flatMap((value) => [
        ...(Array.isArray(value.messages) ? value.messages : []),
        ...(Array.isArray(value.message_echoes) ? value.message_echoes : []),
      ]);
    const messaging = [entry.messaging, entry.standby].flatMap((list) => (Array.isArray(list) ? list : []));
    return [...whatsApp, ...messaging];
  });

const available = realWebhooksAvailable();

describe.skipIf(!available)(
  available ? "real Meta webhooks, adapted for replay" : `real Meta webhooks: skipped, ${realWebhooksDir()} not found`,
  () => {
    const dir = realWebhooksDir();
    const manifest = available ? readManifest() : [];
    // 50 ms into a second: the earlier files' times fall in the second before, in seconds as in milliseconds.
    const now = new Date(Math.floor(Date.now() / 1000) * 1000 + 50);
    const run = `t${process.pid}${Date.now().toString(36)}`;
    const records = available ? loadRealWebhooks(options(run, { now })) : [];
    const byFile = new Map(records.map((record) => [record.file, record]));

    it("lists every file of the folder once, and each is a JSON object with an object and entries", () => {
      expect(manifest).toHaveLength(FILE_COUNT);
      const files = fs.readdirSync(dir).filter((name) => name.endsWith(".json") && name !== "manifest.json");
      expect(new Set(manifest.map((entry) => entry.file))).toEqual(new Set(files));
      for (const { file } of manifest) {
        const raw: unknown = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
        expect(isObject(raw), file).toBe(true);
        const body = readRealWebhook(file);
        expect(typeof body.object, file).toBe("string");
        expect(body.entry.length, file).toBeGreaterThan(0);
      }
      expect(records.map((record) => record.file)).toEqual(manifest.map((entry) => entry.file));
    });

    it("replays each body under its object (asObject applied) with the hub's business ids", () => {
      for (const [index, entry] of manifest.entries()) {
        const record = records[index]!;
        const object = entry.asObject ?? readRealWebhook(entry.file).object;
        expect(record.object, entry.file).toBe(object);
        expect(record.body.object, entry.file).toBe(object);
        if (record.keepIds) {
          expect(record.body).toMatchObject({ entry: [{ id: readRealWebhook(entry.file).entry[0]!.id }] });
          continue;
        }
        if (object === "whatsapp_business_account") {
          const metadata = [...fields(record.body)].filter(([key]) => key === "metadata").map(([, value]) => value);
          for (const value of metadata) expect(at(value, "phone_number_id"), entry.file).toBe(PHONE_NUMBER_ID);
        } else {
          const account = object === "page" ? PAGE_ID : INSTAGRAM_ACCOUNT;
          for (const item of record.body.entry) expect(item.id, entry.file).toBe(account);
          for (const event of eventsOf(record)) {
            const echo = at(event, "message.is_echo") === true;
            expect(at(event, echo ? "sender.id" : "recipient.id"), entry.file).toBe(account);
            expect(at(event, echo ? "recipient.id" : "sender.id"), entry.file).not.toBe(account);
          }
        }
      }
      expect(byFile.get("page-restfb-messenger-quick-reply.json")!.object).toBe("page");
      expect(byFile.get("ig-restfb-reaction-react.json")!.object).toBe("instagram");
    });

    it("leaves no placeholder phone: every from, to, wa_id and recipient is a number (a group's id aside)", () => {
      const keys = new Set(["from", "to", "wa_id", "recipient_id", "display_phone_number", "recipient_participant_id"]);
      let checked = 0;
      for (const record of records.filter((r) => r.object === "whatsapp_business_account")) {
        for (const [key, value, holder] of fields(record.body)) {
          if (!keys.has(key) || typeof value !== "string") continue;
          if (key === "recipient_id" && holder.recipient_type === "group") continue;
          expect(value, `${record.file} ${key}`).toMatch(/^\+?\d+$/);
          checked++;
        }
        for (const contact of record.contacts.filter((id) => !id.startsWith("BSUID") && !id.startsWith("US.")))
          expect(contact, record.file).toMatch(/^\d+$/);
      }
      expect(checked).toBeGreaterThan(200);
      // One fictional number per placeholder, the same wherever it appears.
      const revoke = byFile.get("wa-pywa-deleted-revoke.json")!;
      const echo = byFile.get("wa-pywa-smb-echo-text.json")!;
      expect(at(eventsOf(echo)[0]!, "to")).toBe(at(eventsOf(revoke)[0]!, "from"));
      expect(at(eventsOf(echo)[0]!, "from")).not.toBe(at(eventsOf(echo)[0]!, "to"));
    });

    it("gives every inbound message, echo, call and own status id its file suffix, unique across the set", () => {
      const all: string[] = [];
      for (const record of records) {
        const targeted = record.statusTarget && TARGETS[record.statusTarget.letter as keyof typeof TARGETS];
        const own = [...record.messageIds, ...record.echoIds, ...record.callIds, ...(targeted ? [] : record.statusIds)];
        if (record.keepIds) {
          expect(own, record.file).toEqual(["random_mid"]);
          continue;
        }
        for (const id of own) expect(id.endsWith(replayIdSuffix(record.file, run)), `${record.file}: ${id}`).toBe(true);
        all.push(...own);
      }
      expect(new Set(all).size).toBe(all.length);
      // One delivery repeating an id (two changes, both wamid.ID): the repeat is told apart.
      expect(byFile.get("wa-netflie-two-changes-one-delivery.json")!.messageIds).toEqual([
        `wamid.ID${replayIdSuffix("wa-netflie-two-changes-one-delivery.json", run)}`,
        `wamid.ID.2${replayIdSuffix("wa-netflie-two-changes-one-delivery.json", run)}`,
      ]);
      // The ids listed are the ones in the body.
      for (const record of records)
        for (const id of [...record.messageIds, ...record.echoIds, ...record.statusIds, ...record.callIds])
          expect(JSON.stringify(record.body), record.file).toContain(JSON.stringify(id));
      // Deletions and echoes are not the person's new messages.
      expect(byFile.get("ig-chatwoot-unsend.json")!.messageIds).toEqual([]);
      expect(byFile.get("ig-restfb-is-deleted-unknown.json")!.messageIds).toEqual([]);
      expect(byFile.get("ig-restfb-echo-text.json")!.messageIds).toEqual([]);
      expect(byFile.get("ig-restfb-echo-text.json")!.echoIds).toHaveLength(1);
      expect(byFile.get("wa-pywa-smb-echo-text.json")!.echoIds).toHaveLength(1);
    });

    it("points every link at the linked file's replayed id", () => {
      const linked = manifest.filter((entry) => entry.link);
      expect(linked.length).toBeGreaterThan(0);
      for (const entry of linked) {
        const record = byFile.get(entry.file)!;
        const target = byFile.get(entry.link!.to)!;
        expect(target.messageIds, entry.link!.to).toHaveLength(1);
        expect(record.linkedTo, entry.file).toEqual({
          path: entry.link!.path,
          file: target.file,
          id: target.messageIds[0],
        });
        const values = eventsOf(record).map((event) => at(event, entry.link!.path));
        expect(values, entry.file).toContain(target.messageIds[0]);
      }
      // The unsend names the story reply; the edit names the reply that named the first text.
      expect(byFile.get("ig-chatwoot-unsend.json")!.linkedTo!.id).toBe(
        byFile.get("ig-chatwoot-story-reply.json")!.messageIds[0],
      );
      expect(byFile.get("ig-restfb-message-edit.json")!.linkedTo!.id).toBe(
        byFile.get("ig-chatwoot-reply-to-mid.json")!.messageIds[0],
      );
      for (const record of records.filter((r) => !r.linkedTo)) expect(record.linkedTo).toBeUndefined();
    });

    it("points status targets at the given wamids, and keeps a status's own id for a letter not given", () => {
      const withTarget = manifest.filter((entry) => entry.status);
      expect(withTarget.length).toBeGreaterThan(0);
      for (const entry of withTarget) {
        const record = byFile.get(entry.file)!;
        expect(record.statusIds.length, entry.file).toBeGreaterThan(0);
        const letter = entry.status!.target;
        expect(record.statusTarget, entry.file).toEqual(
          letter ? { letter, ...(entry.status!.order !== undefined ? { order: entry.status!.order } : {}) } : undefined,
        );
        const wamid = letter ? TARGETS[letter as keyof typeof TARGETS] : undefined;
        for (const id of record.statusIds)
          if (wamid) expect(id, entry.file).toBe(wamid);
          else expect(id.endsWith(replayIdSuffix(entry.file, run)), `${entry.file}: ${id}`).toBe(true);
      }
      expect(byFile.get("wa-netflie-status-conversation-initiated.json")!.statusTarget).toEqual({
        letter: "G",
        order: 1,
      });
      expect(byFile.get("wa-pywa-status-failed.json")!.statusIds[0]).not.toBe(TARGETS.A);
    });

    it("sets every event time to now, in the original's unit and the manifest's order; chatwoot's ISO times become milliseconds", () => {
      const timeKeys = ["time", "timestamp", "created_timestamp"];
      // File i of n is at now − (n − 1 − i) ms: the manifest's order is the order of the events' times.
      const atOf = (file: string) => now.getTime() - (records.length - 1 - records.findIndex((r) => r.file === file));
      for (const record of records) {
        const times = [...fields(record.body)].filter(([key]) => timeKeys.includes(key));
        const original = [...fields(readRealWebhook(record.file))].filter(([key]) => timeKeys.includes(key));
        expect(times.length, record.file).toBeGreaterThan(0);
        expect(times.length, record.file).toBe(original.length);
        for (const [key, value] of times) {
          expect(typeof value === "number" || (typeof value === "string" && /^\d+$/.test(value)), record.file).toBe(
            true,
          );
          const n = Number(value);
          const ms = n < 1e11 ? n * 1000 : n;
          // Seconds: within the second of the file's time.
          expect(Math.abs(ms - atOf(record.file)), `${record.file} ${key}=${String(value)}`).toBeLessThan(1000);
        }
      }
      const whatsApp = eventsOf(byFile.get("wa-pywa-text.json")!)[0]!;
      expect(at(whatsApp, "timestamp")).toBe(String(Math.floor(atOf("wa-pywa-text.json") / 1000)));
      const chatwoot = byFile.get("ig-chatwoot-text.json")!.body.entry[0]!;
      expect(chatwoot.time).toBe(atOf("ig-chatwoot-text.json"));
      // A reaction and its withdrawal, in the order the person made them.
      const reactionTime = (file: string) => Number(at(eventsOf(byFile.get(file)!)[0]!, "timestamp"));
      expect(reactionTime("ig-restfb-reaction-react.json")).toBeLessThan(
        reactionTime("ig-restfb-reaction-unreact.json"),
      );
      // An expiry keeps its distance from its event: 20h15m after the status in the original.
      const sent = byFile.get("wa-pywa-status-sent.json")!.body;
      const expiry = [...fields(sent)].find(([key]) => key === "expiration_timestamp")![1];
      expect(Number(expiry) - Math.floor(atOf("wa-pywa-status-sent.json") / 1000)).toBe(1698339900 - 1698266945);
    });

    it("gives two runs disjoint ids (the Dashboard test, replayed with Meta's ids, aside)", () => {
      const ids = (list: RealWebhook[]) =>
        list.filter((r) => !r.keepIds).flatMap((r) => [...r.messageIds, ...r.echoIds, ...r.callIds, ...r.statusIds]);
      const other = loadRealWebhooks(options(`${run}b`, { now, statusTargets: {} }));
      const first = new Set(ids(records));
      expect(ids(other).filter((id) => first.has(id))).toEqual([]);
      // Within a run the result is stable: loading again gives the same bodies.
      expect(loadRealWebhooks(options(run, { now })).map((r) => r.body)).toEqual(records.map((r) => r.body));
    });

    it("names the person of each event: the sender of the person's events, the recipient of echoes", () => {
      expect(byFile.get("wa-pywa-text.json")!.contacts).toEqual(["972987654321"]);
      expect(byFile.get("wa-netflie-bsuid-only-no-from.json")!.contacts).toEqual(["BSUID_123"]);
      expect(byFile.get("ig-chatwoot-text.json")!.contacts).toEqual(["Sender-id-1"]);
      expect(byFile.get("ig-restfb-quick-reply.json")!.contacts).toEqual(["987654321432"]);
      expect(byFile.get("ig-chatwoot-story-mention-echo.json")!.contacts).toEqual(["chatwoot-app-user-id-1"]);
      for (const record of records.filter((r) => r.messageIds.length > 0))
        expect(record.contacts.length, record.file).toBeGreaterThan(0);
    });

    it("builds a delivery for another phone number or account, and batches deliveries of one object", () => {
      const text = byFile.get("wa-pywa-text.json")!;
      const elsewhere = withPhoneNumberId(text.body, "2222222222");
      expect(at(eventsOf({ ...text, body: elsewhere })[0]!, "id")).toBe(`${text.messageIds[0]}~2222222222`);
      expect(JSON.stringify(elsewhere)).toContain('"phone_number_id":"2222222222"');
      expect(JSON.stringify(elsewhere)).not.toContain(PHONE_NUMBER_ID);
      expect(JSON.stringify(text.body)).toContain(PHONE_NUMBER_ID); // the original is left as it was

      const ig = byFile.get("ig-chatwoot-text.json")!;
      const otherAccount = withInstagramAccount(ig.body, "17841400000000002");
      expect(otherAccount.entry[0]!.id).toBe("17841400000000002");
      expect(at(eventsOf({ ...ig, body: otherAccount })[0]!, "recipient.id")).toBe("17841400000000002");
      expect(at(eventsOf({ ...ig, body: otherAccount })[0]!, "message.mid")).toBe(
        `${ig.messageIds[0]}~17841400000000002`,
      );
      const seen = withInstagramAccount(byFile.get("ig-chatwoot-seen.json")!.body, "17841400000000002");
      expect(JSON.stringify(seen)).toContain(JSON.stringify(byFile.get("ig-chatwoot-seen.json")!.linkedTo!.id));

      const whatsAppBatch = batch([text.body, byFile.get("wa-pywa-status-read.json")!.body, elsewhere]);
      expect(whatsAppBatch.object).toBe("whatsapp_business_account");
      expect(whatsAppBatch.entry).toHaveLength(3);
      expect(() => batch([text.body, ig.body])).toThrow(/not one object/);
      expect(() => withPhoneNumberId(ig.body, "1")).toThrow();
      expect(() => withInstagramAccount(text.body, "1")).toThrow();
    });

    it("refuses a run suffix that would make ids ambiguous", () => {
      expect(() => loadRealWebhooks(options(""))).toThrow();
      expect(() => loadRealWebhooks(options("a~b"))).toThrow();
    });
  },
);

describe("real webhooks folder absent", () => {
  const saved = process.env.REAL_WEBHOOKS_DIR;
  afterEach(() => {
    if (saved === undefined) delete process.env.REAL_WEBHOOKS_DIR;
    else process.env.REAL_WEBHOOKS_DIR = saved;
  });

  it("reports unavailable instead of throwing", () => {
    const missing = path.join(process.cwd(), "no-such-folder-for-real-webhooks");
    process.env.REAL_WEBHOOKS_DIR = missing;
    expect(realWebhooksDir()).toBe(missing);
    expect(() => realWebhooksAvailable()).not.toThrow();
    expect(realWebhooksAvailable()).toBe(false);
    expect(() => loadRealWebhooks(options("absent"))).toThrow(/manifest\.json/);
  });

  it("defaults to ../shared/real-webhooks from the repository root", () => {
    delete process.env.REAL_WEBHOOKS_DIR;
    expect(realWebhooksDir()).toBe(path.resolve("../shared/real-webhooks"));
  });
});
