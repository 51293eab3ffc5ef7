// Headless Chromium (Debian's package) for page tests, and the hub they run against with the demo tool.
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser } from "playwright-core";
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
    env: { DEMO: "true", DEMO_DELAY_MS: String(demoDelayMs) },
  });
}
