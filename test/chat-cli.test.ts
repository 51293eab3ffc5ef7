// `hub chat` and `hub chat show`, run as the command a person types, against a running hub (real HTTP and
// socket.io): the replies, progress and late result printed until the job ends; the conversation kept between
// calls; the story with a running job's callback URL, which works when posted to by hand.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDemoHub } from "./support/browser.js";
import { hubCommand as runHubCommand, root, tsxLoader } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { CALLBACK_SECRET, HUB_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, TOOL_KEY, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

describe("hub chat", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  const dataDir = mkdtempSync(path.join(tmpdir(), "hub-chat-"));

  beforeAll(async () => {
    backend = await startToolBackend();
    // The demo agent starts the demo search for what is typed; its backend answers after 2 s.
    hub = await startDemoHub(2000, { match_therapists: matchTherapists });
  });
  afterAll(async () => {
    await hub?.stop();
    await backend?.stop();
  });

  const hubCommand = (args: string[], env: Record<string, string> = {}) =>
    runHubCommand(args, { HUB_URL: hub.url, DATA_DIR: dataDir, HUB_API_KEY, ...env });

  it("prints the reply, the progress and the late result, then exits 0", async () => {
    const run = await hubCommand(["chat", "search for anxiety therapists in Ñuñoa"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^conversation [0-9a-f-]{36}$/);
    expect(lines[1]).toBe("you: search for anxiety therapists in Ñuñoa");
    const started = lines.findIndex((line) => line === "  … demo_search started");
    const progress = lines.findIndex((line) => line.startsWith("agent: Still on it: Reviewing"));
    const ended = lines.findIndex((line) => line === "  … demo_search succeeded");
    expect(started).toBeGreaterThan(1);
    expect(progress).toBeGreaterThan(started);
    expect(ended).toBeGreaterThan(progress);
    // The reply that gives the result comes after the job's end, and is the last thing printed.
    const lastReply = lines.findLastIndex((line) => line.startsWith("agent: "));
    expect(lastReply).toBeGreaterThan(ended);
    expect(lines.slice(lastReply + 1).every((line) => line.startsWith("  "))).toBe(true);
    await hub.settled();
  });

  it("keeps its conversation between calls; --new starts another", async () => {
    const saved = JSON.parse(readFileSync(path.join(dataDir, "chat.json"), "utf8")) as {
      conversations: Record<string, { conversationId: string }>;
    };
    const first = saved.conversations[hub.url]!.conversationId;
    const again = await hubCommand(["chat", "how is it going?"]);
    expect(again.code).toBe(0);
    expect(again.stdout.split("\n")[0]).toBe(`conversation ${first}`);
    // Only what was said after this call started is printed.
    expect(again.stdout).not.toContain("Ñuñoa");
    const fresh = await hubCommand(["chat", "--new", "hello"]);
    expect(fresh.code).toBe(0);
    expect(fresh.stdout.split("\n")[0]).not.toBe(`conversation ${first}`);
    await hub.settled();
  });

  it("chat show prints the story, with a running job's callback URL (on the hub's own public URL) that works by hand", async () => {
    const conversationId = await hub.conversation("web");
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "sleep", area: "Ñuñoa" },
    });
    expect(started.status).toBe(202);
    // No PUBLIC_URL here: the URL is on the public address of the hub at HUB_URL, as it told the backend.
    const show = await hubCommand(["chat", "show", conversationId], {
      CALLBACK_SECRET,
      CLINIC_API: backend.url,
      CLINIC_API_KEY: TOOL_KEY,
    });
    expect(show.code).toBe(0);
    expect(show.stdout).toContain(`job ${started.body.job.id} match_therapists status=running`);
    const callback = /^ {4}callback: (\S+)$/m.exec(show.stdout)?.[1];
    expect(callback).toBe(backend.job(started.body.job.id).callbackUrl);
    const posted = await fetch(callback!, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ result: "ok", message: "posted by hand" }),
    });
    expect(posted.status).toBe(200);
    await hub.settled();
    const after = await hubCommand(["chat", "show", conversationId]);
    expect(after.stdout).toContain("status=succeeded");
    expect(after.stdout).toContain("posted by hand");
    expect(after.stdout).not.toContain("callback:");
    // Without the hub's secret at hand no URL is printed; the old command is an alias.
    const alias = await hubCommand(["conversation", "show", conversationId]);
    expect(alias.code).toBe(0);
    expect(alias.stdout).toContain("posted by hand");
  });

  it("stops at --timeout with what still runs, and refuses what it cannot do", async () => {
    backend.startMode = { kind: "accept" };
    const conversationId = await hub.conversation("web");
    await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "stress", area: "Ñuñoa" },
    });
    // Open that conversation's widget side: only a conversation this terminal opened can be spoken in (the hub
    // never hands out the visitor id that would open another).
    const refused = await hubCommand(["chat", "--conversation", conversationId, "hi"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("only a widget conversation this terminal opened can be spoken in");

    const chatId = JSON.parse(readFileSync(path.join(dataDir, "chat.json"), "utf8")).conversations[hub.url]
      .conversationId as string;
    await hub.api("POST", `/v1/conversations/${chatId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "stress", area: "Ñuñoa" },
    });
    const timed = await hubCommand(["chat", "--conversation", chatId, "--timeout", "2s"]);
    expect(timed.code).toBe(0);
    expect(timed.stdout).toMatch(/stopped waiting after 2 s; still running: match_therapists \(job [0-9a-f-]{36}\)/);

    expect((await hubCommand(["chat", "show", crypto.randomUUID()])).code).toBe(1);
    expect((await hubCommand(["chat", "--timeout", "soon", "x"])).stderr).toContain("--timeout:");
    expect((await hubCommand(["chat", "two", "words"])).code).toBe(1);
  });
});

describe("hub chat with short-lived tokens", () => {
  let hub: TestHub;
  const dataDir = mkdtempSync(path.join(tmpdir(), "hub-chat-ttl-"));

  beforeAll(async () => {
    hub = await TestHub.start({
      tools: { demo_search: readFileSync("tools/demo_search.yml", "utf8") },
      env: { DEMO: "true", DEMO_DELAY_MS: "6000", WIDGET_TOKEN_TTL: "2s" },
    });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("renews its token when a reconnection finds it expired, and prints the late result once", async () => {
    const { PATH, HOME } = process.env;
    const child = spawn(
      process.execPath,
      ["--import", tsxLoader, path.join(root, "src/cli/hub.ts"), "chat", "search for anxiety therapists"],
      {
        cwd: root,
        env: { PATH, HOME, LOG_LEVEL: "silent", HUB_URL: hub.url, DATA_DIR: dataDir, HUB_API_KEY },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    const running = await eventually(
      () => hub.db.job.findFirst({ where: { status: "running" } }),
      "the demo job running",
    );
    // Past the token's 2 s, the hub drops the connection: the reconnection meets token_expired.
    await eventually(() => Date.now() - running.createdAt.getTime() > 2500 || undefined, "the token expired");
    hub.ctx.realtime.widget.disconnectSockets();
    expect(await exited).toBe(0);
    const lines = stdout.trim().split("\n");
    const ended = lines.indexOf("  … demo_search succeeded");
    expect(ended).toBeGreaterThan(0);
    expect(lines.findLastIndex((line) => line.startsWith("agent: "))).toBeGreaterThan(ended);
    expect(await hub.db.message.count({ where: { conversationId: running.conversationId, role: "user" } })).toBe(1);
  });
});
