// A local stand-in for OpenAI's Chat Completions API (POST /v1/chat/completions), the endpoint
// `createOpenAI(...).chat(model)` of @ai-sdk/openai calls. It requires the Bearer key, refuses what the real
// API refuses with its error bodies (a tool call without its tool message right after it, a tool message
// answering nothing, empty content, bad tool names and schemas), and answers from the test's script in the
// completion format. It does not stream: the hub asks for whole completions.
//
// Deliberately independent of the SDK's code, so a bug shared between the SDK and the stand-in cannot hide.
import type { IncomingHttpHeaders } from "node:http";
import { replyOk, type FakeLlm, type LlmAnswer, type LlmMessage, type LlmRequest, type LlmScript } from "./fake-llm.js";
import {
  estimateTokens,
  isRecord,
  randomId,
  refused,
  startFakeLlm,
  type LlmApi,
  type Parsed,
  type Reply,
} from "./fake-llm-server.js";
import { imageFormat, strictBase64 } from "./fake-image.js";

const TOOL_NAME = /^[a-zA-Z0-9_-]+$/;
const ROLES = ["system", "developer", "user", "assistant", "tool", "function"];

export async function startFakeOpenAI(script?: LlmScript, options?: { apiKey?: string }): Promise<FakeLlm> {
  return startFakeLlm(openaiApi, script ?? replyOk, options?.apiKey ?? "sk-test-openai-key");
}

/** OpenAI's error body: `{error: {message, type, param, code}}`. */
function openaiError(status: number, message: string, param: string | null = null, code: string | null = null): Reply {
  return {
    status,
    headers: { "x-request-id": randomId("req_", 32) },
    body: { error: { message, type: "invalid_request_error", param, code } },
  };
}

const invalid = (message: string, param: string | null = null, code: string | null = null): Parsed =>
  refused(openaiError(400, message, param, code));

const openaiApi: LlmApi = {
  path: "/v1/chat/completions",

  checkHeaders(headers: IncomingHttpHeaders, apiKey: string): Reply | undefined {
    const authorization = headers.authorization ?? "";
    if (!authorization.startsWith("Bearer ") || authorization.length === "Bearer ".length) {
      return openaiError(
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
      );
    }
    const given = authorization.slice("Bearer ".length);
    if (given !== apiKey) {
      const masked = given.length > 8 ? `${given.slice(0, 3)}***${given.slice(-4)}` : "***";
      return openaiError(
        401,
        `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        null,
        "invalid_api_key",
      );
    }
    return undefined;
  },

  parse: parseChatRequest,

  render(answer: LlmAnswer, request: LlmRequest): Reply {
    if ("error" in answer) return renderError(answer.error, request.model);
    const toolCalls = (answer.toolCalls ?? []).map((call) => ({
      id: call.id ?? randomId("call_", 24),
      type: "function",
      function: { name: call.name, arguments: call.rawArguments ?? JSON.stringify(call.args ?? {}) },
    }));
    const promptTokens = answer.usage?.input ?? estimateTokens(request.raw);
    const completionTokens = answer.usage?.output ?? estimateTokens([answer.text ?? "", toolCalls]);
    return {
      status: 200,
      headers: { "x-request-id": randomId("req_", 32) },
      body: {
        id: randomId("chatcmpl-", 29),
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: request.model,
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              // The API sends null, not "", when the model only calls tools.
              content: answer.text ?? (toolCalls.length > 0 ? null : ""),
              ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
              refusal: null,
              annotations: [],
            },
            logprobs: null,
            finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop",
          },
        ],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      },
    };
  },

  notFound(method: string, path: string): Reply {
    return openaiError(404, `Invalid URL (${method} ${path})`);
  },

  badJson(): Reply {
    return openaiError(
      400,
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
    );
  },
};

function renderError(error: { status: number; retryAfterS?: number; message?: string }, model: string): Reply {
  const headers: Record<string, string> = { "x-request-id": randomId("req_", 32) };
  if (error.retryAfterS !== undefined) headers["retry-after"] = String(error.retryAfterS);
  let body: { message: string; type: string; param: null; code: string | null };
  if (error.status === 429) {
    const wait = error.retryAfterS ?? 1;
    body = {
      message:
        error.message ??
        `Rate limit reached for ${model} in organization org-fake on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in ${wait}s. Visit https://platform.openai.com/account/rate-limits to learn more.`,
      type: "requests",
      param: null,
      code: "rate_limit_exceeded",
    };
  } else if (error.status >= 500) {
    body = {
      message:
        error.message ??
        (error.status === 503
          ? "The server is overloaded or not ready yet."
          : "The server had an error while processing your request. Sorry about that!"),
      type: "server_error",
      param: null,
      code: null,
    };
  } else {
    body = { message: error.message ?? "Bad request.", type: "invalid_request_error", param: null, code: null };
  }
  return { status: error.status, headers, body: { error: body } };
}

/** The text of a content field: a string or an array of `{type: "text", text}` parts. */
function textOf(content: unknown, separator: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((part): part is { type: "text"; text: string } => isRecord(part) && part.type === "text")
    .map((part) => String(part.text))
    .join(separator);
}

/** Why a user or tool message's content is empty, as the API says it, or undefined when it is not. */
function emptyContent(content: unknown, at: string): Parsed | undefined {
  if (content === undefined || content === null) {
    return invalid(`Missing required parameter: '${at}'.`, at, "missing_required_parameter");
  }
  if (content === "") {
    return invalid(
      `Invalid '${at}': string too short. Expected a string with minimum length 1, but got an empty string instead.`,
      at,
      "string_below_min_length",
    );
  }
  if (Array.isArray(content)) {
    if (content.length === 0) {
      return invalid(
        `Invalid '${at}': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
        at,
        "empty_array",
      );
    }
    const nonEmpty = content.some((part) => !isRecord(part) || part.type !== "text" || part.text !== "");
    if (!nonEmpty) {
      return invalid(
        `Invalid '${at}[0].text': string too short. Expected a string with minimum length 1, but got an empty string instead.`,
        `${at}[0].text`,
        "string_below_min_length",
      );
    }
    return undefined;
  }
  if (typeof content !== "string") {
    return invalid(
      `Invalid type for '${at}': expected one of a string or array of objects, but got ${typeof content} instead.`,
      at,
      "invalid_type",
    );
  }
  return undefined;
}

const USER_PART_TYPES = ["text", "image_url", "input_audio", "file"];

/**
 * A user message's image parts: `{type: "image_url", image_url: {url, detail?}}` with a data URL of a PNG, JPEG,
 * GIF or WebP. The API downloads an http(s) URL itself — a hub's local address it cannot reach — so only data
 * URLs are taken here; a part of another type, a malformed URL or bytes that are not the image they claim are
 * refused as the API refuses them.
 */
function userImages(content: unknown, at: string): { list: { mediaType: string; bytes: Buffer }[] } | Parsed {
  const list: { mediaType: string; bytes: Buffer }[] = [];
  if (!Array.isArray(content)) return { list };
  for (const [j, part] of content.entries()) {
    const where = `${at}[${j}]`;
    if (!isRecord(part) || typeof part.type !== "string" || !USER_PART_TYPES.includes(part.type)) {
      return invalid(
        `Invalid value: '${isRecord(part) ? String(part.type) : typeof part}'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'.`,
        `${where}.type`,
        "invalid_value",
      );
    }
    if (part.type === "text" && typeof part.text !== "string")
      return invalid(`Missing required parameter: '${where}.text'.`, `${where}.text`, "missing_required_parameter");
    if (part.type !== "image_url") continue;
    const image = isRecord(part.image_url) ? part.image_url : undefined;
    if (!image || typeof image.url !== "string")
      return invalid(
        `Missing required parameter: '${where}.image_url.url'.`,
        `${where}.image_url.url`,
        "missing_required_parameter",
      );
    if (image.detail !== undefined && !["auto", "low", "high"].includes(String(image.detail)))
      return invalid(
        `Invalid value: '${String(image.detail)}'. Supported values are: 'auto', 'low', and 'high'.`,
        `${where}.image_url.detail`,
        "invalid_value",
      );
    const data = /^data:(image\/[a-z0-9.+-]+);base64,(.*)$/s.exec(image.url);
    if (!data) {
      if (/^https?:\/\//.test(image.url))
        return invalid(`Error while downloading ${image.url}.`, "url", "invalid_image_url");
      return invalid(
        "Invalid image URL: expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,...') or an https URL.",
        `${where}.image_url.url`,
        "invalid_value",
      );
    }
    const bytes = strictBase64(data[2]!);
    const format = bytes ? imageFormat(bytes) : undefined;
    if (!bytes || !format)
      return invalid(
        "You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
        "messages",
        "invalid_image_format",
      );
    list.push({ mediaType: data[1]!, bytes });
  }
  return { list };
}

function parseArguments(text: unknown): unknown {
  if (typeof text !== "string") return text;
  try {
    return JSON.parse(text);
  } catch {
    // The API passes arguments through as a string; keep what was sent.
    return text;
  }
}

function parseChatRequest(body: unknown): Parsed {
  if (!isRecord(body)) return invalid("Invalid type for body: expected an object.", null, "invalid_type");
  if (typeof body.model !== "string" || body.model === "") return invalid("you must provide a model parameter");
  if (body.messages === undefined) {
    return invalid("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  }
  if (!Array.isArray(body.messages)) {
    return invalid(
      `Invalid type for 'messages': expected an array of objects, but got ${typeof body.messages} instead.`,
      "messages",
      "invalid_type",
    );
  }
  if (body.messages.length === 0) {
    return invalid(
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      "messages",
      "empty_array",
    );
  }
  if (body.stream === true) {
    // A deliberate gap, not the real API's answer: the hub never streams, so a stream request is a bug.
    return invalid("This stand-in does not stream: the hub asks for whole completions.", "stream", "unsupported_value");
  }

  const tools: LlmRequest["tools"] = [];
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) {
      return invalid("Invalid type for 'tools': expected an array of objects.", "tools", "invalid_type");
    }
    for (const [i, entry] of body.tools.entries()) {
      const fn = isRecord(entry) && isRecord(entry.function) ? entry.function : undefined;
      if (!fn || entry.type !== "function") {
        return invalid(
          `Missing required parameter: 'tools[${i}].function'.`,
          `tools[${i}].function`,
          "missing_required_parameter",
        );
      }
      const name = typeof fn.name === "string" ? fn.name : "";
      if (name.length > 64) {
        return invalid(
          `Invalid 'tools[${i}].function.name': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`,
          `tools[${i}].function.name`,
          "string_above_max_length",
        );
      }
      if (!TOOL_NAME.test(name)) {
        return invalid(
          `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
          `tools[${i}].function.name`,
          "invalid_value",
        );
      }
      if (fn.parameters !== undefined) {
        const type = isRecord(fn.parameters) ? fn.parameters.type : undefined;
        if (type !== "object") {
          return invalid(
            `Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${type === undefined ? "None" : String(type)}"'.`,
            `tools[${i}].function.parameters`,
            "invalid_function_parameters",
          );
        }
      }
      tools.push({
        name,
        description: typeof fn.description === "string" ? fn.description : "",
        parameters: fn.parameters ?? { type: "object", properties: {} },
      });
    }
  }

  const system: string[] = [];
  const messages: LlmMessage[] = [];
  const raw = body.messages as unknown[];
  for (const [i, message] of raw.entries()) {
    if (!isRecord(message)) {
      return invalid(`Invalid type for 'messages[${i}]': expected an object.`, `messages[${i}]`, "invalid_type");
    }
    const role = message.role;
    if (typeof role !== "string" || !ROLES.includes(role)) {
      return invalid(
        `Invalid value: '${String(role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages[${i}].role`,
        "invalid_value",
      );
    }
    const at = `messages[${i}].content`;
    if (role === "system" || role === "developer") {
      system.push(textOf(message.content, "\n"));
    } else if (role === "user") {
      const problem = emptyContent(message.content, at);
      if (problem) return problem;
      const images = userImages(message.content, at);
      if ("ok" in images) return images;
      messages.push({
        role: "user",
        text: textOf(message.content, "\n"),
        ...(images.list.length > 0 ? { images: images.list } : {}),
      });
    } else if (role === "tool") {
      if (typeof message.tool_call_id !== "string") {
        return invalid(
          `Missing required parameter: 'messages[${i}].tool_call_id'.`,
          `messages[${i}].tool_call_id`,
          "missing_required_parameter",
        );
      }
      const problem = emptyContent(message.content, at);
      if (problem) return problem;
      messages.push({ role: "tool", toolCallId: message.tool_call_id, content: textOf(message.content, "") });
    } else if (role === "assistant") {
      const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
      const text = textOf(message.content, "");
      if (text === "" && calls.length === 0) {
        return invalid("Invalid value for 'content': expected a string, got null.", `messages.[${i}].content`);
      }
      const toolCalls: { id: string; name: string; args: unknown }[] = [];
      for (const [k, call] of calls.entries()) {
        if (!isRecord(call) || typeof call.id !== "string" || !isRecord(call.function)) {
          return invalid(
            `Missing required parameter: 'messages[${i}].tool_calls[${k}].id'.`,
            `messages[${i}].tool_calls[${k}].id`,
            "missing_required_parameter",
          );
        }
        toolCalls.push({
          id: call.id,
          name: String(call.function.name),
          args: parseArguments(call.function.arguments),
        });
      }
      messages.push({ role: "assistant", text, toolCalls });
    } else {
      return invalid("The 'function' role is deprecated; use 'tool'.", `messages[${i}].role`, "invalid_value");
    }
  }

  const pairing = checkToolPairing(raw);
  if (pairing) return pairing;
  return {
    ok: true,
    request: { api: "openai", model: body.model, system: system.join("\n"), messages, tools, raw: body },
  };
}

/**
 * The rule the API enforces on tool use: an assistant message's tool calls are answered, each by one tool
 * message, in the messages right after it, before anything else; a tool message answers such a call or is refused.
 */
function checkToolPairing(raw: unknown[]): Parsed | undefined {
  const message = (i: number) => raw[i] as Record<string, unknown>;
  let i = 0;
  while (i < raw.length) {
    const current = message(i);
    if (current.role === "tool") {
      return invalid(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        `messages.[${i}].role`,
      );
    }
    const calls = current.role === "assistant" && Array.isArray(current.tool_calls) ? current.tool_calls : [];
    const pending = new Set(calls.map((call) => (call as { id: string }).id));
    let j = i + 1;
    if (pending.size > 0) {
      for (; j < raw.length && message(j).role === "tool"; j++) {
        // Answering a call twice, or a call of another message, is answering nothing.
        if (!pending.delete(message(j).tool_call_id as string)) {
          return invalid(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            `messages.[${j}].role`,
          );
        }
      }
      if (pending.size > 0) {
        return invalid(
          `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending].join(", ")}`,
          `messages.[${i}].role`,
        );
      }
    }
    i = j;
  }
  return undefined;
}
