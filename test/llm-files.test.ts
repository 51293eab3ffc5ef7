// The hub's LLM agent and a result's files: the model reads them as text (name and type, not their links),
// and the hub attaches them to the reply that gives the result (docs/agent-runtime.md, Files and choices).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { lastUserText, type FakeLlm, type LlmRequest } from "./support/fake-llm.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const PDF = { url: "https://files.example.com/signed/abc123/therapists.pdf", name: "Therapists.pdf" };
const said = (request: LlmRequest) => JSON.stringify(request.messages);

describe("the LLM agent and a result's files", () => {
  let llm: FakeLlm;
  let backend: ToolBackend;
  let hub: TestHub;
  let client: WidgetClient | undefined;

  beforeAll(async () => {
    backend = await startToolBackend();
    llm = await startFakeOpenAI((request) => {
      const text = said(request);
      if (text.includes("Therapists.pdf")) return { text: "Here is the list of therapists." };
      if (request.messages.at(-1)?.role === "tool") return { text: "On it." };
      if (lastUserText(request).includes("list"))
        return { toolCalls: [{ name: "match_therapists", args: { reason: "anxiety", area: "Ñuñoa" } }] };
      return { text: "ok" };
    });
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: {
        AGENT_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: llm.apiKey,
        OPENAI_BASE_URL: llm.url,
        TURN_RETRY_BASE_MS: "100",
      },
    });
  });
  afterAll(async () => {
    client?.close();
    await hub?.stop();
    await llm?.stop();
    await backend?.stop();
  });

  it("shows the model the files by name and type, and attaches them to its reply", async () => {
    const session = await openSession(hub.url);
    client = await WidgetClient.connect(hub.url, { token: session.token });
    backend.startMode = { kind: "accept", message: "Working on it." };
    await client.send("Can you send me a list of therapists?", "files-1");
    await eventually(() => client!.agentMessages().find((m) => m.text === "On it."), "the placeholder reply");
    const job = await eventually(
      () => hub.db.job.findFirst({ where: { conversationId: session.conversationId, status: "running" } }),
      "the job",
    );
    const before = llm.requests.length;
    expect((await backend.post(job.id, { result: "ok", message: "2 found", attachments: [PDF] })).status).toBe(200);
    const reply = await eventually(
      () => client!.agentMessages().find((m) => m.text === "Here is the list of therapists."),
      "the reply with the file",
    );
    expect(reply.attachments).toEqual([
      { url: PDF.url, name: "Therapists.pdf", mimeType: "application/pdf", kind: "file" },
    ]);
    const request = llm.requests.slice(before).find((r) => said(r).includes("Therapists.pdf"))!;
    expect(said(request)).toContain("Therapists.pdf (application/pdf)");
    // The model is not handed the link to copy into its words: the hub attaches the file.
    expect(said(request)).not.toContain(PDF.url);
  });
});
