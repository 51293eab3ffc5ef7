// The guide's conversation in a real browser (headless Chromium), typed and sent with Enter, with the hub's LLM
// agent on each model API's stand-in: the person reads the model's "on it", asks how it is going and reads the
// running call's progress (no second call), reads the result when the backend posts it, and asks about it.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./support/browser.js";
import { startFakeAnthropic } from "./support/fake-anthropic.js";
import type { FakeLlm } from "./support/fake-llm.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { completedNotices, GUIDE, guideModel, THERAPISTS } from "./support/guide-model.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

const WAIT = { timeout: 30_000 };

async function say(page: Page, text: string): Promise<void> {
  await page.locator("#cdh-input").focus();
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
}

const agentMessage = (page: Page, text: string) =>
  page.locator('#cdh-messages .cdh-message[data-role="agent"]', { hasText: text });

describe("the guide's conversation in the browser, with the LLM agent", () => {
  let browser: Browser;
  let backend: ToolBackend;

  beforeAll(async () => {
    backend = await startToolBackend();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await backend?.stop();
  });

  for (const { name, start, env } of [
    {
      name: "OpenAI Chat Completions",
      start: startFakeOpenAI,
      env: (llm: FakeLlm) => ({
        AGENT_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: llm.apiKey,
        OPENAI_BASE_URL: llm.url,
      }),
    },
    {
      name: "Anthropic Messages",
      start: startFakeAnthropic,
      env: (llm: FakeLlm) => ({
        AGENT_MODEL: "anthropic:claude-sonnet-4-5",
        ANTHROPIC_API_KEY: llm.apiKey,
        ANTHROPIC_BASE_URL: llm.url,
      }),
    },
  ]) {
    it(`on ${name}`, async () => {
      const llm = await start(guideModel());
      const hub = await TestHub.start({ tools: { match_therapists: matchTherapists }, env: env(llm) });
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        await page.goto(`${hub.url}/demo`);
        await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
        await page.click("#cdh-launcher");
        const starts = backend.starts.length;

        await say(page, GUIDE.opening);
        await agentMessage(page, GUIDE.onIt).waitFor(WAIT);
        expect(backend.starts.length - starts).toBe(1);
        const jobId = backend.starts.at(-1)!.headers.jobId!;
        expect(backend.starts.at(-1)!.headers.callbackUrl).toContain("/callbacks/");

        await backend.post(jobId, { progress: GUIDE.progress });
        await eventually(async () => (await hub.db.jobProgress.count({ where: { jobId } })) > 0, "the progress");
        await say(page, GUIDE.status);
        await agentMessage(page, `Still on it: ${GUIDE.progress}`).waitFor(WAIT);
        expect(backend.starts.length - starts).toBe(1);

        const beforeResult = llm.requests.length;
        await backend.post(jobId, THERAPISTS);
        await agentMessage(page, "I have two for you.").waitFor(WAIT);
        expect(completedNotices(llm.requests[beforeResult]!)).toHaveLength(1);

        await say(page, GUIDE.question);
        await agentMessage(page, "Yes, Pedro sees patients online as well as in Providencia.").waitFor(WAIT);
        expect(completedNotices(llm.requests.at(-1)!)).toHaveLength(1);
        expect(backend.starts.length - starts).toBe(1);
        expect(llm.refusals).toEqual([]);
        await hub.settled();
      } finally {
        await context.close();
        await hub.stop();
        await llm.stop();
      }
    });
  }
});
