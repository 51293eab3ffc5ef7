// Files and choices in the web widget, in a real browser (headless Chromium), used as a person uses it: a
// result with an image and a PDF shows the image inline and the PDF as a card that opens it, and clicking a
// button sends its payload — the agent's next turn gets it.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { TurnRequest } from "../src/agent/agent-port.js";
import { AgentRuntime, AGENT_SECRET } from "./support/agent-runtime.js";
import { conversationOf, launchChromium, startSite } from "./support/browser.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { matchTherapists } from "./support/tool-files.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";

const WAIT = { timeout: 30_000 };
/** A 4×4 red PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==",
  "base64",
);

describe("files and choices in the widget page", () => {
  let hub: TestHub;
  let agent: AgentRuntime;
  let backend: ToolBackend;
  let browser: Browser;
  let context: BrowserContext | undefined;
  let files: Awaited<ReturnType<typeof startSite>>;

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    files = await startSite({
      "/chart.png": { type: "image/png", body: PNG },
      "/q3.pdf": { type: "application/pdf", body: "%PDF-1.4\n%%EOF\n" },
    });
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: { AGENT_URL: agent.url, AGENT_SECRET, TURN_RETRY_BASE_MS: "200" },
    });
    browser = await launchChromium();
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });
  afterAll(async () => {
    agent.respond = undefined;
    await browser?.close();
    await hub?.stop();
    await files?.stop();
    await backend?.stop();
    await agent?.stop();
  });

  async function openChat(page: Page): Promise<void> {
    await page.goto(`${hub.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await page.click("#cdh-launcher");
    await page.locator("#cdh-panel").waitFor({ state: "visible", ...WAIT });
  }

  it("a result with an image and a PDF shows the image and a file card; clicking a button sends its payload to the agent's turn", async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    await openChat(page);
    await page.locator("#cdh-input").focus();
    await page.keyboard.type("Can I have my report?");
    await page.keyboard.press("Enter");
    const conversationId = await conversationOf(page, hub.url);
    await eventually(() => agent.turnsOf(conversationId).length > 0, "the first turn");

    agent.respond = (request: TurnRequest) => {
      if (request.conversation.id !== conversationId) return undefined;
      const result = request.inputs.find((input) => input.type === "tool_result");
      if (!result || result.type !== "tool_result") return undefined;
      return {
        messages: [
          {
            text: "Here is your report.",
            attachments: result.attachments,
            buttons: [{ title: "Book Ana", payload: "book:ana" }, { title: "Not now" }],
          },
        ],
      };
    };
    backend.startMode = { kind: "accept", message: "On it." };
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "report", area: "Ñuñoa" },
    });
    expect(started.status).toBe(202);
    const posted = await backend.post(started.body.job.id as string, {
      result: "ok",
      message: "Report ready",
      attachments: [
        { url: `${files.url}/chart.png`, caption: "This week" },
        { url: `${files.url}/q3.pdf`, name: "Q3 report.pdf" },
      ],
    });
    expect(posted.status).toBe(200);

    const reply = page.locator('#cdh-messages .cdh-message[data-role="agent"]', { hasText: "Here is your report." });
    await reply.waitFor(WAIT);
    // The image, loaded and shown inline.
    const image = reply.locator(".cdh-image img");
    await image.waitFor({ state: "visible", ...WAIT });
    await expect.poll(() => image.evaluate((img) => (img as HTMLImageElement).naturalWidth), WAIT).toBe(4);
    expect(await image.getAttribute("alt")).toBe("This week");
    // The PDF, as a card with its name and type that opens it in a new tab.
    const card = reply.locator(".cdh-file");
    await expect.poll(() => card.locator(".cdh-file-name").textContent(), WAIT).toBe("Q3 report.pdf");
    expect(await card.locator(".cdh-file-type").textContent()).toBe("application/pdf");
    expect(await card.getAttribute("href")).toBe(`${files.url}/q3.pdf`);
    expect(await card.getAttribute("rel")).toBe("noopener noreferrer");
    expect(await card.getAttribute("target")).toBe("_blank");

    agent.respond = undefined;
    await reply.getByRole("button", { name: "Book Ana" }).click();
    await page.locator('#cdh-messages .cdh-message[data-role="user"]', { hasText: "Book Ana" }).waitFor(WAIT);
    const tapped = await eventually(
      () =>
        agent
          .turnsOf(conversationId)
          .flatMap((turn) => turn.inputs)
          .find((input) => input.type === "user_message" && input.text === "Book Ana"),
      "the turn with the tap",
    );
    expect(tapped).toMatchObject({ payload: "book:ana" });
    // One tap: the choices are spent.
    expect(await reply.getByRole("button", { name: "Not now" }).isDisabled()).toBe(true);
  });

  it("a link that is not http or https is neither shown nor opened", async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    await openChat(page);
    const conversationId = await conversationOf(page, hub.url);
    // The hub refuses such links; a message stored by anything else is still not rendered as a link.
    const refused = await hub.api("POST", `/v1/conversations/${conversationId}/messages`, {
      text: "Look",
      attachments: [{ url: "javascript:alert(1)" }],
    });
    expect(refused.status).toBe(400);
    await hub.db.message.create({
      data: {
        id: crypto.randomUUID(),
        conversationId,
        role: "agent",
        text: "Stored elsewhere",
        attachments: [{ url: "javascript:alert(1)", name: "x" }],
        status: "stored",
      },
    });
    await page.reload();
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    const entry = page.locator('#cdh-messages .cdh-message[data-role="agent"]', { hasText: "Stored elsewhere" });
    await entry.waitFor({ state: "attached", ...WAIT });
    expect(await entry.locator("a, img").count()).toBe(0);
  });
});
