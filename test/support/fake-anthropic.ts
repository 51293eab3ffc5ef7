// A local stand-in for Anthropic's Messages API (POST /v1/messages), the endpoint `createAnthropic(...)(model)`
// of @ai-sdk/anthropic calls. It requires `x-api-key` and `anthropic-version`, refuses what the real API
// refuses with its error bodies (a `tool_use` without its `tool_result` first in the next message, a
// `tool_result` answering nothing, empty content, bad tool names and schemas), and answers from the test's
// script in the message format. Consecutive messages of one role are merged before the tool rules are
// checked, as the real API does. It does not stream: the hub asks for whole messages.
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

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export async function startFakeAnthropic(script?: LlmScript, options?: { apiKey?: string }): Promise<FakeLlm> {
  return startFakeLlm(anthropicApi, script ?? replyOk, options?.apiKey ?? "sk-ant-test-key");
}

/** Anthropic's error body: `{type: "error", error: {type, message}, request_id}`, with a request-id header. */
function anthropicError(status: number, type: string, message: string, headers: Record<string, string> = {}): Reply {
  const requestId = randomId("req_011", 21);
  return {
    status,
    headers: { "request-id": requestId, ...headers },
    body: { type: "error", error: { type, message }, request_id: requestId },
  };
}

const invalid = (message: string): Parsed => refused(anthropicError(400, "invalid_request_error", message));

const anthropicApi: LlmApi = {
  path: "/v1/messages",

  checkHeaders(headers: IncomingHttpHeaders, apiKey: string): Reply | undefined {
    const given = headers["x-api-key"];
    if (given === undefined || given === "") {
      return anthropicError(401, "authentication_error", "x-api-key header is required");
    }
    if (given !== apiKey) return anthropicError(401, "authentication_error", "invalid x-api-key");
    if (!headers["anthropic-version"]) {
      return anthropicError(400, "invalid_request_error", "anthropic-version: header is required");
    }
    return undefined;
  },

  parse: parseMessagesRequest,

  render(answer: LlmAnswer, request: LlmRequest): Reply {
    if ("error" in answer) return renderError(answer.error);
    const toolUses = (answer.toolCalls ?? []).map((call) => ({
      type: "tool_use",
      id: call.id ?? randomId("toolu_01", 22),
      name: call.name,
      input: call.args ?? {},
    }));
    const content = [...(answer.text !== undefined ? [{ type: "text", text: answer.text }] : []), ...toolUses];
    return {
      status: 200,
      headers: { "request-id": randomId("req_011", 21) },
      body: {
        id: randomId("msg_01", 22),
        type: "message",
        role: "assistant",
        model: request.model,
        content,
        stop_reason: toolUses.length > 0 ? "tool_use" : "end_turn",
        stop_sequence: null,
        usage: {
          input_tokens: answer.usage?.input ?? estimateTokens(request.raw),
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: answer.usage?.output ?? estimateTokens(content),
        },
      },
    };
  },

  notFound(): Reply {
    return anthropicError(404, "not_found_error", "Not Found");
  },

  badJson(): Reply {
    return anthropicError(400, "invalid_request_error", "There was an issue with your request body: invalid JSON.");
  },
};

function renderError(error: { status: number; retryAfterS?: number; message?: string }): Reply {
  const headers: Record<string, string> = {};
  if (error.retryAfterS !== undefined) headers["retry-after"] = String(error.retryAfterS);
  const [type, message] =
    error.status === 429
      ? [
          "rate_limit_error",
          "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
        ]
      : error.status === 529
        ? ["overloaded_error", "Overloaded"]
        : error.status >= 500
          ? ["api_error", "Internal server error"]
          : ["invalid_request_error", "Bad request"];
  return anthropicError(error.status, type, error.message ?? message, headers);
}

/** One content block with where it came from: the message's index and its own in that message. */
interface Located {
  block: Record<string, unknown>;
  message: number;
  position: number;
}

/** A run of consecutive messages of one role, which the API treats as one message. */
interface Turn {
  role: "user" | "assistant";
  blocks: Located[];
}

/** The text of a `tool_result`'s content: a string or an array of blocks, text ones joined. */
function toolResultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((part): part is { type: "text"; text: string } => isRecord(part) && part.type === "text")
    .map((part) => String(part.text))
    .join("\n");
}

function hasEmptyText(blocks: unknown[]): boolean {
  return blocks.some((block) => isRecord(block) && block.type === "text" && String(block.text ?? "").trim() === "");
}

function parseMessagesRequest(body: unknown): Parsed {
  if (!isRecord(body)) return invalid("body: Input should be a valid dictionary");
  if (typeof body.model !== "string" || body.model === "") return invalid("model: Field required");
  if (body.max_tokens === undefined) return invalid("max_tokens: Field required");
  if (typeof body.max_tokens !== "number" || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) {
    return invalid("max_tokens: Input should be a valid integer greater than or equal to 1");
  }
  if (body.messages === undefined) return invalid("messages: Field required");
  if (!Array.isArray(body.messages)) return invalid("messages: Input should be a valid list");
  if (body.messages.length === 0) return invalid("messages: at least one message is required");
  if (body.stream === true) {
    // A deliberate gap, not the real API's answer: the hub never streams, so a stream request is a bug.
    return invalid("stream: this stand-in does not stream; the hub asks for whole messages");
  }

  let system = "";
  if (typeof body.system === "string") {
    system = body.system;
  } else if (Array.isArray(body.system)) {
    if (hasEmptyText(body.system)) return invalid("system: text content blocks must be non-empty");
    system = toolResultText(body.system);
  } else if (body.system !== undefined) {
    return invalid("system: Input should be a valid string");
  }

  const tools: LlmRequest["tools"] = [];
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return invalid("tools: Input should be a valid list");
    for (const [i, tool] of body.tools.entries()) {
      if (!isRecord(tool)) return invalid(`tools.${i}: Input should be a valid dictionary`);
      // Server tools (web search, code execution...) carry a versioned type and no schema of their own.
      if (tool.type !== undefined && tool.type !== "custom") continue;
      const name = typeof tool.name === "string" ? tool.name : "";
      if (!TOOL_NAME.test(name)) {
        return invalid(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
      }
      if (!isRecord(tool.input_schema)) return invalid(`tools.${i}.custom.input_schema: Field required`);
      if (tool.input_schema.type !== "object")
        return invalid(`tools.${i}.custom.input_schema.type: Input should be 'object'`);
      tools.push({
        name,
        description: typeof tool.description === "string" ? tool.description : "",
        parameters: tool.input_schema,
      });
    }
  }

  const raw = body.messages as unknown[];
  const turns: Turn[] = [];
  for (const [i, message] of raw.entries()) {
    if (!isRecord(message)) return invalid(`messages.${i}: Input should be a valid dictionary`);
    if (message.role !== "user" && message.role !== "assistant") {
      return invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    }
    if (message.content === undefined) return invalid(`messages.${i}.content: Field required`);
    const blocks: unknown[] =
      typeof message.content === "string"
        ? message.content === ""
          ? []
          : [{ type: "text", text: message.content }]
        : Array.isArray(message.content)
          ? message.content
          : [];
    if (!Array.isArray(message.content) && typeof message.content !== "string") {
      return invalid(`messages.${i}.content: Input should be a valid list`);
    }
    const finalAssistant = i === raw.length - 1 && message.role === "assistant";
    if (blocks.length === 0 && !finalAssistant) {
      return invalid(
        `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
      );
    }
    if (hasEmptyText(blocks)) return invalid("messages: text content blocks must be non-empty");
    for (const [position, block] of blocks.entries()) {
      if (!isRecord(block) || typeof block.type !== "string") {
        return invalid(`messages.${i}.content.${position}: Input should be a valid dictionary`);
      }
      if (block.type === "tool_use" && message.role !== "assistant") {
        return invalid(`messages.${i}.content.${position}: \`tool_use\` blocks can only be in \`assistant\` messages`);
      }
      if (block.type === "image") {
        const problem = imageProblem(block, `messages.${i}.content.${position}`, message.role);
        if (problem) return problem;
      }
      if (block.type === "tool_result") {
        if (message.role !== "user") {
          return invalid(`messages.${i}.content.${position}: \`tool_result\` blocks can only be in \`user\` messages`);
        }
        if (Array.isArray(block.content) && hasEmptyText(block.content)) {
          return invalid("messages: text content blocks must be non-empty");
        }
        // A tool result may hold images: checked as the API checks an image block.
        for (const [k, part] of (Array.isArray(block.content) ? block.content : []).entries()) {
          if (!isRecord(part) || part.type !== "image") continue;
          const problem = imageProblem(part, `messages.${i}.content.${position}.content.${k}`, "user");
          if (problem) return problem;
        }
      }
    }
    const located = blocks.map((block, position) => ({
      block: block as Record<string, unknown>,
      message: i,
      position,
    }));
    const last = turns.at(-1);
    if (last?.role === message.role) last.blocks.push(...located);
    else turns.push({ role: message.role, blocks: located });
  }
  if (turns[0]?.role !== "user") return invalid('messages: first message must use the "user" role');

  // The API reads tool blocks only against the tools the request defines.
  const usesTools = turns.some((turn) =>
    turn.blocks.some(({ block }) => block.type === "tool_use" || block.type === "tool_result"),
  );
  if (usesTools && body.tools === undefined)
    return invalid("Requests which include `tool_use` or `tool_result` blocks must define tools.");
  const pairing = checkToolPairing(turns);
  if (pairing) return pairing;
  return {
    ok: true,
    request: { api: "anthropic", model: body.model, system, messages: normalize(raw), tools, raw: body },
  };
}

/**
 * The rule the API enforces on tool use: every `tool_use` of an assistant turn is answered by a `tool_result`
 * among the blocks the next user turn starts with, once; a `tool_result` answers a `tool_use` of the turn
 * right before it or is refused.
 */
function checkToolPairing(turns: Turn[]): Parsed | undefined {
  for (const [t, turn] of turns.entries()) {
    if (turn.role === "assistant") {
      const uses = turn.blocks.filter(({ block }) => block.type === "tool_use");
      if (uses.length === 0) continue;
      const next = turns[t + 1];
      const answered = new Set<unknown>();
      for (const { block } of next?.blocks ?? []) {
        if (block.type !== "tool_result") break;
        answered.add(block.tool_use_id);
      }
      const missing = uses.filter(({ block }) => !answered.has(block.id));
      if (missing.length > 0) {
        return invalid(
          `messages.${missing[0]?.message}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.map(({ block }) => String(block.id)).join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
    } else {
      const previous = turns[t - 1];
      const uses = new Set(
        (previous?.blocks ?? []).filter(({ block }) => block.type === "tool_use").map(({ block }) => block.id),
      );
      const seen = new Set<unknown>();
      for (const { block, message, position } of turn.blocks) {
        if (block.type !== "tool_result") continue;
        if (!uses.has(block.tool_use_id)) {
          return invalid(
            `messages.${message}.content.${position}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
        if (seen.has(block.tool_use_id)) {
          return invalid(
            `messages.${message}.content.${position}: each tool_use must have a single result. Found multiple \`tool_result\` blocks with id: ${String(block.tool_use_id)}`,
          );
        }
        seen.add(block.tool_use_id);
      }
    }
  }
  return undefined;
}

const MEDIA_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];
/** Anthropic's limit for one image sent as base64. */
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/**
 * An image block: `{type: "image", source: {type: "base64", media_type, data}}` (or `{type: "url", url}`,
 * which the API fetches itself and a local hub cannot be reached by), in a user message, its bytes the format
 * its media_type names.
 */
function imageProblem(block: Record<string, unknown>, at: string, role: string): Parsed | undefined {
  if (role !== "user") return invalid(`${at}: \`image\` blocks can only be in \`user\` messages`);
  const source = isRecord(block.source) ? block.source : undefined;
  if (!source) return invalid(`${at}.image.source: Field required`);
  if (source.type === "url") {
    return typeof source.url === "string"
      ? invalid(`${at}.image.source.url: Unable to download the file. Please verify the URL and try again.`)
      : invalid(`${at}.image.source.url.url: Field required`);
  }
  if (source.type !== "base64")
    return invalid(
      `${at}.image.source: Input tag '${String(source.type)}' found using 'type' does not match any of the expected tags: 'base64', 'url'`,
    );
  if (typeof source.media_type !== "string" || !MEDIA_TYPES.includes(source.media_type))
    return invalid(
      `${at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`,
    );
  const bytes = typeof source.data === "string" ? strictBase64(source.data) : undefined;
  if (!bytes) return invalid(`${at}.image.source.base64.data: invalid base64 data`);
  if (bytes.length > MAX_IMAGE_BYTES) return invalid(`${at}.image.source.base64: image exceeds 5 MB maximum`);
  if (`image/${imageFormat(bytes) ?? "?"}` !== source.media_type)
    return invalid(
      `${at}.image.source.base64.data: The image was specified using the ${source.media_type} media type, but does not appear to be a valid ${source.media_type.slice(6)} image`,
    );
  return undefined;
}

/** The messages as a test reads them: user text runs, assistant text and calls, one tool message per result. */
function normalize(raw: unknown[]): LlmMessage[] {
  const messages: LlmMessage[] = [];
  for (const message of raw as { role: "user" | "assistant"; content: unknown }[]) {
    const blocks = (
      typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content
    ) as Record<string, unknown>[];
    if (message.role === "assistant") {
      messages.push({
        role: "assistant",
        // Joined with "" as the OpenAI SDK joins text parts, so both stand-ins show the same text.
        text: blocks
          .filter((block) => block.type === "text")
          .map((block) => String(block.text))
          .join(""),
        toolCalls: blocks
          .filter((block) => block.type === "tool_use")
          .map((block) => ({ id: String(block.id), name: String(block.name), args: block.input })),
      });
      continue;
    }
    let texts: string[] = [];
    let images: { mediaType: string; bytes: Buffer }[] = [];
    const flush = () => {
      if (texts.length > 0 || images.length > 0)
        messages.push({ role: "user", text: texts.join("\n"), ...(images.length > 0 ? { images } : {}) });
      texts = [];
      images = [];
    };
    for (const block of blocks) {
      if (block.type === "text") {
        texts.push(String(block.text));
      } else if (block.type === "image") {
        const source = block.source as { media_type: string; data: string };
        images.push({ mediaType: source.media_type, bytes: Buffer.from(source.data, "base64") });
      } else if (block.type === "tool_result") {
        flush();
        const shown = (Array.isArray(block.content) ? (block.content as unknown[]) : [])
          .filter((part): part is Record<string, unknown> => isRecord(part) && part.type === "image")
          .map((part) => {
            const source = part.source as { media_type: string; data: string };
            return { mediaType: source.media_type, bytes: Buffer.from(source.data, "base64") };
          });
        messages.push({
          role: "tool",
          toolCallId: String(block.tool_use_id),
          content: toolResultText(block.content),
          ...(shown.length > 0 ? { images: shown } : {}),
        });
      }
    }
    flush();
  }
  return messages;
}
