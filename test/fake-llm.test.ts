// Checks the LLM stand-ins themselves: that the real AI SDK talks to them as to OpenAI and Anthropic, that
// they refuse what the real APIs refuse in the APIs' own error formats, and that a scripted rate limit reaches
// the SDK with its retry-after. Tests of the hub's agent built on them can then trust a green run.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import {
  APICallError,
  MissingToolResultsError,
  generateText,
  jsonSchema,
  tool,
  type LanguageModel,
  type ModelMessage,
} from "ai";
import { afterEach, describe, expect, it } from "vitest";
import { lastUserText, toolCallsIn, toolMessagesFor, type FakeLlm, type LlmAnswer } from "./support/fake-llm.js";
import { startFakeAnthropic } from "./support/fake-anthropic.js";
import { startFakeOpenAI } from "./support/fake-openai.js";

const tools = {
  lookup_order: tool({
    description: "Looks up an order by its id.",
    inputSchema: jsonSchema<{ orderId: string }>({
      type: "object",
      properties: { orderId: { type: "string" } },
      required: ["orderId"],
      additionalProperties: false,
    }),
  }),
};

const providers = [
  {
    name: "OpenAI chat completions",
    start: startFakeOpenAI,
    model: (fake: FakeLlm): LanguageModel =>
      createOpenAI({ baseURL: fake.url, apiKey: fake.apiKey }).chat("gpt-4o-mini"),
  },
  {
    name: "Anthropic messages",
    start: startFakeAnthropic,
    model: (fake: FakeLlm): LanguageModel =>
      createAnthropic({ baseURL: fake.url, apiKey: fake.apiKey })("claude-sonnet-4-5"),
  },
];

let fakes: FakeLlm[] = [];
afterEach(async () => {
  await Promise.all(fakes.map((fake) => fake.stop()));
  fakes = [];
});

async function started(start: () => Promise<FakeLlm>): Promise<FakeLlm> {
  const fake = await start();
  fakes.push(fake);
  return fake;
}

/** A thrown error, for assertions on what the SDK raised. */
async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

describe.each(providers)("the $name stand-in with the AI SDK", ({ name, start, model }) => {
  it("runs a two-step tool exchange: the call, then its tool message and the final text", async () => {
    const fake = await started(() =>
      start((_request, index) =>
        index === 0
          ? { toolCalls: [{ name: "lookup_order", args: { orderId: "A-17" } }], usage: { input: 120, output: 15 } }
          : { text: "Your order A-17 has shipped.", usage: { input: 180, output: 9 } },
      ),
    );
    const opening: ModelMessage[] = [{ role: "user", content: "Where is my order A-17?" }];
    const system = "You help people with their orders.";

    const first = await generateText({ model: model(fake), system, messages: opening, tools, maxRetries: 0 });
    expect(first.finishReason).toBe("tool-calls");
    expect(first.toolCalls).toHaveLength(1);
    const call = first.toolCalls[0]!;
    expect(call).toMatchObject({ type: "tool-call", toolName: "lookup_order", input: { orderId: "A-17" } });
    expect(call.toolCallId).toMatch(name.startsWith("OpenAI") ? /^call_/ : /^toolu_/);
    expect(first.usage).toMatchObject({ inputTokens: 120, outputTokens: 15, totalTokens: 135 });
    // Without `execute` the SDK stops after the call: the response is the assistant message alone.
    expect(first.response.messages).toEqual([
      {
        role: "assistant",
        content: [
          expect.objectContaining({ type: "tool-call", toolCallId: call.toolCallId, toolName: "lookup_order" }),
        ],
      },
    ]);

    const conversation: ModelMessage[] = [
      ...opening,
      ...first.response.messages,
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            output: { type: "json", value: { status: "shipped" } },
          },
        ],
      },
    ];
    const second = await generateText({ model: model(fake), system, messages: conversation, tools, maxRetries: 0 });
    expect(second.text).toBe("Your order A-17 has shipped.");
    expect(second.finishReason).toBe("stop");
    expect(second.usage).toMatchObject({ inputTokens: 180, outputTokens: 9 });

    expect(fake.requests).toHaveLength(2);
    expect(fake.refusals).toEqual([]);
    const request = fake.requests[1]!;
    expect(request.system).toBe(system);
    expect(request.tools).toEqual([
      {
        name: "lookup_order",
        description: "Looks up an order by its id.",
        parameters: expect.objectContaining({ type: "object", required: ["orderId"] }),
      },
    ]);
    expect(request.messages).toEqual([
      { role: "user", text: "Where is my order A-17?" },
      {
        role: "assistant",
        text: "",
        toolCalls: [{ id: call.toolCallId, name: "lookup_order", args: { orderId: "A-17" } }],
      },
      { role: "tool", toolCallId: call.toolCallId, content: '{"status":"shipped"}' },
    ]);
    expect(toolCallsIn(request).map((c) => c.id)).toEqual([call.toolCallId]);
    expect(toolMessagesFor(request, call.toolCallId)).toHaveLength(1);
    expect(lastUserText(request)).toBe("Where is my order A-17?");
  });

  it("refuses a result sent again after the conversation moved on, and the SDK raises it as an APICallError 400", async () => {
    const fake = await started(() => start());
    const conversation: ModelMessage[] = [
      { role: "user", content: "Where is my order A-17?" },
      {
        role: "assistant",
        content: [{ type: "tool-call", toolCallId: "call_A17", toolName: "lookup_order", input: { orderId: "A-17" } }],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "call_A17",
            toolName: "lookup_order",
            output: { type: "text", value: "shipped" },
          },
        ],
      },
      { role: "assistant", content: "It has shipped." },
      { role: "user", content: "Thanks!" },
      // The same result again, as a hub that forgot it was already read would send it.
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "call_A17",
            toolName: "lookup_order",
            output: { type: "text", value: "shipped" },
          },
        ],
      },
    ];
    const error = await failureOf(generateText({ model: model(fake), messages: conversation, tools, maxRetries: 0 }));
    expect(APICallError.isInstance(error)).toBe(true);
    const apiError = error as APICallError;
    expect(apiError.statusCode).toBe(400);
    expect(apiError.isRetryable).toBe(false);
    expect(apiError.message).toMatch(
      name.startsWith("OpenAI") ? /messages with role 'tool' must be a response/ : /unexpected `tool_use_id`/,
    );
    expect(fake.requests).toEqual([]);
    expect(fake.refusals).toHaveLength(1);
  });

  it("never sees a call left without its result: the SDK refuses it before sending", async () => {
    const fake = await started(() => start());
    const conversation: ModelMessage[] = [
      { role: "user", content: "Where is my order A-17?" },
      {
        role: "assistant",
        content: [{ type: "tool-call", toolCallId: "call_A17", toolName: "lookup_order", input: { orderId: "A-17" } }],
      },
      { role: "user", content: "Hello?" },
    ];
    const error = await failureOf(generateText({ model: model(fake), messages: conversation, tools, maxRetries: 0 }));
    expect(MissingToolResultsError.isInstance(error)).toBe(true);
    expect(fake.requests).toEqual([]);
    expect(fake.refusals).toEqual([]);
  });

  it("passes a scripted 429 to the SDK with its retry-after header", async () => {
    const fake = await started(() => start(() => ({ error: { status: 429, retryAfterS: 7 } })));
    const error = await failureOf(generateText({ model: model(fake), prompt: "Hi", maxRetries: 0 }));
    expect(APICallError.isInstance(error)).toBe(true);
    const apiError = error as APICallError;
    expect(apiError.statusCode).toBe(429);
    expect(apiError.isRetryable).toBe(true);
    expect(apiError.responseHeaders?.["retry-after"]).toBe("7");
    expect(fake.requests).toHaveLength(1);
  });

  it("passes scripted server errors to the SDK as retryable APICallErrors", async () => {
    const statuses = name.startsWith("OpenAI") ? [500, 503] : [500, 529];
    const fake = await started(() => start((_request, index) => ({ error: { status: statuses[index] ?? 500 } })));
    for (const status of statuses) {
      const error = await failureOf(generateText({ model: model(fake), prompt: "Hi", maxRetries: 0 }));
      expect(APICallError.isInstance(error) && error.statusCode).toBe(status);
      expect((error as APICallError).isRetryable).toBe(true);
    }
  });
});

interface Sent {
  status: number;
  headers: Headers;
  body: any;
}

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<Sent> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

interface Case {
  name: string;
  body: unknown;
  headers?: Record<string, string>;
  status: number;
  /** The refusal's message; absent for a request the API accepts. */
  message?: string | RegExp;
}

const call = (id: string) => ({
  id,
  type: "function",
  function: { name: "lookup_order", arguments: '{"orderId":"A-17"}' },
});
const openaiTool = (name: string, parameters: unknown = { type: "object", properties: {} }) => ({
  type: "function",
  function: { name, description: "Looks up an order.", parameters },
});
const user = { role: "user", content: "Where is my order?" };
const calling = (...ids: string[]) => ({ role: "assistant", content: null, tool_calls: ids.map(call) });
const answer = (id: string) => ({ role: "tool", tool_call_id: id, content: "shipped" });
const chat = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
  model: "gpt-4o-mini",
  messages,
  ...extra,
});

const openaiCases: Case[] = [
  { name: "a plain conversation", body: chat([{ role: "system", content: "Be brief." }, user]), status: 200 },
  {
    name: "two calls answered in either order",
    body: chat([user, calling("call_1", "call_2"), answer("call_2"), answer("call_1")]),
    status: 200,
  },
  {
    name: "no key",
    body: chat([user]),
    headers: { authorization: "" },
    status: 401,
    message: /didn't provide an API key/,
  },
  {
    name: "a wrong key",
    body: chat([user]),
    headers: { authorization: "Bearer sk-wrong-key-1234" },
    status: 401,
    message: /^Incorrect API key provided: sk-\*\*\*1234\./,
  },
  { name: "no model", body: { messages: [user] }, status: 400, message: "you must provide a model parameter" },
  { name: "empty messages", body: chat([]), status: 400, message: /^Invalid 'messages': empty array\./ },
  { name: "a stream request", body: chat([user], { stream: true }), status: 400, message: /does not stream/ },
  {
    name: "a call followed by a user message",
    body: chat([user, calling("call_1"), user]),
    status: 400,
    message:
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
  },
  {
    name: "two calls, one answered",
    body: chat([user, calling("call_1", "call_2"), answer("call_1")]),
    status: 400,
    message: /did not have response messages: call_2$/,
  },
  {
    name: "a call answered after a system message",
    body: chat([user, calling("call_1"), { role: "system", content: "Note." }, answer("call_1")]),
    status: 400,
    message: /did not have response messages: call_1$/,
  },
  {
    name: "a tool message with no call before it",
    body: chat([user, answer("call_1")]),
    status: 400,
    message:
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
  },
  {
    name: "a tool message answering another call",
    body: chat([user, calling("call_1"), answer("call_1"), answer("call_9")]),
    status: 400,
    message: /messages with role 'tool' must be a response/,
  },
  {
    name: "a call answered twice",
    body: chat([user, calling("call_1", "call_2"), answer("call_1"), answer("call_1"), answer("call_2")]),
    status: 400,
    message: /messages with role 'tool' must be a response/,
  },
  {
    name: "an empty user message",
    body: chat([{ role: "user", content: "" }]),
    status: 400,
    message: /^Invalid 'messages\[0\]\.content': string too short/,
  },
  {
    name: "a user message with no parts",
    body: chat([{ role: "user", content: [] }]),
    status: 400,
    message: /^Invalid 'messages\[0\]\.content': empty array/,
  },
  {
    name: "a user message of empty text parts",
    body: chat([{ role: "user", content: [{ type: "text", text: "" }] }]),
    status: 400,
    message: /string too short/,
  },
  {
    name: "an empty tool message",
    body: chat([user, calling("call_1"), { role: "tool", tool_call_id: "call_1", content: "" }]),
    status: 400,
    message: /^Invalid 'messages\[2\]\.content': string too short/,
  },
  {
    name: "an assistant message with neither content nor calls",
    body: chat([user, { role: "assistant", content: null }]),
    status: 400,
    message: "Invalid value for 'content': expected a string, got null.",
  },
  {
    name: "a tool name with a space",
    body: chat([user], { tools: [openaiTool("lookup order")] }),
    status: 400,
    message:
      "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
  },
  {
    name: "a tool name over 64 characters",
    body: chat([user], { tools: [openaiTool("x".repeat(65))] }),
    status: 400,
    message: /string too long\. Expected a string with maximum length 64/,
  },
  {
    name: "a tool schema that is not an object",
    body: chat([user], { tools: [openaiTool("lookup_order", { type: "string" })] }),
    status: 400,
    message: `Invalid schema for function 'lookup_order': schema must be a JSON Schema of 'type: "object"', got 'type: "string"'.`,
  },
  { name: "a body that is not JSON", body: "{not json", status: 400, message: /could not parse the JSON body/ },
];

const use = (id: string) => ({ type: "tool_use", id, name: "lookup_order", input: { orderId: "A-17" } });
const result = (id: string) => ({ type: "tool_result", tool_use_id: id, content: "shipped" });
const anthropicTool = (name: string, schema: unknown = { type: "object", properties: {} }) => ({
  name,
  description: "Looks up an order.",
  input_schema: schema,
});
const said = (text: string) => ({ type: "text", text });
const asks = { role: "user", content: "Where is my order?" };
const using = (...ids: string[]) => ({ role: "assistant", content: ids.map(use) });
const answering = (...blocks: unknown[]) => ({ role: "user", content: blocks });
const messages = (list: unknown[], extra: Record<string, unknown> = {}) => ({
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  messages: list,
  tools: [anthropicTool("lookup_order")],
  ...extra,
});

const anthropicCases: Case[] = [
  { name: "a plain conversation", body: messages([asks], { system: "Be brief." }), status: 200 },
  { name: "consecutive user messages", body: messages([asks, { role: "user", content: "Hello?" }]), status: 200 },
  {
    name: "two calls answered in either order, then text",
    body: messages([
      asks,
      using("toolu_1", "toolu_2"),
      answering(result("toolu_2"), result("toolu_1"), said("Go on.")),
    ]),
    status: 200,
  },
  {
    name: "results split over consecutive user messages",
    body: messages([asks, using("toolu_1", "toolu_2"), answering(result("toolu_1")), answering(result("toolu_2"))]),
    status: 200,
  },
  { name: "no key", body: messages([asks]), headers: { "x-api-key": "" }, status: 401, message: /x-api-key/ },
  {
    name: "a wrong key",
    body: messages([asks]),
    headers: { "x-api-key": "sk-ant-wrong" },
    status: 401,
    message: "invalid x-api-key",
  },
  {
    name: "no anthropic-version",
    body: messages([asks]),
    headers: { "anthropic-version": "" },
    status: 400,
    message: "anthropic-version: header is required",
  },
  {
    name: "no max_tokens",
    body: { model: "claude-sonnet-4-5", messages: [asks] },
    status: 400,
    message: "max_tokens: Field required",
  },
  { name: "empty messages", body: messages([]), status: 400, message: "messages: at least one message is required" },
  {
    name: "an assistant message first",
    body: messages([{ role: "assistant", content: "Hello." }, asks]),
    status: 400,
    message: 'messages: first message must use the "user" role',
  },
  { name: "a stream request", body: messages([asks], { stream: true }), status: 400, message: /does not stream/ },
  {
    name: "a call followed by text only",
    body: messages([asks, using("toolu_1"), asks]),
    status: 400,
    message:
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
  },
  {
    name: "a result after text in the next message",
    body: messages([asks, using("toolu_1"), answering(said("Here:"), result("toolu_1"))]),
    status: 400,
    message: /^messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1\./,
  },
  {
    name: "two calls, one answered",
    body: messages([asks, using("toolu_1", "toolu_2"), answering(result("toolu_1"))]),
    status: 400,
    message: /immediately after: toolu_2\./,
  },
  {
    name: "a call as the last message",
    body: messages([asks, using("toolu_1")]),
    status: 400,
    message: /immediately after: toolu_1\./,
  },
  {
    name: "tool blocks in a request that defines no tools",
    body: messages([asks, using("toolu_1"), answering(result("toolu_1"))], { tools: undefined }),
    status: 400,
    message: "Requests which include `tool_use` or `tool_result` blocks must define tools.",
  },
  {
    name: "a result answering no call",
    body: messages([asks, using("toolu_1"), answering(result("toolu_1"), result("toolu_9"))]),
    status: 400,
    message:
      "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
  },
  {
    name: "a result in the first message",
    body: messages([answering(result("toolu_1"))]),
    status: 400,
    message: /^messages\.0\.content\.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1\./,
  },
  {
    name: "a result sent again after the conversation moved on",
    body: messages([
      asks,
      using("toolu_1"),
      answering(result("toolu_1")),
      { role: "assistant", content: "It has shipped." },
      answering(said("Thanks!"), result("toolu_1")),
    ]),
    status: 400,
    message: /^messages\.4\.content\.1: unexpected `tool_use_id`/,
  },
  {
    name: "a call answered twice",
    body: messages([asks, using("toolu_1"), answering(result("toolu_1"), result("toolu_1"))]),
    status: 400,
    message: /multiple `tool_result` blocks with id: toolu_1/,
  },
  {
    name: "an empty text block",
    body: messages([answering(said(""))]),
    status: 400,
    message: "messages: text content blocks must be non-empty",
  },
  {
    name: "an empty user message",
    body: messages([{ role: "user", content: "" }]),
    status: 400,
    message: /^messages\.0: all messages must have non-empty content/,
  },
  {
    name: "a user message with no blocks",
    body: messages([asks, { role: "assistant", content: "Yes?" }, answering()]),
    status: 400,
    message: /^messages\.2: all messages must have non-empty content/,
  },
  {
    name: "a tool name with a space",
    body: messages([asks], { tools: [anthropicTool("lookup order")] }),
    status: 400,
    message: "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
  },
  {
    name: "a tool name over 64 characters",
    body: messages([asks], { tools: [anthropicTool("x".repeat(65))] }),
    status: 400,
    message: /^tools\.0\.custom\.name: String should match pattern/,
  },
  {
    name: "a tool schema that is not an object",
    body: messages([asks], { tools: [anthropicTool("lookup_order", { type: "string" })] }),
    status: 400,
    message: "tools.0.custom.input_schema.type: Input should be 'object'",
  },
  { name: "a body that is not JSON", body: "{not json", status: 400, message: /invalid JSON/ },
];

describe("the OpenAI stand-in, sent raw JSON", () => {
  it.each(openaiCases)("$name: $status", async ({ body, headers, status, message }) => {
    const fake = await started(() => startFakeOpenAI());
    const sent = await post(`${fake.url}/chat/completions`, body, {
      authorization: `Bearer ${fake.apiKey}`,
      ...headers,
    });
    expect(sent.status).toBe(status);
    if (message === undefined) {
      expect(sent.body).toMatchObject({ object: "chat.completion", choices: [{ message: { content: "ok" } }] });
      expect(fake.requests).toHaveLength(1);
      return;
    }
    expect(Object.keys(sent.body)).toEqual(["error"]);
    expect(Object.keys(sent.body.error)).toEqual(["message", "type", "param", "code"]);
    expect(sent.body.error.type).toBe("invalid_request_error");
    if (typeof message === "string") expect(sent.body.error.message).toBe(message);
    else expect(sent.body.error.message).toMatch(message);
    expect(fake.requests).toEqual([]);
    expect(fake.refusals).toEqual([{ status, body: sent.body }]);
  });

  it("names the rule's place in param and code, as the API does", async () => {
    const fake = await started(() => startFakeOpenAI());
    const auth = { authorization: `Bearer ${fake.apiKey}` };
    const url = `${fake.url}/chat/completions`;
    expect((await post(url, chat([user], { tools: [openaiTool("a b")] }), auth)).body.error).toMatchObject({
      param: "tools[0].function.name",
      code: "invalid_value",
    });
    expect((await post(url, chat([user, calling("call_1"), user]), auth)).body.error).toMatchObject({
      param: "messages.[1].role",
      code: null,
    });
    expect((await post(url, chat([user]), { authorization: "Bearer sk-nope-nope-nope" })).body.error).toMatchObject({
      param: null,
      code: "invalid_api_key",
    });
  });

  it("answers in the chat completion format, with generated call ids and JSON-string arguments", async () => {
    const fake = await started(() =>
      startFakeOpenAI(() => ({
        toolCalls: [{ name: "lookup_order", args: { orderId: "A-17" } }],
        usage: { input: 3, output: 4 },
      })),
    );
    const sent = await post(`${fake.url}/chat/completions`, chat([user]), { authorization: `Bearer ${fake.apiKey}` });
    expect(sent.body).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: "chat.completion",
      created: expect.any(Number),
      model: "gpt-4o-mini",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: expect.stringMatching(/^call_/),
                type: "function",
                function: { name: "lookup_order", arguments: '{"orderId":"A-17"}' },
              },
            ],
            refusal: null,
            annotations: [],
          },
          logprobs: null,
          finish_reason: "tool_calls",
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  });

  it("answers a scripted 429 in OpenAI's rate-limit format", async () => {
    const fake = await started(() => startFakeOpenAI(() => ({ error: { status: 429, retryAfterS: 2 } })));
    const sent = await post(`${fake.url}/chat/completions`, chat([user]), { authorization: `Bearer ${fake.apiKey}` });
    expect(sent.status).toBe(429);
    expect(sent.headers.get("retry-after")).toBe("2");
    expect(sent.body).toEqual({
      error: {
        message: expect.stringMatching(/^Rate limit reached/),
        type: "requests",
        param: null,
        code: "rate_limit_exceeded",
      },
    });
  });
});

describe("the Anthropic stand-in, sent raw JSON", () => {
  it.each(anthropicCases)("$name: $status", async ({ body, headers, status, message }) => {
    const fake = await started(() => startFakeAnthropic());
    const sent = await post(`${fake.url}/messages`, body, {
      "x-api-key": fake.apiKey,
      "anthropic-version": "2023-06-01",
      ...headers,
    });
    expect(sent.status).toBe(status);
    if (message === undefined) {
      expect(sent.body).toMatchObject({ type: "message", content: [{ type: "text", text: "ok" }] });
      expect(fake.requests).toHaveLength(1);
      return;
    }
    expect(sent.body).toEqual({
      type: "error",
      error: { type: status === 401 ? "authentication_error" : "invalid_request_error", message: expect.any(String) },
      request_id: expect.any(String),
    });
    if (typeof message === "string") expect(sent.body.error.message).toBe(message);
    else expect(sent.body.error.message).toMatch(message);
    expect(fake.requests).toEqual([]);
    expect(fake.refusals).toEqual([{ status, body: sent.body }]);
  });

  it("shows results split over consecutive user messages as one tool message each, in order", async () => {
    const fake = await started(() => startFakeAnthropic());
    await post(
      `${fake.url}/messages`,
      messages([
        asks,
        using("toolu_1", "toolu_2"),
        answering(result("toolu_1")),
        answering(result("toolu_2"), said("And?")),
      ]),
      { "x-api-key": fake.apiKey, "anthropic-version": "2023-06-01" },
    );
    expect(fake.requests[0]?.messages).toEqual([
      { role: "user", text: "Where is my order?" },
      {
        role: "assistant",
        text: "",
        toolCalls: [
          { id: "toolu_1", name: "lookup_order", args: { orderId: "A-17" } },
          { id: "toolu_2", name: "lookup_order", args: { orderId: "A-17" } },
        ],
      },
      { role: "tool", toolCallId: "toolu_1", content: "shipped" },
      { role: "tool", toolCallId: "toolu_2", content: "shipped" },
      { role: "user", text: "And?" },
    ]);
  });

  it("answers in the message format, with generated tool_use ids", async () => {
    const scripted: LlmAnswer = {
      text: "Let me look.",
      toolCalls: [{ name: "lookup_order", args: { orderId: "A-17" } }],
      usage: { input: 3, output: 4 },
    };
    const fake = await started(() => startFakeAnthropic(() => scripted));
    const sent = await post(`${fake.url}/messages`, messages([asks]), {
      "x-api-key": fake.apiKey,
      "anthropic-version": "2023-06-01",
    });
    expect(sent.body).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [
        { type: "text", text: "Let me look." },
        { type: "tool_use", id: expect.stringMatching(/^toolu_/), name: "lookup_order", input: { orderId: "A-17" } },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 4 },
    });
  });

  it("answers scripted errors in Anthropic's format: 429 with retry-after, 529 overloaded, 500 api_error", async () => {
    const scripted = [
      { status: 429, type: "rate_limit_error" },
      { status: 529, type: "overloaded_error" },
      { status: 500, type: "api_error" },
    ];
    const fake = await started(() =>
      startFakeAnthropic((_request, index) => ({ error: { status: scripted[index]!.status, retryAfterS: 3 } })),
    );
    for (const { status, type } of scripted) {
      const sent = await post(`${fake.url}/messages`, messages([asks]), {
        "x-api-key": fake.apiKey,
        "anthropic-version": "2023-06-01",
      });
      expect(sent.status).toBe(status);
      expect(sent.headers.get("retry-after")).toBe("3");
      expect(sent.body).toMatchObject({ type: "error", error: { type, message: expect.any(String) } });
    }
  });
});

describe("what the SDK sends", () => {
  it("OpenAI chat: a tool result is a role 'tool' message whose content is the JSON of the output", async () => {
    const fake = await started(() => startFakeOpenAI());
    await generateText({ model: providers[0]!.model(fake), messages: withResult(), tools, maxRetries: 0 });
    expect((fake.requests[0]!.raw as any).messages).toEqual([
      { role: "user", content: "Where is my order A-17?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_A17", type: "function", function: { name: "lookup_order", arguments: '{"orderId":"A-17"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_A17", content: '{"status":"shipped"}' },
    ]);
  });

  it("Anthropic: a tool result is a tool_result block, first in a user message, its content the JSON of the output", async () => {
    const fake = await started(() => startFakeAnthropic());
    await generateText({ model: providers[1]!.model(fake), messages: withResult(), tools, maxRetries: 0 });
    const raw = fake.requests[0]!.raw as any;
    expect(raw.max_tokens).toEqual(expect.any(Number));
    expect(raw.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Where is my order A-17?" }] },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "call_A17", name: "lookup_order", input: { orderId: "A-17" } }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "call_A17", content: '{"status":"shipped"}' }] },
    ]);
  });
});

function withResult(): ModelMessage[] {
  return [
    { role: "user", content: "Where is my order A-17?" },
    {
      role: "assistant",
      content: [{ type: "tool-call", toolCallId: "call_A17", toolName: "lookup_order", input: { orderId: "A-17" } }],
    },
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "call_A17",
          toolName: "lookup_order",
          output: { type: "json", value: { status: "shipped" } },
        },
      ],
    },
  ];
}
