// An MCP tool's result as a result callback's body (src/mcp/mcp-result.ts, docs/mcp-results.md): real results
// of the published test server `@modelcontextprotocol/server-everything` (run over stdio through the SDK's
// client), turned into the body against a real hub and PostgreSQL. Text is the message, structured content the
// data, an error a failure; an image and an embedded blob are stored with the conversation and served over
// HTTP by their `/media` link with their bytes and type; resource text is quoted or kept in data; resource
// links are linked or listed. Every body passes the callback's own validation.
import { randomUUID } from "node:crypto";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCallbackBody } from "../src/jobs/callbacks.js";
import { cutMessage, MESSAGE_LIMIT, resultOfMcp, type McpResultBody } from "../src/mcp/mcp-result.js";
import { startFakeAnthropic } from "./support/fake-anthropic.js";
import { hubNotices, replyOk, type FakeLlm, type LlmMessage, type LlmRequest } from "./support/fake-llm.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const SERVER = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

let hub: TestHub;
let client: Client;
let conversationId: string;

/** A tool of the everything server, called for real. */
async function call(name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The body, checked against what POST /callbacks/{token} accepts. */
async function bodyOf(result: CallToolResult, conversation = conversationId): Promise<McpResultBody> {
  const body = await resultOfMcp(hub.ctx, conversation, result);
  expect(() => parseCallbackBody(body)).not.toThrow();
  return body;
}

async function served(url: string) {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get("content-type"), bytes: Buffer.from(await res.arrayBuffer()) };
}

beforeAll(async () => {
  hub = await TestHub.start();
  client = new Client({ name: "mcp-result-test", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [SERVER, "stdio"], stderr: "ignore" }),
  );
  const session = await openSession(hub.url);
  expect(session.status).toBe(201);
  conversationId = session.conversationId;
}, 60_000);
afterAll(async () => {
  await client?.close();
  await hub?.stop();
});

describe("an MCP result as a callback's body", () => {
  it("echo: the text is the message, the blocks are the data", async () => {
    const word = `hello ${randomUUID()}`;
    const body = await bodyOf(await call("echo", { message: word }));
    expect(body).toEqual({
      result: "ok",
      message: `Echo: ${word}`,
      data: { content: [{ type: "text", text: `Echo: ${word}` }] },
    });
  });

  it("get-structured-content: structuredContent is the data, its text the message", async () => {
    const result = await call("get-structured-content", { location: "Chicago" });
    expect(result.structuredContent).toBeDefined();
    const body = await bodyOf(result);
    expect(body.result).toBe("ok");
    expect(body.data).toEqual(result.structuredContent);
    expect(JSON.parse(body.message!)).toEqual(result.structuredContent);
  });

  it("a long text is cut at the callback's limit with a note, and kept whole in data", async () => {
    const long = `start ${"x".repeat(MESSAGE_LIMIT * 2)} end`;
    const body = await bodyOf(await call("echo", { message: long }));
    expect(body.message!.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
    const left = `Echo: ${long}`.length - body.message!.indexOf("\n\n…(cut: ");
    expect(body.message).toMatch(
      /^Echo: start x+\n\n…\(cut: \d+ more characters; the whole text is in the result's data\)$/,
    );
    expect(body.message).toContain(`…(cut: ${left} more characters`);
    expect(body.data).toEqual({ content: [{ type: "text", text: `Echo: ${long}` }] });
    // Exactly at the limit: not cut.
    expect(cutMessage("y".repeat(MESSAGE_LIMIT))).toEqual({ message: "y".repeat(MESSAGE_LIMIT), cut: false });
  });

  it("isError: a failure whose message is the server's text; its files are not kept", async () => {
    // The everything server answers an unknown tool as a result with isError (the SDK's server does).
    const result = await call("no-such-tool");
    expect(result.isError).toBe(true);
    const body = await bodyOf(result);
    expect(body.result).toBe("error");
    expect(body.message).toContain("no-such-tool");
    expect(body.attachments).toBeUndefined();

    const image = await call("get-tiny-image");
    const before = await hub.db.upload.count({ where: { conversationId } });
    const failed = await bodyOf({ ...image, isError: true });
    expect(failed.result).toBe("error");
    expect(failed.attachments).toBeUndefined();
    expect(await hub.db.upload.count({ where: { conversationId } })).toBe(before);
  });

  it("get-tiny-image: stored with the conversation, linked, and served over HTTP with its bytes and type", async () => {
    const result = await call("get-tiny-image");
    const block = result.content.find((each) => each.type === "image")!;
    expect(block.type).toBe("image");
    const png = Buffer.from((block as { data: string }).data, "base64");
    const body = await bodyOf(result);
    expect(body.result).toBe("ok");
    expect(body.message).toBe("Here's the image you requested:\n\nThe image above is the MCP logo.");
    expect(body.attachments).toHaveLength(1);
    const attachment = body.attachments![0]!;
    expect(attachment).toMatchObject({ name: "image-1.png", mimeType: "image/png" });
    expect(attachment.url.startsWith(`${hub.url}/media/`)).toBe(true);
    // The data lists the image without its base64.
    expect(JSON.stringify(body.data)).not.toContain((block as { data: string }).data.slice(0, 40));
    expect((body.data as { content: unknown[] }).content).toContainEqual({
      type: "image",
      mimeType: "image/png",
      name: "image-1.png",
      bytes: png.length,
      attachment: true,
    });
    const got = await served(attachment.url);
    expect(got.status).toBe(200);
    expect(got.type).toBe("image/png");
    expect(got.bytes.equals(png)).toBe(true);
    // Kept as the conversation's file, named (retention's unattached sweep leaves it).
    const rows = await hub.db.upload.findMany({ where: { conversationId, name: "image-1.png" } });
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.attachedAt !== null && row.storedAt !== null)).toBe(true);
    // A changed token is refused.
    expect((await served(`${attachment.url.slice(0, -2)}xx`)).status).toBe(404);
  });

  it("a file deleted (erasure, retention) is no longer served", async () => {
    const other = await openSession(hub.url);
    const body = await bodyOf(await call("get-tiny-image"), other.conversationId);
    const url = body.attachments![0]!.url;
    expect((await served(url)).status).toBe(200);
    await hub.db.upload.deleteMany({ where: { conversationId: other.conversationId } });
    expect((await served(url)).status).toBe(404);
  });

  it("get-resource-reference (text): the resource's text is quoted in the message under its URI", async () => {
    const result = await call("get-resource-reference", { resourceType: "Text", resourceId: 1 });
    const resource = result.content.find((each) => each.type === "resource")!.resource as { uri: string; text: string };
    const body = await bodyOf(result);
    expect(body.message).toContain(`[resource ${JSON.stringify(resource.uri)}]\n${resource.text}`);
    expect((body.data as { content: unknown[] }).content).toContainEqual({
      type: "resource",
      uri: resource.uri,
      mimeType: "text/plain",
      text: resource.text,
    });
    expect(body.attachments).toBeUndefined();
  });

  it("a long embedded text resource stays in data, the message says where", async () => {
    const text = "line\n".repeat(1000);
    const body = await bodyOf({
      content: [{ type: "resource", resource: { uri: "demo://long", mimeType: "text/plain", text } }],
    });
    expect(body.message).toBe(`[resource "demo://long": ${text.length} characters, in the result's data]`);
    expect((body.data as { content: { text: string }[] }).content[0]!.text).toBe(text);
  });

  it("get-resource-reference (blob): stored as a file and served with its bytes and type", async () => {
    const result = await call("get-resource-reference", { resourceType: "Blob", resourceId: 2 });
    const resource = result.content.find((each) => each.type === "resource")!.resource as {
      uri: string;
      blob: string;
      mimeType: string;
    };
    const body = await bodyOf(result);
    expect(body.attachments).toHaveLength(1);
    expect(body.attachments![0]).toMatchObject({ name: "2", mimeType: resource.mimeType });
    const got = await served(body.attachments![0]!.url);
    expect(got.status).toBe(200);
    expect(got.type).toContain(resource.mimeType);
    expect(got.bytes.equals(Buffer.from(resource.blob, "base64"))).toBe(true);
    expect(JSON.stringify(body.data)).not.toContain(resource.blob);
  });

  it("get-resource-links: links that are not http(s) are listed in data and mentioned in the message", async () => {
    const result = await call("get-resource-links", { count: 3 });
    const links = result.content.filter((each) => each.type === "resource_link");
    expect(links).toHaveLength(3);
    const body = await bodyOf(result);
    expect(body.attachments).toBeUndefined();
    for (const link of links) {
      expect(body.message).toContain(`[resource link ${JSON.stringify(link.name)}: ${JSON.stringify(link.uri)}]`);
      expect((body.data as { content: unknown[] }).content).toContainEqual(
        expect.objectContaining({ type: "resource_link", uri: link.uri, name: link.name, mimeType: link.mimeType }),
      );
    }
  });

  it("an https resource link is an attachment", async () => {
    const body = await bodyOf({
      content: [
        {
          type: "resource_link",
          uri: "https://files.example.com/report.pdf",
          name: "Report",
          mimeType: "application/pdf",
        },
      ],
    });
    expect(body.attachments).toEqual([
      { url: "https://files.example.com/report.pdf", name: "Report", mimeType: "application/pdf" },
    ]);
    expect(body.message).toBeUndefined();
  });

  it("the server's text is data: control and bidi characters are taken out, names quoted", async () => {
    const body = await bodyOf({
      content: [
        { type: "text", text: "ok\u001b[2J\u0007 done\r\nnext\u202Eline" },
        { type: "resource_link", uri: "demo://x\n## Instructions", name: "evil\u202Egnp.exe\n\n# Do this" },
      ],
    });
    expect(body.message).toBe(
      'ok [2J  done\nnextline\n\n[resource link "evilgnp.exe # Do this": "demo://x ## Instructions"]',
    );
    for (const gone of ["\u0007", "\u001b", "\u202e"]) expect(body.message).not.toContain(gone);
  });

  it("a file over MEDIA_MAX_BYTES is left out with a note, not stored", async () => {
    const big = Buffer.alloc(hub.config.media.maxBytes + 1, 1).toString("base64");
    const before = await hub.db.upload.count({ where: { conversationId } });
    const body = await bodyOf({ content: [{ type: "image", data: big, mimeType: "image/png" }] });
    expect(body.attachments).toBeUndefined();
    expect(body.message).toBe(
      `[image image-1.png left out: larger than the ${hub.config.media.maxBytes} bytes a file may be]`,
    );
    expect(await hub.db.upload.count({ where: { conversationId } })).toBe(before);
  });
});

const PROVIDERS = [
  { name: "OpenAI Chat Completions", start: startFakeOpenAI, provider: "openai", model: "gpt-4o-mini" },
  { name: "Anthropic Messages", start: startFakeAnthropic, provider: "anthropic", model: "claude-sonnet-4-5" },
] as const;

/** A job tool of the test backend: its result is posted to its callback, as the MCP runtime commits one. */
const drawChart = `
description: Draws a chart.
parameters:
  type: object
  properties: { topic: { type: string } }
async:
  timeout: 10m
request:
  base_url: "$env.CLINIC_API"
  path: /vatio/chart
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
`;

for (const { name, start, provider, model } of PROVIDERS) {
  describe(`an MCP image result reaches the model on ${name} as an image`, () => {
    let llm: FakeLlm;
    let backend: ToolBackend;
    let modelHub: TestHub;
    const prefix = provider === "openai" ? "OPENAI" : "ANTHROPIC";

    beforeAll(async () => {
      backend = await startToolBackend();
      llm = await start(replyOk);
      modelHub = await TestHub.start({
        tools: { draw_chart: drawChart },
        env: {
          AGENT_MODEL: `${provider}:${model}`,
          [`${prefix}_API_KEY`]: llm.apiKey,
          [`${prefix}_BASE_URL`]: llm.url,
          TURN_RETRY_BASE_MS: "100",
        },
      });
    }, 60_000);
    afterAll(async () => {
      await modelHub?.stop();
      await llm?.stop();
      await backend?.stop();
    });

    /** The image in the request, in the API's own place: in the tool result, or in a user message right after it. */
    function expectImage(request: LlmRequest, at: number, png: Buffer) {
      expect(at).toBeGreaterThan(-1);
      const toolMessage = request.messages[at] as Extract<LlmMessage, { role: "tool" }>;
      if (provider === "anthropic") {
        expect(toolMessage.images?.map((image) => [image.mediaType, image.bytes.equals(png)])).toEqual([
          ["image/png", true],
        ]);
      } else {
        // Chat Completions takes no image in a tool message: a user message right after it, naming the call.
        expect(toolMessage.images).toBeUndefined();
        const next = request.messages[at + 1] as Extract<LlmMessage, { role: "user" }>;
        expect(next.role).toBe("user");
        expect(next.text).toContain("The images the result of draw_chart");
        expect(next.images?.map((image) => [image.mediaType, image.bytes.equals(png)])).toEqual([["image/png", true]]);
      }
    }

    async function startChart(conversation: string) {
      const started = await modelHub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "draw_chart",
        arguments: { topic: "sales" },
      });
      expect(started.status).toBe(202);
      const jobId = (started.body as { job: { id: string } }).job.id;
      await eventually(() => backend.jobs.find((job) => job.id === jobId), "the backend's job");
      return jobId;
    }

    async function postImage(conversation: string, jobId: string) {
      const result = await call("get-tiny-image");
      const png = Buffer.from(
        (result.content.find((each) => each.type === "image") as { data: string }).data,
        "base64",
      );
      const body = await resultOfMcp(modelHub.ctx, conversation, result);
      expect((await backend.post(jobId, body)).status).toBe(200);
      return png;
    }

    it("a job's result that came before the model saw its call: the call's answer, with the image", async () => {
      const session = await openSession(modelHub.url);
      const jobId = await startChart(session.conversationId);
      const before = llm.requests.length;
      const png = await postImage(session.conversationId, jobId);
      const request = await eventually(
        () =>
          llm.requests.slice(before).find((each) => JSON.stringify(each.messages).includes("image-1.png (image/png)")),
        "the model's request with the result",
      );
      const at = request.messages.findIndex(
        (message) => message.role === "tool" && message.content.includes('"files":["image-1.png (image/png)"]'),
      );
      expectImage(request, at, png);
      // The person's reply carries the file, with the hub's own link.
      const job = await modelHub.db.job.findUniqueOrThrow({ where: { id: jobId } });
      expect(job.status).toBe("succeeded");
      const got = await served((job.attachments as { url: string }[])[0]!.url);
      expect([got.status, got.type, got.bytes.equals(png)]).toEqual([200, "image/png", true]);
    });

    it("a job's result the model waited for: the hub's notice, with the image", async () => {
      const session = await openSession(modelHub.url);
      const person = await WidgetClient.connect(modelHub.url, { token: session.token });
      try {
        const jobId = await startChart(session.conversationId);
        // A turn sees the call's placeholder first.
        const seen = llm.requests.length;
        await person.send("how is my chart going?", randomUUID());
        await eventually(() => llm.requests.length > seen || undefined, "a turn with the placeholder");
        await modelHub.settled();
        const before = llm.requests.length;
        const png = await postImage(session.conversationId, jobId);
        const request = await eventually(
          () =>
            llm.requests
              .slice(before)
              .find((each) =>
                hubNotices(each).some((notice) => notice.status === "completed" && notice.tool === "draw_chart"),
              ),
          "the model's request with the notice",
        );
        const notice = hubNotices(request).find((each) => each.tool === "draw_chart")!;
        expect(notice.result).toMatchObject({ files: ["image-1.png (image/png)"] });
        const at = request.messages.findIndex(
          (message) => message.role === "tool" && message.content.includes('"tool":"draw_chart"'),
        );
        expectImage(request, at, png);
      } finally {
        person.close();
      }
    });
  });
}
