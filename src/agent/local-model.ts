// A local OpenAI-compatible model server (Ollama) on its usual address: asked once at start, briefly, so the
// banner can say how to let it hold the conversation instead of the built-in agent. Only the model list is
// read; nothing is sent.

/** Ollama's address: OLLAMA_HOST as Ollama itself reads it ("host:port" or a URL), else localhost:11434. */
export function ollamaBaseUrl(ollamaHost: string | undefined): string {
  const host = ollamaHost?.trim() || "localhost:11434";
  const url = new URL(/^https?:\/\//.test(host) ? host : `http://${host}`);
  // "0.0.0.0" is where Ollama listens, not an address to ask.
  if (url.hostname === "0.0.0.0") url.hostname = "localhost";
  if (!url.port && !/^https?:\/\//.test(host)) url.port = "11434";
  return `${url.origin}/v1`;
}

export interface LocalModel {
  baseUrl: string;
  /** The first model it serves, when it lists one. */
  model: string | undefined;
}

/** The local server and a model it has, or undefined when nothing answers within `timeoutMs`. */
export async function probeLocalModel(baseUrl: string, timeoutMs = 300): Promise<LocalModel | undefined> {
  try {
    const res = await fetch(`${baseUrl}/models`, { signal: AbortSignal.timeout(timeoutMs), redirect: "error" });
    if (!res.ok) return undefined;
    const body = (await res.json()) as { data?: { id?: unknown }[] };
    if (!Array.isArray(body?.data)) return undefined;
    const first = body.data.find((entry) => typeof entry?.id === "string")?.id as string | undefined;
    return { baseUrl, model: first && /^[\w.:/-]{1,100}$/.test(first) ? first : undefined };
  } catch {
    return undefined;
  }
}

/** The banner's line: the exact environment to start with it. */
export function localModelLine(local: LocalModel): string {
  return `AGENT_MODEL=openai:${local.model ?? "<model>"} OPENAI_BASE_URL=${local.baseUrl} npm start`;
}
