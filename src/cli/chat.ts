// `hub chat "text"`: talk to a running hub as the person, from the terminal. It is a widget client like any
// other (a widget session, the /widget namespace, acks), so what it shows is what a person would see: the
// agent's replies, progress, and the late results of the jobs the conversation starts, until they end.
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { io, type Socket } from "socket.io-client";
import type {
  ClientToServerEvents,
  ServerToClientEvents,
  WidgetJob,
  WidgetMessage,
  WidgetProgress,
} from "../channels/widget/events.js";
import type { Config } from "../config.js";
import { writeSecretFile } from "../secret-file.js";
import { CliError } from "./cli-error.js";
import { terminalText } from "./terminal-text.js";

interface ChatState {
  /** Per hub URL: the conversation `hub chat` talks in, and the visitor id that opens it. */
  conversations: Record<string, { conversationId: string; visitorId: string }>;
  /** Every conversation `hub chat` opened, by id: the visitor id that opens it again (`--conversation`). */
  opened: Record<string, string>;
}

export interface ChatOptions {
  text: string | undefined;
  conversation: string | undefined;
  fresh: boolean;
  timeoutMs: number | undefined;
}

type Print = (line: string) => void;

const stateFile = (config: Config) => path.join(config.dataDir, "chat.json");

export function readChatState(config: Config): ChatState {
  const file = stateFile(config);
  if (!existsSync(file)) return { conversations: {}, opened: {} };
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<ChatState>;
    const conversations = parsed.conversations ?? {};
    const opened = parsed.opened ?? {};
    for (const kept of Object.values(conversations)) opened[kept.conversationId] ??= kept.visitorId;
    return { conversations, opened };
  } catch {
    return { conversations: {}, opened: {} };
  }
}

function saveChatState(config: Config, state: ChatState): void {
  mkdirSync(config.dataDir, { recursive: true });
  // The visitor id opens the conversation: kept like the other secrets of the data folder.
  writeSecretFile(stateFile(config), `${JSON.stringify(state, null, 2)}\n`);
}

/** The conversation `hub chat show` shows when given no id. */
export function currentChat(config: Config): string | undefined {
  return readChatState(config).conversations[config.hubUrl]?.conversationId;
}

async function hubJson(url: string, init: RequestInit): Promise<{ status: number; body: unknown }> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
  } catch (error) {
    throw new CliError(
      `no hub answered at ${new URL(url).origin} (${(error as Error).message}): start one, or set HUB_URL`,
    );
  }
  return { status: res.status, body: await res.json().catch(() => undefined) };
}

/**
 * The visitor id behind a conversation given by id. The hub never hands a visitor id out (it opens the
 * conversation), so only a conversation this terminal opened can be spoken in as the person.
 */
async function visitorOf(config: Config, state: ChatState, conversationId: string): Promise<string> {
  const kept = state.opened[conversationId];
  if (kept) return kept;
  const { status, body } = await hubJson(`${config.hubUrl}/v1/conversations/${encodeURIComponent(conversationId)}`, {
    headers: { Authorization: `Bearer ${config.secrets.hubApiKey}` },
  });
  if (status === 401) throw new CliError(`the hub at ${config.hubUrl} refused the API key: set HUB_API_KEY`);
  if (status === 404) throw new CliError(`no conversation ${conversationId}`);
  const conversation = (body as { conversation?: { channel: string } })?.conversation;
  if (!conversation) throw new CliError(`the hub at ${config.hubUrl} answered ${status}: check HUB_URL`);
  throw new CliError(
    `conversation ${conversationId} (${conversation.channel}) was not opened by \`hub chat\` here: only a widget ` +
      "conversation this terminal opened can be spoken in as the person (see any with `hub chat show`)",
  );
}

async function openSession(config: Config, visitorId: string | undefined) {
  const { status, body } = await hubJson(`${config.hubUrl}/widget/sessions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ channel: "web", name: "Terminal", ...(visitorId ? { visitorId } : {}) }),
  });
  const session = body as { conversationId?: string; visitorId?: string; token?: string } | undefined;
  if (!session?.token || !session.conversationId || !session.visitorId) {
    const error = (body as { error?: { message?: string } } | undefined)?.error?.message;
    throw new CliError(`the hub at ${config.hubUrl} did not open a chat (${status}${error ? `: ${error}` : ""})`);
  }
  return { token: session.token, conversationId: session.conversationId, visitorId: session.visitorId };
}

/**
 * Sends the text and prints what comes until nothing more is owed: the reply to the text, and for every job
 * that was running or starts, its end and the reply that gives its result. Resolves with the exit code.
 */
export async function chat(config: Config, options: ChatOptions, printLine: Print): Promise<number> {
  // What the person, the agent and the team wrote reaches the terminal without its control sequences.
  const print: Print = (line) => printLine(terminalText(line));
  const state = readChatState(config);
  const kept = options.fresh ? undefined : state.conversations[config.hubUrl];
  const visitorId = options.conversation ? await visitorOf(config, state, options.conversation) : kept?.visitorId;
  let session = await openSession(config, visitorId);
  state.conversations[config.hubUrl] = { conversationId: session.conversationId, visitorId: session.visitorId };
  state.opened[session.conversationId] = session.visitorId;
  saveChatState(config, state);
  print(`conversation ${session.conversationId}`);

  const seen = new Set<string>();
  let cursor: string | undefined;
  const running = new Map<string, string>();
  /** Jobs that ended and whose result's reply has not come yet. */
  const owed = new Set<string>();
  let awaitingReply = false;
  let historyRead = false;

  const socket: Socket<ServerToClientEvents, ClientToServerEvents> = io(`${config.hubUrl}/widget`, {
    // On every (re)connection: the newest message seen, so what came meanwhile arrives as history.
    auth: (cb) => cb(cursor ? { token: session.token, lastMessageId: cursor } : { token: session.token }),
  });

  return new Promise<number>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = (code: number, note?: string) => {
      if (timer) clearTimeout(timer);
      process.off("SIGINT", interrupted);
      if (note) print(note);
      socket.close();
      resolve(code);
    };
    const interrupted = () => finish(0, stillRunning("stopped"));
    process.on("SIGINT", interrupted);
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(
        () => finish(0, stillRunning(`stopped waiting after ${options.timeoutMs! / 1000} s`)),
        options.timeoutMs,
      );
    }

    function stillRunning(what: string): string | undefined {
      if (running.size === 0 && owed.size === 0 && !awaitingReply) return undefined;
      const jobs = [...running].map(([id, tool]) => `${tool} (job ${id})`).join(", ");
      return `${what}${jobs ? `; still running: ${jobs}` : ""} — \`hub chat show\` shows what comes later`;
    }

    function settleIfDone() {
      if (historyRead && !awaitingReply && running.size === 0 && owed.size === 0) finish(0);
    }

    function show(message: WidgetMessage, live: boolean) {
      if (seen.has(message.id)) return;
      seen.add(message.id);
      cursor = message.id;
      if (!live) return;
      if (message.role === "user") return;
      const who =
        message.kind === "notice" ? "notice" : message.role === "human" ? (message.senderName ?? "team") : "agent";
      // Continuation lines indented, so every line that starts at the margin starts a message.
      print(`${who}: ${message.text.replace(/\n/g, "\n  ")}`);
      if (message.kind === "notice") return;
      awaitingReply = false;
      // The reply that gives a job's result names the job; one that answers several names none.
      if (message.jobId) owed.delete(message.jobId);
      else owed.clear();
    }

    function jobChanged(job: WidgetJob) {
      if (job.status === "running") {
        if (!running.has(job.jobId)) print(`  … ${job.tool} started`);
        running.set(job.jobId, job.tool);
        return;
      }
      if (running.delete(job.jobId)) owed.add(job.jobId);
      print(`  … ${job.tool} ${job.status.replace("_", " ")}`);
    }

    socket.on("history", ({ messages, jobs }) => {
      // What was said before this call is not repeated; what came while reconnecting is shown.
      for (const message of messages) show(message, historyRead);
      for (const job of jobs ?? []) running.set(job.jobId, job.tool);
      if (!historyRead) {
        historyRead = true;
        if (options.text !== undefined) send(options.text);
        else settleIfDone();
      } else settleIfDone();
    });
    socket.on("message", (message, ack) => {
      if (typeof ack === "function") ack({ ok: true });
      show(message, true);
      settleIfDone();
    });
    socket.on("progress", (progress: WidgetProgress) => {
      // A notify-progress also comes as a message: shown once.
      if (!progress.notify) print(`  … ${progress.text}`);
    });
    socket.on("job", (job) => {
      jobChanged(job);
      settleIfDone();
    });
    // The hub closed the connection itself (a restart, a dropped session): socket.io does not reconnect then.
    socket.on("disconnect", (reason) => {
      if (reason === "io server disconnect") setTimeout(() => socket.connect(), 1000);
    });
    socket.on("connect_error", (error) => {
      if (socket.active) return; // a transport problem: socket.io retries by itself
      if (error.message === "token_expired") {
        // Renewed with the kept visitor id, then the same socket connects again: nothing said is lost.
        openSession(config, session.visitorId).then(
          (renewed) => {
            session = renewed;
            socket.connect();
          },
          (failure: unknown) => finish(1, `hub: ${(failure as Error).message}`),
        );
        return;
      }
      if (error.message === "unauthorized") return finish(1, `hub: the hub refused the chat (${error.message})`);
      const wait = (error as Error & { data?: { retryAfterMs?: number } }).data?.retryAfterMs;
      setTimeout(() => socket.connect(), wait ?? 2000);
    });

    function send(text: string) {
      awaitingReply = true;
      print(`you: ${text}`);
      socket.timeout(15_000).emit("send", { text, clientId: randomUUID() }, (error, answer) => {
        if (error) return finish(1, "hub: the hub did not take the message (no answer in 15 s)");
        if ("error" in answer) return finish(1, `hub: the hub refused the message: ${answer.error.message}`);
        seen.add(answer.id);
        cursor = answer.id;
      });
    }
  });
}
