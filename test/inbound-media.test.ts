// Files a person sends on WhatsApp, Instagram and Messenger reach the agent as the hub's own `/media/<token>`
// URLs (docs/agent-runtime.md, Files the person sent): a real WhatsApp image webhook gives a URL that serves
// exactly the bytes the Graph stand-in holds for its media id — fetched with the number's token, which the
// stand-in checks — to any HTTP client, without a key, until it expires; a changed or expired token is
// refused. Instagram and Messenger files come from their CDN link (a local server stands in for Meta's CDN).
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnRequest } from "../src/agent/agent-port.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { readRealWebhook, realWebhooksAvailable, withPhoneNumberId, type JsonObject } from "./support/real-webhooks.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";

const APP_SECRET = "app-secret-for-media";
const HOUR = 3_600_000;

type UserInput = Extract<TurnRequest["inputs"][number], { type: "user_message" }>;

/**
 * A stand-in for Meta's CDN: serves each file at its path, with its type, or redirects (`redirects`: path →
 * Location). It listens on 127.0.0.2, the address MEDIA_HOSTS names; anything on 127.0.0.1 is off the list.
 */
async function startCdn(
  files: Record<string, { bytes: Buffer; type: string }>,
  redirects: Record<string, string> = {},
) {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://cdn").pathname;
    if (redirects[path]) return void res.writeHead(302, { Location: redirects[path] }).end();
    const file = files[path];
    if (!file) return void res.writeHead(404).end();
    res.writeHead(200, { "Content-Type": file.type, "Content-Length": file.bytes.length }).end(file.bytes);
  });
  server.listen(0, "127.0.0.2");
  await once(server, "listening");
  return { url: `http://127.0.0.2:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/** A server inside the hub's network (loopback, off MEDIA_HOSTS): what a person's link must never reach. */
async function startInternal() {
  const received: string[] = [];
  const server: Server = createServer((req, res) => {
    received.push(req.url ?? "");
    res.writeHead(200, { "Content-Type": "image/png" }).end("internal secret");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return { port, received, close: () => server.close() };
}

describe("files a person sends reach the agent as the hub's URLs", () => {
  let graph: FakeGraph;
  let hub: TestHub;
  let agent: AgentRuntime;
  let cdn: Awaited<ReturnType<typeof startCdn>>;
  let internal: Awaited<ReturnType<typeof startInternal>>;
  let clockOffset = 0;
  const photo = randomBytes(48_000);
  const pdf = Buffer.concat([Buffer.from("%PDF-1.4\n"), randomBytes(5000)]);
  const big = randomBytes(300_000);

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    graph = await new FakeGraph({ appSecret: APP_SECRET }).start();
    internal = await startInternal();
    cdn = await startCdn(
      {
        "/v/t1/photo.jpg": { bytes: photo, type: "image/jpeg" },
        "/v/t2/informe.pdf": { bytes: pdf, type: "application/pdf" },
        "/v/t3/big.mp4": { bytes: big, type: "video/mp4" },
      },
      {
        "/v/t4/moved.jpg": "/v/t1/photo.jpg",
        "/v/t5/inside.png": `http://127.0.0.1:${internal.port}/admin/secret.png`,
        "/v/t6/named.png": `http://localhost:${internal.port}/admin/secret.png`,
      },
    );
    hub = await TestHub.start({
      now: () => new Date(Date.now() + clockOffset),
      env: {
        ...metaEnvFor(graph, APP_SECRET),
        AGENT_URL: agent.url,
        AGENT_SECRET,
        MEDIA_URL_TTL: "1h",
        MEDIA_MAX_BYTES: "200000",
        // The CDN stand-in's address, named explicitly; `localhost` is a name that resolves to loopback.
        MEDIA_HOSTS: "127.0.0.2,localhost",
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    await hub?.stop();
    await graph?.stop();
    await agent?.stop();
    cdn?.close();
    internal?.close();
  });

  const userInputOf = async (contact: string): Promise<UserInput> => {
    const conversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { contact } }),
      `the conversation of ${contact}`,
    );
    const turn = await eventually(() => agent.turnsOf(conversation.id)[0], "the agent's turn");
    return turn.inputs.find((input): input is UserInput => input.type === "user_message")!;
  };

  /** The real WhatsApp image delivery, addressed to the stand-in's number, sent now by a new person. */
  function realImageWebhook(): { body: JsonObject; from: string; mediaId: string } {
    expect(realWebhooksAvailable(), "the real webhook bodies (REAL_WEBHOOKS_DIR)").toBe(true);
    const body = withPhoneNumberId(
      readRealWebhook("wa-bindambc-image-message.json"),
      graph.phoneNumberId,
      randomUUID(),
    );
    const value = (body.entry[0]!.changes as JsonObject[])[0]!.value as JsonObject;
    const from = `569${String(Date.now()).slice(-8)}`;
    (value.contacts as JsonObject[])[0]!.wa_id = from;
    const message = (value.messages as JsonObject[])[0]!;
    message.from = from;
    message.timestamp = String(Math.floor(Date.now() / 1000));
    return { body, from, mediaId: (message.image as JsonObject).id as string };
  }

  it("a WhatsApp image (a real delivery) gives the agent a URL serving exactly the Graph media's bytes", async () => {
    const { body, from, mediaId } = realImageWebhook();
    graph.media.add(mediaId, photo, "image/jpeg");
    expect(await graph.postWebhook(body)).toBe(200);

    const input = await userInputOf(from);
    expect(input.text).toBe("[image]");
    expect(input.attachments).toHaveLength(1);
    const [attachment] = input.attachments!;
    expect(attachment).toMatchObject({ mimeType: "image/jpeg" });
    expect(attachment!.url.startsWith(`${hub.url}/media/`)).toBe(true);
    const row = await hub.db.message.findUnique({ where: { id: input.messageId } });
    expect(row?.attachments).toEqual([{ mimeType: "image/jpeg", source: { kind: "whatsapp", mediaId } }]);

    // Any HTTP client, no key: the bytes, typed, never sniffed.
    const res = await fetch(attachment!.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-disposition")).toMatch(/^inline; filename="image-1\.jpeg"/);
    expect(Buffer.from(await res.arrayBuffer()).equals(photo)).toBe(true);
    // Looked up and downloaded with the number's own token.
    const requests = graph.media.requests.filter((request) => request.mediaId === mediaId);
    expect(requests.map((request) => [request.kind, request.status])).toEqual([
      ["lookup", 200],
      ["download", 200],
    ]);
    expect(requests.every((request) => request.token === graph.tokenFor(graph.phoneNumberId))).toBe(true);
    // Neither the token nor Graph's download link is in the hub's logs.
    const logs = hub.logs.join("");
    expect(logs).not.toContain(graph.tokenFor(graph.phoneNumberId));
    expect(logs).not.toContain("whatsapp_business/attachments");

    // Asked again later: looked up afresh (Graph's download links last minutes; the media id much longer).
    const again = await fetch(attachment!.url);
    expect(Buffer.from(await again.arrayBuffer()).equals(photo)).toBe(true);
  });

  it("the Graph stand-in refuses the media to another token, as Meta does", async () => {
    const mediaId = `${Date.now()}1`;
    graph.media.add(mediaId, photo, "image/png");
    const wrong = await fetch(`${graph.url}/${graph.version}/${mediaId}`, {
      headers: { Authorization: "Bearer someone-elses-token" },
    });
    expect(wrong.status).toBe(401);
    expect((await wrong.json()).error.code).toBe(190);
    const right = await fetch(`${graph.url}/${graph.version}/${mediaId}`, {
      headers: { Authorization: `Bearer ${graph.tokenFor(graph.phoneNumberId)}` },
    });
    const { url } = (await right.json()) as { url: string };
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { Authorization: "Bearer someone-elses-token" } })).status).toBe(401);
  });

  it("a token with one character changed, or naming no file, is refused with 404 JSON", async () => {
    const { body, from, mediaId } = realImageWebhook();
    graph.media.add(mediaId, photo, "image/jpeg");
    await graph.postWebhook(body);
    const { url } = (await userInputOf(from)).attachments![0]!;
    const token = url.slice(url.lastIndexOf("/") + 1);
    for (const position of [0, Math.floor(token.length / 2), token.length - 1]) {
      const changed = token.slice(0, position) + (token[position] === "A" ? "B" : "A") + token.slice(position + 1);
      const res = await fetch(`${hub.url}/media/${changed}`);
      expect(res.status, `changed at ${position}`).toBe(404);
      expect(res.headers.get("content-type")).toMatch(/application\/json/);
      expect((await res.json()).error.code).toBe("not_found");
    }
    expect((await fetch(`${hub.url}/media/not-a-token`)).status).toBe(404);
    expect((await fetch(url)).status).toBe(200);
  });

  it("a file Graph says is larger than MEDIA_MAX_BYTES is refused with 413 naming the limit", async () => {
    const { body, from, mediaId } = realImageWebhook();
    graph.media.add(mediaId, big, "image/jpeg");
    await graph.postWebhook(body);
    const res = await fetch((await userInputOf(from)).attachments![0]!.url);
    expect(res.status).toBe(413);
    const answer = await res.json();
    expect(answer.error.code).toBe("media_too_large");
    expect(answer.error.message).toContain("MEDIA_MAX_BYTES");
  });

  it("an Instagram image and a Messenger PDF are served from their CDN links", async () => {
    const igPerson = `ig-${randomUUID()}`;
    const pagePerson = `page-${randomUUID()}`;
    const event = (account: string, sender: string, attachment: Record<string, unknown>) => ({
      id: account,
      time: Date.now(),
      messaging: [
        {
          sender: { id: sender },
          recipient: { id: account },
          timestamp: Date.now(),
          message: { mid: `m_${randomUUID()}`, attachments: [attachment] },
        },
      ],
    });
    expect(
      await graph.postWebhook({
        object: "instagram",
        entry: [
          event(graph.igAccountId, igPerson, { type: "image", payload: { url: `${cdn.url}/v/t1/photo.jpg?sig=x` } }),
        ],
      }),
    ).toBe(200);
    expect(
      await graph.postWebhook({
        object: "page",
        entry: [
          event(graph.pageId, pagePerson, { type: "file", payload: { url: `${cdn.url}/v/t2/informe.pdf?sig=y` } }),
        ],
      }),
    ).toBe(200);

    const ig = await userInputOf(igPerson);
    expect(ig.text).toBe("[image]");
    expect(ig.attachments).toEqual([{ url: expect.stringMatching(/\/media\//), mimeType: "image/jpeg" }]);
    const igFile = await fetch(ig.attachments![0]!.url);
    expect(Buffer.from(await igFile.arrayBuffer()).equals(photo)).toBe(true);

    const page = await userInputOf(pagePerson);
    expect(page.attachments).toEqual([
      { url: expect.stringMatching(/\/media\//), mimeType: "application/pdf", name: "informe.pdf" },
    ]);
    const pageFile = await fetch(page.attachments![0]!.url);
    expect(pageFile.headers.get("content-type")).toBe("application/pdf");
    // Not shown as a page of the hub: downloaded, under its name.
    expect(pageFile.headers.get("content-disposition")).toMatch(/^attachment; filename="informe\.pdf"/);
    expect(Buffer.from(await pageFile.arrayBuffer()).equals(pdf)).toBe(true);
  });

  it("a CDN file declared larger than MEDIA_MAX_BYTES is refused with 413", async () => {
    const person = `ig-${randomUUID()}`;
    await graph.postWebhook({
      object: "instagram",
      entry: [
        {
          id: graph.igAccountId,
          time: Date.now(),
          messaging: [
            {
              sender: { id: person },
              recipient: { id: graph.igAccountId },
              timestamp: Date.now(),
              message: {
                mid: `m_${randomUUID()}`,
                attachments: [{ type: "video", payload: { url: `${cdn.url}/v/t3/big.mp4` } }],
              },
            },
          ],
        },
      ],
    });
    const res = await fetch((await userInputOf(person)).attachments![0]!.url);
    expect(res.status).toBe(413);
  });

  /** A signed Messenger delivery of a file at `url`; the hub's `/media` answer for it. */
  async function messengerFile(url: string): Promise<Response> {
    const person = `page-${randomUUID()}`;
    expect(
      await graph.postWebhook({
        object: "page",
        entry: [
          {
            id: graph.pageId,
            time: Date.now(),
            messaging: [
              {
                sender: { id: person },
                recipient: { id: graph.pageId },
                timestamp: Date.now(),
                message: { mid: `m_${randomUUID()}`, attachments: [{ type: "image", payload: { url } }] },
              },
            ],
          },
        ],
      }),
    ).toBe(200);
    return fetch((await userInputOf(person)).attachments![0]!.url);
  }

  it("a CDN link redirecting to another path of a host on MEDIA_HOSTS is followed", async () => {
    const res = await messengerFile(`${cdn.url}/v/t4/moved.jpg`);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(photo)).toBe(true);
  });

  it("a Messenger image whose link redirects to a loopback server is not fetched there: 502, and nothing reaches it", async () => {
    const res = await messengerFile(`${cdn.url}/v/t5/inside.png`);
    expect(res.status).toBe(502);
    const answer = await res.json();
    expect(answer.error).toMatchObject({ code: "media_unavailable" });
    expect(answer.error.message).toContain("127.0.0.1 is not one of MEDIA_HOSTS");
    expect(internal.received).toEqual([]);
  });

  it("a link off MEDIA_HOSTS, or a listed name resolving to a private address (directly or by redirect), is never fetched", async () => {
    for (const url of [
      `http://127.0.0.1:${internal.port}/admin/secret.png`,
      `http://localhost:${internal.port}/admin/secret.png`,
      `${cdn.url}/v/t6/named.png`,
      `http://[::1]:${internal.port}/admin/secret.png`,
    ]) {
      const res = await messengerFile(url);
      expect(res.status, url).toBe(502);
      expect((await res.json()).error.message, url).toMatch(/not one of MEDIA_HOSTS|resolves to a private address/);
    }
    expect(internal.received).toEqual([]);
  });

  // Last: it moves the hub's clock.
  it("the URL stops working once MEDIA_URL_TTL has passed (404, like an expired callback token)", async () => {
    const { body, from, mediaId } = realImageWebhook();
    graph.media.add(mediaId, photo, "image/jpeg");
    await graph.postWebhook(body);
    const { url } = (await userInputOf(from)).attachments![0]!;
    expect((await fetch(url)).status).toBe(200);
    clockOffset = HOUR + 1000;
    const res = await fetch(url);
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe("not_found");
  });
});
