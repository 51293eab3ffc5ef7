// The web widget in a real browser (headless Chromium), used the way a person uses it: on a phone, with the
// keyboard, with a screen reader's names; a slow job's progress shown once, its "working on it" line gone when
// the job ends (even while a human has the conversation and its result is held) and back after a reload
// mid-job; a history confirmed once shown, and a list replaced when the hub does not know the widget's cursor;
// nothing left in the host page's globals; a notice, once, while the agent runtime cannot answer; and the typing
// indicator kept until the reply is on screen.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AgentRuntime, AGENT_SECRET } from "./support/agent-runtime.js";
import { conversationOf, launchChromium, sitePage, startDemoHub, startSite } from "./support/browser.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { matchTherapists } from "./support/tool-files.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";

const WAIT = { timeout: 30_000 };
const PHONE = { width: 390, height: 844 };
const NOTICE = "The assistant can't answer right now; we'll reply as soon as we can.";

/** Opens a hub's demo page and waits until the widget has its history. */
async function openDemo(page: Page, hub: TestHub): Promise<void> {
  await page.goto(`${hub.url}/demo`);
  await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
}

/** Opens the chat with its launcher, as a person does: the message box gets the focus. */
async function openChat(page: Page): Promise<void> {
  await page.click("#cdh-launcher");
  await page.locator("#cdh-panel").waitFor({ state: "visible", ...WAIT });
  await expect.poll(() => activeId(page), WAIT).toBe("cdh-input");
}

const activeId = (page: Page) => page.evaluate(() => document.activeElement?.id ?? "");

/** Types a message into the widget's box and presses Enter. */
async function say(page: Page, text: string): Promise<void> {
  await page.locator("#cdh-input").focus();
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
}

const messages = (page: Page, role: string, text: string) =>
  page.locator(`#cdh-messages .cdh-message[data-role="${role}"]`, { hasText: text });

/** The name Chromium's accessibility tree gives an element (what a screen reader announces). */
async function accessibleName(context: BrowserContext, page: Page, selector: string): Promise<string> {
  const cdp = await context.newCDPSession(page);
  try {
    const { root } = await cdp.send("DOM.getDocument", { depth: 0 });
    const { nodeId } = await cdp.send("DOM.querySelector", { nodeId: root.nodeId, selector });
    const { nodes } = await cdp.send("Accessibility.getPartialAXTree", { nodeId, fetchRelatives: false });
    return String(nodes[0]?.name?.value ?? "");
  } finally {
    await cdp.detach();
  }
}

interface TextContrast {
  element: string;
  text: string;
  fontSize: number;
  ratio: number;
}

/**
 * Every visible element in the panel that holds text, with the contrast of its text against what is behind
 * it, computed from the computed styles: the background colours of its ancestors composited from the page
 * down, its colour over them, and the opacity of each ancestor applied to both.
 */
function panelContrasts(page: Page): Promise<TextContrast[]> {
  return page.evaluate(() => {
    type Rgba = [number, number, number, number];
    const parse = (css: string): Rgba => {
      const parts = (css.match(/rgba?\(([^)]*)\)/)?.[1] ?? "0,0,0,0")
        .split(/[\s,/]+/)
        .filter(Boolean)
        .map(Number);
      return [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0, parts[3] ?? 1];
    };
    const over = (top: Rgba, bottom: Rgba): Rgba => {
      const a = top[3];
      return [top[0] * a + bottom[0] * (1 - a), top[1] * a + bottom[1] * (1 - a), top[2] * a + bottom[2] * (1 - a), 1];
    };
    const mix = (inside: Rgba, backdrop: Rgba, opacity: number): Rgba =>
      over([...inside.slice(0, 3), opacity] as Rgba, backdrop);
    const luminance = ([r, g, b]: Rgba) => {
      const channel = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
    };
    const panel = document.getElementById("cdh-panel")!;
    const found: TextContrast[] = [];
    for (const element of [panel, ...Array.from(panel.querySelectorAll<HTMLElement>("*"))]) {
      const text = Array.from(element.childNodes)
        .filter((node) => node.nodeType === Node.TEXT_NODE)
        .map((node) => node.textContent ?? "")
        .join("")
        .trim();
      if (!text || !element.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
      const chain: HTMLElement[] = [];
      for (let node: HTMLElement | null = element; node; node = node.parentElement) chain.unshift(node);
      let background: Rgba = [255, 255, 255, 1]; // the canvas
      const groups: { opacity: number; backdrop: Rgba }[] = [];
      for (const node of chain) {
        const style = getComputedStyle(node);
        const opacity = Number(style.opacity);
        if (opacity < 1) groups.push({ opacity, backdrop: background });
        background = over(parse(style.backgroundColor), background);
      }
      let color = over(parse(getComputedStyle(element).color), background);
      for (const group of groups.reverse()) {
        color = mix(color, group.backdrop, group.opacity);
        background = mix(background, group.backdrop, group.opacity);
      }
      const [light, dark] = [luminance(color), luminance(background)].sort((a, b) => b - a) as [number, number];
      found.push({
        element: `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ""}.${element.className}`,
        text: text.slice(0, 40),
        fontSize: parseFloat(getComputedStyle(element).fontSize),
        ratio: Math.round(((light + 0.05) / (dark + 0.05)) * 100) / 100,
      });
    }
    return found;
  });
}

/**
 * Records, from the page's first script on, how many times `needle` shows in the panel's visible text after
 * every change of the panel (the most it ever showed is `window.__mostShown`).
 */
async function countShowings(page: Page, needle: string): Promise<void> {
  await page.addInitScript((text: string) => {
    const w = window as unknown as { __mostShown: number };
    w.__mostShown = 0;
    const count = () => {
      const panel = document.getElementById("cdh-panel");
      const shown = panel ? panel.innerText.split(text).length - 1 : 0;
      w.__mostShown = Math.max(w.__mostShown, shown);
    };
    new MutationObserver(count).observe(document, {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
    });
  }, needle);
}

describe("the widget", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  let browser: Browser;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    backend = await startToolBackend();
    // The demo page and agent, plus a tool whose backend the test drives (its progress and result).
    hub = await startDemoHub(3000, { match_therapists: matchTherapists });
    browser = await launchChromium();
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
    await backend?.stop();
  });

  async function newPage(viewport = { width: 1280, height: 800 }): Promise<Page> {
    context = await browser.newContext({
      viewport,
      ...(viewport.width < 500 ? { isMobile: true, hasTouch: true } : {}),
    });
    return context.newPage();
  }

  /** A slow job in the page's conversation, started as the agent runtime starts one; returns its id. */
  async function startJob(conversationId: string, area = `area-${Math.random().toString(36).slice(2)}`) {
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "anxiety", area },
    });
    expect(started.status).toBe(202);
    return started.body.job.id as string;
  }

  const jobLine = (page: Page) => page.locator("#cdh-progress");

  it("on a phone (390×844) the open panel is the whole screen; Escape closes it and the focus goes back to the launcher", async () => {
    const page = await newPage(PHONE);
    await openDemo(page, hub);
    await openChat(page);

    const panel = page.locator("#cdh-panel");
    expect(await panel.boundingBox()).toEqual({ x: 0, y: 0, ...PHONE });
    // Nothing of the page shows anywhere around it: every edge and the middle are the panel's.
    const points = [
      [1, 1],
      [PHONE.width / 2, 1],
      [PHONE.width - 1, 1],
      [1, PHONE.height / 2],
      [PHONE.width - 1, PHONE.height / 2],
      [PHONE.width / 2, PHONE.height - 1],
    ];
    const covered = await page.evaluate(
      (at) => at.map(([x, y]) => document.getElementById("cdh-panel")!.contains(document.elementFromPoint(x!, y!))),
      points,
    );
    expect(covered).toEqual(points.map(() => true));
    // 16 px or more: iOS zooms the page into a smaller text box when it gets the focus.
    const fontSize = await page.locator("#cdh-input").evaluate((input) => parseFloat(getComputedStyle(input).fontSize));
    expect(fontSize).toBeGreaterThanOrEqual(16);

    await page.keyboard.press("Escape");
    await panel.waitFor({ state: "hidden", ...WAIT });
    expect(await activeId(page)).toBe("cdh-launcher");

    // With the keyboard alone: Enter on the launcher opens it (focus in the box), the close button closes it.
    await page.keyboard.press("Enter");
    await panel.waitFor({ state: "visible", ...WAIT });
    await expect.poll(() => activeId(page), WAIT).toBe("cdh-input");
    await page.locator(".cdh-close").focus();
    await page.keyboard.press("Enter");
    await panel.waitFor({ state: "hidden", ...WAIT });
    expect(await activeId(page)).toBe("cdh-launcher");
  });

  it("every text in the panel, small text included, has a contrast of at least 4.5:1 with what is behind it", async () => {
    const page = await newPage(PHONE);
    await openDemo(page, hub);
    await openChat(page);
    await say(page, "Hello, who are you?");
    await messages(page, "agent", "built-in agent").waitFor(WAIT);
    // A running job, so its line is on screen too.
    await startJob(await conversationOf(page, hub.url));
    await jobLine(page).waitFor({ state: "visible", ...WAIT });
    // Offline: the status says so, and a message written now waits, dimmed, until the hub is back.
    await context!.setOffline(true);
    await page.locator('#cdh-status[data-state="offline"]').waitFor(WAIT);
    await say(page, "Are you still there?");
    await page.locator("#cdh-messages .cdh-pending", { hasText: "Are you still there?" }).waitFor(WAIT);

    const texts = await panelContrasts(page);
    const small = texts.filter((text) => text.fontSize < 14);
    // The meta lines under each message, the status, the job's line: what was hard to read.
    expect(small.map((text) => text.element)).toEqual(
      expect.arrayContaining(["span#cdh-status.cdh-status", "div.cdh-meta", "div#cdh-progress.cdh-progress"]),
    );
    expect(texts.map((text) => text.text)).toEqual(expect.arrayContaining(["Are you still there?", "Sending…"]));
    expect(texts.filter((text) => text.ratio < 4.5)).toEqual([]);
    await context!.setOffline(false);
  });

  it("the launcher's accessible name says it opens the chat and how many messages are unread", async () => {
    const page = await newPage(PHONE);
    await openDemo(page, hub);
    const conversationId = await conversationOf(page, hub.url);
    expect(await accessibleName(context!, page, "#cdh-launcher")).toBe("Open chat");

    for (const text of ["A first note from the agent.", "And a second one."]) {
      expect((await hub.api("POST", `/v1/conversations/${conversationId}/messages`, { text })).status).toBe(201);
    }
    await page.locator("#cdh-unread", { hasText: "2" }).waitFor({ state: "visible", ...WAIT });
    expect(await accessibleName(context!, page, "#cdh-launcher")).toBe("Open chat, 2 unread");
    expect(await page.locator("#cdh-unread").getAttribute("aria-hidden")).toBe("true");

    await openChat(page);
    await page.keyboard.press("Escape");
    expect(await accessibleName(context!, page, "#cdh-launcher")).toBe("Open chat");
  });

  it("shows a job's progress once: the job's line does not repeat what a message already says", async () => {
    const page = await newPage();
    await countShowings(page, "Reviewing 12 therapists");
    await openDemo(page, hub);
    await openChat(page);
    const jobId = await startJob(await conversationOf(page, hub.url));
    await jobLine(page).waitFor({ state: "visible", ...WAIT });

    // A notify-progress: the person gets it as a message (the built-in agent's "Still on it: …").
    await backend.post(jobId, { progress: "Reviewing 12 therapists", notify: true });
    await messages(page, "agent", "Reviewing 12 therapists").waitFor(WAIT);
    // Progress the person is not sent a message about shows on the job's line. Events come in order, so once
    // it shows, the notify-progress's event has been handled too.
    await backend.post(jobId, { progress: "Calling 3 clinics" });
    await jobLine(page).filter({ hasText: "Calling 3 clinics" }).waitFor(WAIT);

    expect(await page.evaluate(() => (window as unknown as { __mostShown: number }).__mostShown)).toBe(1);
    expect(await messages(page, "agent", "Reviewing 12 therapists").count()).toBe(1);

    await backend.post(jobId, { result: "ok", message: "2 therapists found", data: { therapists: [] } });
    await messages(page, "agent", "2 therapists found").waitFor(WAIT);
    await jobLine(page).waitFor({ state: "hidden", ...WAIT });
  });

  it("the job's line goes when the job ends while a human has the conversation, though its result is held", async () => {
    const page = await newPage();
    await openDemo(page, hub);
    await openChat(page);
    const conversationId = await conversationOf(page, hub.url);
    const jobId = await startJob(conversationId);
    await backend.post(jobId, { progress: "Calling 3 clinics" });
    await jobLine(page).filter({ hasText: "Calling 3 clinics" }).waitFor(WAIT);

    const taken = await hub.api(
      "POST",
      `/v1/conversations/${conversationId}/takeover`,
      { agent: { id: "h1", name: "Marta" } },
      CONSOLE_API_KEY,
    );
    expect(taken.status).toBe(200);
    await backend.post(jobId, { result: "ok", message: "Held result: 2 therapists found", data: {} });
    await jobLine(page).waitFor({ state: "hidden", ...WAIT });
    await eventually(
      async () =>
        (await hub.db.message.count({ where: { conversationId, role: "tool_result", status: "held" } })) === 1,
      "the result to be held",
    );
    expect(await messages(page, "agent", "Held result").count()).toBe(0);

    // After hand-back the held result comes, once, and the line stays gone.
    expect((await hub.api("POST", `/v1/conversations/${conversationId}/handback`, {}, CONSOLE_API_KEY)).status).toBe(
      200,
    );
    await messages(page, "agent", "Held result").waitFor(WAIT);
    await hub.settled();
    expect(await messages(page, "agent", "Held result").count()).toBe(1);
    expect(await jobLine(page).isHidden()).toBe(true);
  });

  it("after a reload mid-job the job's line is back, with its latest progress; a job that ended meanwhile is not", async () => {
    let page = await newPage();
    await openDemo(page, hub);
    await openChat(page);
    const jobId = await startJob(await conversationOf(page, hub.url));
    await jobLine(page).filter({ hasText: "Working on match therapists" }).waitFor(WAIT);

    await page.reload();
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await jobLine(page).filter({ hasText: "Working on match therapists" }).waitFor(WAIT);

    await backend.post(jobId, { progress: "Calling 3 clinics" });
    await jobLine(page).filter({ hasText: "Calling 3 clinics" }).waitFor(WAIT);
    await page.reload();
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await jobLine(page).filter({ hasText: "Calling 3 clinics" }).waitFor(WAIT);

    // The tab is closed; the job ends; the person comes back: the result, and no job running.
    await page.close();
    await backend.post(jobId, { result: "ok", message: "Ended while away: 2 therapists found", data: {} });
    page = await context!.newPage();
    await openDemo(page, hub);
    await messages(page, "agent", "Ended while away").waitFor({ state: "attached", ...WAIT });
    expect(await jobLine(page).isHidden()).toBe(true);
  });

  it("confirms a history once it shows it (then it is delivered), and replaces its list when the hub does not know its cursor", async () => {
    let page = await newPage();
    await openDemo(page, hub);
    const conversationId = await conversationOf(page, hub.url);
    await page.close();
    // Written while no tab is open: stored, then shown — and confirmed — by the next page.
    const posted = await hub.api("POST", `/v1/conversations/${conversationId}/messages`, {
      text: "While you were away",
    });
    const id = posted.body.message.id as string;
    await expect
      .poll(async () => (await hub.db.message.findUniqueOrThrow({ where: { id } })).status, WAIT)
      .toBe("stored");
    page = await context!.newPage();
    await openDemo(page, hub);
    await messages(page, "agent", "While you were away").waitFor({ state: "attached", ...WAIT });
    await expect
      .poll(async () => (await hub.db.message.findUniqueOrThrow({ where: { id } })).status, WAIT)
      .toBe("delivered");

    // A cache from elsewhere: a cursor and a message this conversation does not have.
    await page.evaluate(() => {
      const prefix = Object.keys(localStorage)
        .find((name) => name.endsWith(":session"))!
        .slice(0, -":session".length);
      const stranger = {
        id: crypto.randomUUID(),
        role: "agent",
        text: "Not from this conversation",
        createdAt: new Date().toISOString(),
      };
      localStorage.setItem(`${prefix}:messages`, JSON.stringify([stranger]));
      localStorage.setItem(`${prefix}:cursor`, JSON.stringify({ id: stranger.id, createdAt: stranger.createdAt }));
    });
    await page.reload();
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await messages(page, "agent", "While you were away").waitFor({ state: "attached", ...WAIT });
    expect(await messages(page, "agent", "Not from this conversation").count()).toBe(0);
    expect(await messages(page, "agent", "While you were away").count()).toBe(1);
  });

  describe("on another site", () => {
    let site: Awaited<ReturnType<typeof startSite>>;

    beforeAll(async () => {
      const widget = `<script src="${hub.url}/widget.js"></script>`;
      site = await startSite({
        // A site with an `io` of its own (another socket.io, say).
        "/with-io": sitePage(`<script>window.io = function hostIo() { return "the site's own"; };</script>${widget}`),
        "/plain": sitePage(widget),
        // A site using an AMD loader (RequireJS and the like): the widget's client must not end up in it.
        "/amd": sitePage(
          `<script>window.defined = []; window.define = function (f) { window.defined.push(String(f).slice(0, 40)); }; window.define.amd = {};</script>${widget}`,
        ),
      });
    });
    afterAll(async () => {
      await site?.stop();
    });

    /** Opens a site page, chats once, and returns what the page's globals then hold. */
    async function chatOn(pathname: string) {
      const page = await newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(`${site.url}${pathname}`);
      await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
      await openChat(page);
      await say(page, "Hello, who are you?");
      await messages(page, "agent", "built-in agent").waitFor(WAIT);
      expect(errors).toEqual([]);
      return page.evaluate(() => {
        const w = window as unknown as { io?: () => string; defined?: string[] };
        return { hasIo: "io" in window, io: typeof w.io === "function" ? w.io() : undefined, defined: w.defined };
      });
    }

    it("the widget leaves no global io, and the site's own io survives", async () => {
      expect(await chatOn("/plain")).toEqual({ hasIo: false, io: undefined, defined: undefined });
      expect(await chatOn("/with-io")).toEqual({ hasIo: true, io: "the site's own", defined: undefined });
    });

    it("the widget works on a site with an AMD loader, and gives it nothing", async () => {
      expect(await chatOn("/amd")).toEqual({ hasIo: false, io: undefined, defined: [] });
    });
  });
});

describe("the widget, with an agent runtime", () => {
  let hub: TestHub;
  let agent: AgentRuntime;
  let browser: Browser;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({ env: { AGENT_URL: agent.url, AGENT_SECRET, TURN_RETRY_BASE_MS: "200" } });
    browser = await launchChromium();
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
    await agent?.stop();
  });

  async function newPage(): Promise<Page> {
    context = await browser.newContext();
    return context.newPage();
  }

  const notices = (page: Page) => page.locator('#cdh-messages .cdh-message[data-kind="notice"]');

  async function noticesInDatabase(conversationId: string): Promise<number> {
    return hub.db.message.count({ where: { conversationId, role: "agent", text: NOTICE } });
  }

  it("while the agent runtime cannot answer, the person is told so once, whatever the retries, and answered when it is back", async () => {
    const page = await newPage();
    await openDemo(page, hub);
    await openChat(page);
    const conversationId = await conversationOf(page, hub.url);
    agent.failNext = 1000;
    const failuresBefore = agent.failures;

    await say(page, "Are you there?");
    await notices(page).filter({ hasText: NOTICE }).waitFor(WAIT);
    // The turn is retried with backoff; each retry fails again, and adds no notice.
    await eventually(async () => agent.failures >= failuresBefore + 3, "three failed attempts");
    await say(page, "Hello again?");
    const failuresThen = agent.failures;
    await eventually(async () => agent.failures >= failuresThen + 2, "two more failed attempts");
    expect(await notices(page).count()).toBe(1);
    expect(await noticesInDatabase(conversationId)).toBe(1);

    // Back: one reply answers both messages; the notice stays the only one.
    agent.failNext = 0;
    await messages(page, "agent", "you said: Are you there? | you said: Hello again?").waitFor(WAIT);
    await hub.settled();
    expect(await notices(page).count()).toBe(1);
    expect(await noticesInDatabase(conversationId)).toBe(1);

    // Another outage, another wait: told again, once.
    agent.failNext = 1000;
    await say(page, "Still there?");
    await expect.poll(() => notices(page).count(), WAIT).toBe(2);
    agent.failNext = 0;
    await messages(page, "agent", "you said: Still there?").waitFor(WAIT);
    await hub.settled();
    expect(await noticesInDatabase(conversationId)).toBe(2);
    expect(await notices(page).count()).toBe(2);
  });

  it("keeps the typing indicator on screen until the agent's reply is", async () => {
    const page = await newPage();
    // What happens to the indicator and the replies, in order, from the page's first script on.
    await page.addInitScript(() => {
      const w = window as unknown as { __seen: string[] };
      w.__seen = [];
      new MutationObserver((records) => {
        for (const record of records) {
          const target = record.target as HTMLElement;
          if (record.type === "attributes" && target.id === "cdh-typing") {
            w.__seen.push(target.hidden ? "typing hidden" : "typing shown");
          }
          for (const node of Array.from(record.addedNodes)) {
            if (node instanceof HTMLElement && node.dataset.role === "agent") w.__seen.push("reply");
          }
        }
      }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["hidden"] });
    });
    await openDemo(page, hub);
    await openChat(page);
    await say(page, "Quick question");
    await messages(page, "agent", "you said: Quick question").waitFor(WAIT);
    await page.locator("#cdh-typing").waitFor({ state: "hidden", ...WAIT });

    const seen = await page.evaluate(() => (window as unknown as { __seen: string[] }).__seen);
    const shown = seen.indexOf("typing shown");
    expect(shown).toBeGreaterThanOrEqual(0);
    // Once shown, it is not hidden before the reply arrives.
    expect(seen.slice(shown, seen.indexOf("typing hidden", shown) + 1)).toContain("reply");
  });
});
