// What a test sees of the LLM stand-ins (fake-openai.ts, fake-anthropic.ts): one normalized request shape for
// both APIs, the script that answers it, and helpers to read a request. A test written against these types
// runs unchanged against either provider, so the hub's agent is proven the same way on both.

/** A request as both stand-ins see it, normalized. */
export interface LlmRequest {
  api: "openai" | "anthropic";
  model: string;
  /** The system prompt text ("" if none). OpenAI: the system/developer messages joined; Anthropic: `system`. */
  system: string;
  /** The conversation without the system prompt, in order. */
  messages: LlmMessage[];
  tools: { name: string; description: string; parameters: unknown }[];
  /** The body as received. */
  raw: unknown;
}

export type LlmMessage =
  /** OpenAI user message; Anthropic user text blocks joined with "\n"; the images it carried, in order. */
  | { role: "user"; text: string; images?: { mediaType: string; bytes: Buffer }[] }
  | { role: "assistant"; text: string; toolCalls: { id: string; name: string; args: unknown }[] }
  /** OpenAI role "tool"; Anthropic tool_result blocks (one message per block, content as text, its images). */
  | { role: "tool"; toolCallId: string; content: string; images?: { mediaType: string; bytes: Buffer }[] };

export type LlmAnswer =
  | {
      text?: string;
      /**
       * `rawArguments` (Chat Completions only) sends the arguments string as it is, e.g. JSON a model cut short;
       * otherwise `args` is sent as JSON.
       */
      toolCalls?: { id?: string; name: string; args: unknown; rawArguments?: string }[];
      usage?: { input: number; output: number };
    }
  /** Rendered in the API's own error format. */
  | { error: { status: number; retryAfterS?: number; message?: string } };

export type LlmScript = (request: LlmRequest, index: number) => LlmAnswer | Promise<LlmAnswer>;

export interface FakeLlm {
  /** The base URL to give the SDK (`http://127.0.0.1:P/v1`). */
  url: string;
  /** The key it requires. */
  apiKey: string;
  /** Every request that passed validation and was answered from the script. */
  requests: LlmRequest[];
  /**
   * For each entry of `requests`, at the same index: milliseconds from the request's arrival to the last byte
   * of its answer handed to the socket (what the stand-in itself spent, the script included).
   */
  handlingMs: number[];
  /** Every request it refused (validation, auth, unknown path), with the error body it sent. */
  refusals: { status: number; body: unknown }[];
  /** Settable: tests replace it between steps. */
  script: LlmScript;
  stop(): Promise<void>;
}

/** Answers every request with the same short text, for tests that only care about what was sent. */
export const replyOk: LlmScript = () => ({ text: "ok" });

/** Every tool call the model has made so far in the conversation, oldest first. */
export function toolCallsIn(request: LlmRequest): { id: string; name: string; args: unknown }[] {
  return request.messages.flatMap((message) => (message.role === "assistant" ? message.toolCalls : []));
}

/** The text of the last user message ("" when there is none). */
export function lastUserText(request: LlmRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i];
    if (message?.role === "user") return message.text;
  }
  return "";
}

/** The tool messages answering one call; a well-formed conversation has exactly one. */
export function toolMessagesFor(
  request: LlmRequest,
  toolCallId: string,
): { role: "tool"; toolCallId: string; content: string }[] {
  return request.messages.filter(
    (message): message is Extract<LlmMessage, { role: "tool" }> =>
      message.role === "tool" && message.toolCallId === toolCallId,
  );
}

/** The tool the hub makes its notices with, on the model's behalf (src/agent/llm/transcript.ts). */
export const NOTICE_TOOL = "read-hub-notices";

/**
 * The hub's notices in a request, oldest first: the answers to the read-hub-notices calls, parsed. With
 * `message`, only those of that tool message (none if it answers another call).
 */
export function hubNotices(request: LlmRequest, message?: LlmMessage): Record<string, unknown>[] {
  const ids = new Set(toolCallsIn(request).flatMap((call) => (call.name === NOTICE_TOOL ? [call.id] : [])));
  return request.messages.flatMap((each) => {
    if (each.role !== "tool" || !ids.has(each.toolCallId) || (message && each !== message)) return [];
    const answer = JSON.parse(each.content) as { from?: unknown; notices?: Record<string, unknown>[] };
    return answer.notices ?? [];
  });
}
