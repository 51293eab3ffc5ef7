// The LLM agent's spans, after OpenTelemetry's GenAI semantic conventions: one `chat {model}` per model call
// (provider, model, tokens in and out, finish reason) and one `execute_tool {tool}` per call the model made.
// Prompts, replies, arguments and results only with OTEL_CAPTURE_CONTENT=true.
import { SpanKind } from "@opentelemetry/api";
import type { LlmConfig } from "../../config/llm-config.js";
import { inSpan, setContent } from "../../tracing/spans.js";

/** What the spans read of a model's answer. */
interface ModelAnswer {
  text: string;
  finishReason: string;
  usage: { inputTokens?: number | undefined; outputTokens?: number | undefined };
  response: { id?: string | undefined; modelId?: string | undefined };
  toolCalls: readonly { toolName: string }[];
}

export function inModelSpan<T extends ModelAnswer>(
  config: Pick<LlmConfig, "provider" | "model">,
  step: number,
  call: () => Promise<T>,
): Promise<T> {
  return inSpan(
    `chat ${config.model}`,
    {
      // A call to the provider's API.
      kind: SpanKind.CLIENT,
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": config.provider,
        "gen_ai.request.model": config.model,
        "hub.agent.step": step,
      },
    },
    async (span) => {
      const answer = await call();
      span.setAttributes({
        "gen_ai.usage.input_tokens": answer.usage.inputTokens ?? 0,
        "gen_ai.usage.output_tokens": answer.usage.outputTokens ?? 0,
        "gen_ai.response.finish_reasons": [answer.finishReason],
        ...(answer.response.modelId ? { "gen_ai.response.model": answer.response.modelId } : {}),
        ...(answer.response.id ? { "gen_ai.response.id": answer.response.id } : {}),
        "hub.agent.tool_calls": answer.toolCalls.map((made) => made.toolName),
      });
      setContent(span, "gen_ai.output.text", answer.text);
      return answer;
    },
  );
}

/** A call the model made, as the hub runs it (a job's start, or a built-in tool). */
export function inToolSpan<T>(
  call: { toolCallId: string; toolName: string; input: unknown },
  run: () => Promise<T>,
): Promise<T> {
  return inSpan(
    `execute_tool ${call.toolName}`,
    {
      attributes: {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.toolName,
        "gen_ai.tool.call.id": call.toolCallId,
      },
    },
    async (span) => {
      setContent(span, "gen_ai.tool.call.arguments", call.input);
      const output = await run();
      setContent(span, "gen_ai.tool.call.result", output);
      return output;
    },
  );
}
