// Whether the LLM agent shows its model the person's images (AGENT_MODEL_IMAGES): `true` or `false` as set;
// `auto` by the model's name — every Claude model the Messages API serves reads images, and on Chat Completions
// the families known to (GPT-4o, GPT-4.1, GPT-4 Turbo, GPT-5, o1/o3/o4, and open vision models such as LLaVA,
// Llama 3.2 Vision, Qwen-VL, Gemma 3, Pixtral, MiniCPM-V). A model not known to read images gets the file's
// readable line and URL only, which every model can pass to a tool.
import type { LlmConfig } from "../../config.js";
import type { MediaConfig } from "../../media/media-config.js";

const OPENAI_VISION =
  /(gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-4-vision|gpt-5|(^|[^a-z])o[134]([^a-z]|$)|vision|llava|qwen[\w.-]*vl|gemma-?3|pixtral|minicpm-v|moondream|bakllava)/i;

export function modelSeesImages(
  llm: Pick<LlmConfig, "provider" | "model">,
  setting: MediaConfig["modelImages"],
): boolean {
  if (setting !== "auto") return setting === "true";
  if (llm.provider === "anthropic") return /claude/i.test(llm.model);
  return OPENAI_VISION.test(llm.model);
}
