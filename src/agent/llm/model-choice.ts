// AGENT_MODEL → the AI SDK's model. `openai:` speaks the Chat Completions API (OpenAI itself and the servers
// that implement it: Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter), `anthropic:` the Messages API.
// The SDK retries nothing here: a failed call fails the turn, which the hub retries with its own backoff
// (and the model's Retry-After).
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import type { LanguageModel } from "ai";
import type { LlmConfig } from "../../config.js";

export function chosenModel(config: LlmConfig): LanguageModel {
  if (config.provider === "anthropic") {
    return createAnthropic({
      apiKey: config.apiKey ?? "",
      ...(config.baseUrl ? { baseURL: config.baseUrl } : {}),
    })(config.model);
  }
  return createOpenAI({
    // A local server needs no key; the SDK wants one all the same.
    apiKey: config.apiKey ?? "no-key",
    ...(config.baseUrl ? { baseURL: config.baseUrl } : {}),
  }).chat(config.model);
}

/** How the model is named in logs and metrics: the setting itself. */
export const modelLabel = (config: LlmConfig) => `${config.provider}:${config.model}`;
