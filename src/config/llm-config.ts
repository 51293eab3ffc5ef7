// AGENT_MODEL and what the hub's LLM agent needs with it: provider, key or endpoint, instructions, bounds.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { ParsedEnv } from "./env.js";

export interface LlmConfig {
  provider: "openai" | "anthropic";
  model: string;
  apiKey: string | undefined;
  /** The API's base URL (…/v1); the provider's own when not set. */
  baseUrl: string | undefined;
  /** The business's instructions (AGENT_INSTRUCTIONS' file), or "" when none is named. */
  instructions: string;
  maxSteps: number;
  contextChars: number;
  /** A tool result longer than this (its JSON) reaches the model as a summary and a handle to page through. */
  resultInlineChars: number;
  /** How many times the same call may be made in a conversation while its first still runs. */
  repeatCallsMax: number;
  timeoutMs: number;
}

const MODEL_FORMAT = "must be openai:<model> (Chat Completions: OpenAI, Ollama, vLLM…) or anthropic:<model>";

/** AGENT_MODEL and what it needs; refused with AGENT_URL (one agent answers a hub's turns). */
export function llmConfig(env: ParsedEnv): { llm: LlmConfig | undefined } | { problems: string[] } {
  if (!env.AGENT_MODEL) return { llm: undefined };
  if (env.AGENT_URL)
    return {
      problems: [
        "AGENT_MODEL: set either AGENT_URL (your own agent runtime) or AGENT_MODEL (the hub's LLM agent), not both",
      ],
    };
  const match = /^(openai|anthropic):(.+)$/.exec(env.AGENT_MODEL);
  if (!match) return { problems: [`AGENT_MODEL: ${MODEL_FORMAT}`] };
  const provider = match[1] as LlmConfig["provider"];
  const apiKey = provider === "openai" ? env.OPENAI_API_KEY : env.ANTHROPIC_API_KEY;
  const baseUrl = provider === "openai" ? env.OPENAI_BASE_URL : env.ANTHROPIC_BASE_URL;
  const keyName = provider === "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
  // A local server (Ollama, llama.cpp, vLLM) needs no key; the providers' own APIs do.
  if (!apiKey && !baseUrl)
    return {
      problems: [`${keyName}: must be set for ${env.AGENT_MODEL} (or set ${keyName.replace("API_KEY", "BASE_URL")})`],
    };
  let instructions = "";
  if (env.AGENT_INSTRUCTIONS) {
    try {
      instructions = readFileSync(path.resolve(env.AGENT_INSTRUCTIONS), "utf8").trim();
    } catch (error) {
      return {
        problems: [
          `AGENT_INSTRUCTIONS: cannot read ${env.AGENT_INSTRUCTIONS} (${(error as NodeJS.ErrnoException).code})`,
        ],
      };
    }
  }
  return {
    llm: {
      provider,
      model: match[2]!,
      apiKey,
      baseUrl: baseUrl?.replace(/\/+$/, ""),
      instructions,
      maxSteps: env.AGENT_MAX_STEPS,
      contextChars: env.AGENT_CONTEXT_CHARS,
      resultInlineChars: env.AGENT_RESULT_INLINE_CHARS,
      repeatCallsMax: env.AGENT_REPEAT_CALLS_MAX,
      timeoutMs: env.AGENT_TIMEOUT_MS,
    },
  };
}
