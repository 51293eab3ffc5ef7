// The widget's attach button in a real browser (headless Chromium), on another site that embeds it: the person
// picks a file, the widget uploads it with its token and sends it, and the agent's turn carries a `/media` URL
// returning exactly those bytes; a file over the hub's limit is shown as not sent, saying why.
import { randomBytes } from "node:crypto";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnRequest } from "../src/agent/agent-port.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { conversationOf, launchChromium, sitePage, startSite } from "./support/browser.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";

const WAIT = { timeout: 30_000 };
const MAX = 200_000;
/** A 1×1 PNG: a thumbnail the console can really draw. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);
type UserInput = Extract<TurnRequest["inputs"][number], { type: "user_message" }>;

describe("attaching a file in the widget (Chromium)", () => {
  let browser: Browser;
  let hub: TestHub;
  let agent: AgentRuntime;
  let site: Awaited<ReturnType<typeof startSite>>;

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({
      env: { AGENT_URL: agent.url, AGENT_SECRET, WIDGET_UPLOAD_MAX_BYTES: String(MAX) },
    });
    site = await startSite({ "/": sitePage(`<script src="${hub.url}/widget.js" data-hub="${hub.url}"></script>`) });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await site?.stop();
    await hub?.stop();
    await agent?.stop();
  });

  async function openChat() {
    const page = await browser.newPage();
    await page.goto(`${site.url}/`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await page.click("#cdh-launcher");
    await page.locator("#cdh-panel").waitFor({ state: "visible", ...WAIT });
    return page;
  }

  it("a picked image, with what the person typed, reaches the agent as a URL returning exactly its bytes", async () => {
    const page = await openChat();
    try {
      const bytes = randomBytes(50_000);
      await page.fill("#cdh-input", "my prescription");
      await expect(page.getAttribute("#cdh-attach", "aria-label")).resolves.toBe("Attach a file");
      await page.setInputFiles("#cdh-file", { name: "receta.png", mimeType: "image/png", buffer: bytes });
      await page
        .locator('#cdh-messages .cdh-message[data-role="user"]:not(.cdh-pending)', { hasText: "my prescription" })
        .waitFor(WAIT);

      const conversationId = await conversationOf(page, hub.url);
      const input = await eventually(
        () =>
          agent
            .turnsOf(conversationId)
            .flatMap((turn) => turn.inputs)
            .find((item): item is UserInput => item.type === "user_message"),
        "the agent's turn",
      );
      expect(input.text).toBe("my prescription");
      expect(input.attachments).toEqual([
        { url: expect.stringMatching(/\/media\//), mimeType: "image/png", name: "receta.png", size: bytes.length },
      ]);
      // Fetched here, by another HTTP client than the browser and the hub.
      const res = await fetch(input.attachments![0]!.url);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    } finally {
      await page.close();
    }
  });

  it("a file over WIDGET_UPLOAD_MAX_BYTES is shown as not sent, saying why, and reaches no one", async () => {
    const page = await openChat();
    try {
      await page.setInputFiles("#cdh-file", {
        name: "big.pdf",
        mimeType: "application/pdf",
        buffer: randomBytes(MAX + 1),
      });
      await page.locator("#cdh-messages .cdh-failed", { hasText: "WIDGET_UPLOAD_MAX_BYTES" }).waitFor(WAIT);
      const conversationId = await conversationOf(page, hub.url);
      expect(await hub.db.message.count({ where: { conversationId, role: "user" } })).toBe(0);
    } finally {
      await page.close();
    }
  });

  it("the console shows the person's image as a thumbnail and a PDF as a link, each opening the hub's copy", async () => {
    const page = await openChat();
    const consolePage = await browser.newPage();
    try {
      await page.setInputFiles("#cdh-file", { name: "dot.png", mimeType: "image/png", buffer: PNG });
      await page
        .locator('#cdh-messages .cdh-message[data-role="user"]:not(.cdh-pending)', { hasText: "dot.png" })
        .waitFor(WAIT);
      await page.setInputFiles("#cdh-file", {
        name: "informe.pdf",
        mimeType: "application/pdf",
        buffer: Buffer.from("%PDF-1.4 x"),
      });
      await page
        .locator('#cdh-messages .cdh-message[data-role="user"]:not(.cdh-pending)', { hasText: "informe.pdf" })
        .waitFor(WAIT);
      const conversationId = await conversationOf(page, hub.url);

      await consolePage.goto(`${hub.url}/console`);
      await consolePage.fill("#console-key", CONSOLE_API_KEY);
      await consolePage.fill("#agent-name", "Rosa");
      await consolePage.click("#console-login");
      await consolePage.locator(`#conversation-list .conversation[data-id="${conversationId}"]`).click(WAIT);
      const thumb = consolePage.locator('#timeline .entry[data-role="user"] img.entry-thumb');
      await thumb.waitFor(WAIT);
      await expect.poll(() => thumb.evaluate((img) => (img as HTMLImageElement).naturalWidth), WAIT).toBe(1);
      expect(await thumb.getAttribute("alt")).toBe("dot.png");
      const link = consolePage.locator('#timeline .entry[data-role="user"] a.entry-file', { hasText: "informe.pdf" });
      await link.waitFor(WAIT);
      const res = await fetch((await link.getAttribute("href"))!);
      expect(await res.text()).toBe("%PDF-1.4 x");
    } finally {
      await consolePage.close();
      await page.close();
    }
  });
});
