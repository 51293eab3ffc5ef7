// Headless Chromium (Debian's package) for page tests, the hub they run against with the demo tool, and
// another site (another origin) that embeds the widget.
import { mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { TestHub } from "./test-hub.js";

export const ARTIFACTS = path.resolve("test-artifacts");

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    // No background traffic: this machine reaches nothing outside.
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-quic",
      "--disable-sync",
    ],
  });
}

/**
 * A hub with the shipped demo tool and its backend (results after `demoDelayMs`, 3 s unless told), any other
 * tool files given, and the artifacts folder made.
 */
export function startDemoHub(demoDelayMs = 3000, tools: Record<string, string> = {}): Promise<TestHub> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return TestHub.start({
    tools: { demo_search: readFileSync("tools/demo_search.yml", "utf8"), ...tools },
    // Every page of a test file comes from 127.0.0.1: the per-address visitor limits would count them as one
    // visitor opening dozens of chats a minute (the limits have their own tests).
    env: {
      DEMO: "true",
      DEMO_DELAY_MS: String(demoDelayMs),
      WIDGET_SESSIONS_PER_MINUTE: "1000",
      WIDGET_CONNECTIONS_PER_MINUTE: "1000",
    },
  });
}

/** Another site: its own origin (127.0.0.2, its own port), serving the given paths. */
export async function startSite(files: Record<string, { type: string; body: string | Buffer }>) {
  const server = createServer((req, res) => {
    const file = files[new URL(req.url ?? "/", "http://site").pathname];
    if (!file) return void res.writeHead(404).end();
    res.writeHead(200, { "Content-Type": file.type }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve));
  return {
    url: `http://127.0.0.2:${(server.address() as AddressInfo).port}`,
    stop: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** A page of that site: its own heading, then `html` (the widget's script tag, the site's own scripts). */
export const sitePage = (html: string) => ({
  type: "text/html; charset=utf-8",
  body: `<!doctype html><html><head><title>A clinic</title></head><body><h1>A clinic's own site</h1>${html}</body></html>`,
});

/** The conversation the widget on this page keeps in localStorage. */
/**
 * The page's widget conversation id. With `hubUrl`, the conversation is made now if the person has not written
 * yet — as a session asking for `start` makes it (the id is the same: it is derived from the visitor) — for
 * tests that address it through the API before the person writes.
 */
export async function conversationOf(page: Page, hubUrl?: string): Promise<string> {
  const session = await page.evaluate(() => {
    const key = Object.keys(localStorage).find((name) => name.endsWith(":session"));
    return JSON.parse(localStorage.getItem(key ?? "") ?? "{}") as { conversationId: string; visitorId?: string };
  });
  if (hubUrl && session.visitorId) {
    const res = await fetch(`${hubUrl}/widget/sessions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ visitorId: session.visitorId, start: true }),
    });
    const started = (await res.json()) as { conversationId: string };
    if (started.conversationId !== session.conversationId)
      throw new Error(`the page's conversation ${session.conversationId} was started as ${started.conversationId}`);
  }
  return session.conversationId;
}
