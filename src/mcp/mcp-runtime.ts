// MCP servers at run time, in every process: their clients, the calls this process holds, and the poll that
// looks at what is due (src/mcp/mcp-job-store.ts). A call of an MCP server's tool is a job like any other
// (DESIGN: a job is a job, wherever the tool lives): it starts here, and its outcome is committed through the
// same path as a backend's callback (src/jobs/callbacks.ts) — live, stored, the template when the window has
// closed, held during a take-over, a late result of a cancelled job never given.
//
// - A tool the server runs as a task (MCP Tasks) is started as one: the task id and its Streamable HTTP
//   session are kept with the job, and any process polls it (a restart included) until it ends.
// - A plain call is held open by the process that made it. Finished within the tool's sync budget, it is the
//   turn's answer; past it, the model is told it runs and its result comes as a job's. Its process renews a
//   lease; a lease that lapses (the process died, or its stdio server) ends the job — or runs it again.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool as ListedTool,
} from "@modelcontextprotocol/sdk/types.js";
import { randomUUID } from "node:crypto";
import type { CallbackDeps } from "../jobs/job-deps.js";
import { handleCallback, type CallbackBody } from "../jobs/callbacks.js";
import { HubError } from "../errors.js";
import { errorKey } from "../log-throttle.js";
import type { JobRow } from "../jobs/job-row.js";
import { mayRunAgain, runAgain, settleJob } from "../jobs/rerun.js";
import { jobTool, type ToolDefinition } from "../tools/tool-definition.js";
import type { Tool } from "../tools/tool-file.js";
import { endSession, openClient, type EnvLookup, type OpenedClient } from "./mcp-connect.js";
import {
  claimDue,
  recordMcpCall,
  releaseLeases,
  renewLeases,
  updateTask,
  type McpJob,
  type McpJobState,
} from "./mcp-job-store.js";
import type { McpServerSpec } from "./mcp-server-file.js";
import type { McpCalls, McpStart } from "./mcp-calls.js";
import type { PersonIdentity } from "../conversations/person-identity.js";
import { describeMcpError, progressText } from "./mcp-outcome.js";
import { resultOfMcp, type McpResultDeps } from "./mcp-result.js";
import {
  askPerson,
  cancelAbandonedElicitations,
  cancelOwnedElicitations,
  type ElicitationDeps,
} from "./elicitation.js";
import { connectProblem } from "./connect-problem.js";
import { formatProblem } from "../tools/load-tools.js";

/** How long a held call's lease runs; renewed every LEASE_MS / 3. */
export const LEASE_MS = 15_000;
const POLL_EVERY_MS = 1_000;
const CLAIM_BATCH = 20;
const ABANDONED_EVERY = 30;
const DEFAULT_TASK_POLL_MS = 2_000;
const MIN_TASK_POLL_MS = 500;
const MAX_TASK_POLL_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;
const RECONNECT_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

/** What the runtime needs of the hub: what a callback's commit does, and where a result's files go. */
export type McpRuntimeDeps = CallbackDeps & McpResultDeps & ElicitationDeps;

export interface McpRuntimeOptions {
  servers: McpServerSpec[];
  env: EnvLookup;
  /** The hub's context, once built (the runtime is part of it). */
  ctx: () => McpRuntimeDeps;
  /** Turns a server's listing into the hub's tools (src/mcp/mcp-tools.ts). */
  toolsOf: (spec: McpServerSpec, listed: ListedTool[]) => Tool[];
  /** Called when a server's tools are known (or change): the registry merges them. */
  onTools: (server: string, tools: Tool[]) => void;
}

interface ServerState {
  spec: McpServerSpec;
  /** The shared client (stdio: the one child process; HTTP: the client tools are listed with). */
  shared: OpenedClient | undefined;
  connecting: Promise<OpenedClient> | undefined;
  /** Bumped each time the stdio child is started again: tasks of an earlier child are lost. */
  generation: number;
  down: string | undefined;
  retry: NodeJS.Timeout | undefined;
}

interface Held {
  jobId: string;
  conversationId: string;
  server: string;
  abort: AbortController;
  /** A task's id, when what is held is its result stream (a task waiting for the person's input). */
  taskId?: string;
  /** The server asked the person: a plain call holding the agent's turn lets it go (the turn sends the question). */
  asked?: () => void;
}

export class McpRuntime implements McpCalls {
  readonly processId = randomUUID();
  readonly #servers = new Map<string, ServerState>();
  readonly #held = new Map<string, Held>();
  readonly #options: McpRuntimeOptions;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<unknown> | undefined;
  #stopped = false;
  #polls = 0;

  constructor(options: McpRuntimeOptions) {
    this.#options = options;
    for (const spec of options.servers)
      this.#servers.set(spec.name, {
        spec,
        shared: undefined,
        connecting: undefined,
        generation: 0,
        down: undefined,
        retry: undefined,
      });
  }

  get #ctx(): McpRuntimeDeps {
    return this.#options.ctx();
  }

  /** Connects every server in the background (a server that is down does not hold the hub), and polls. */
  start(): void {
    for (const state of this.#servers.values()) void this.#connect(state, 0);
    this.#timer = setInterval(() => {
      if (this.#polling || this.#stopped) return;
      this.#polling = this.#poll()
        .catch((error: unknown) =>
          this.#ctx.warnRepeated(`mcp-poll:${errorKey(error)}`, { err: error }, "MCP jobs not looked at"),
        )
        .finally(() => (this.#polling = undefined));
    }, POLL_EVERY_MS);
    this.#timer.unref();
  }

  /** Each server as it stands, for /readyz and the banner. */
  status(): { server: string; transport: "http" | "stdio"; up: boolean; problem?: string }[] {
    return [...this.#servers.values()].map((state) => ({
      server: state.spec.name,
      transport: "url" in state.spec ? "http" : "stdio",
      up: state.shared !== undefined,
      ...(state.down ? { problem: state.down } : {}),
    }));
  }

  async #connect(state: ServerState, attempt: number): Promise<void> {
    if (this.#stopped) return;
    try {
      await this.#list(state);
    } catch (error) {
      // The line `hub tools check` prints for it.
      const problem = formatProblem(
        connectProblem(state.spec, error, {
          step: state.shared ? "list" : "connect",
          timeoutMs: state.spec.connect_timeout ?? CONNECT_TIMEOUT_MS,
        }),
      );
      state.down = problem;
      const waitMs = RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]!;
      this.#ctx.warnRepeated(
        `mcp-connect:${problem}`,
        { mcp_server: state.spec.name, problem, retry_in_ms: waitMs },
        "MCP server cannot be reached: its tools are not offered until it can",
      );
      state.retry = setTimeout(() => void this.#connect(state, attempt + 1), waitMs);
      state.retry.unref();
    }
  }

  async #list(state: ServerState): Promise<void> {
    const opened = await this.#shared(state);
    const listed = [];
    let cursor: string | undefined;
    do {
      const page = await opened.client.listTools(cursor ? { cursor } : undefined, { timeout: CONNECT_TIMEOUT_MS });
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const tools = this.#options.toolsOf(state.spec, listed);
    this.#options.onTools(state.spec.name, tools);
    this.#ctx.log.info({ mcp_server: state.spec.name, tools: tools.map((tool) => tool.name) }, "MCP server listed");
  }

  /** The server's shared client, opened once (again after it closed: a stdio child that exited). */
  #shared(state: ServerState): Promise<OpenedClient> {
    if (state.shared) return Promise.resolve(state.shared);
    state.connecting ??= openClient(state.spec, {
      env: this.#options.env,
      timeoutMs: state.spec.connect_timeout ?? CONNECT_TIMEOUT_MS,
      onStderr: (line) => this.#ctx.log.debug({ mcp_server: state.spec.name, line }, "MCP server says"),
      prepare: (client) => {
        this.#prepare(client, state, undefined);
        // The server changed its tools: listed again, and the set in force follows.
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          void this.#list(state).catch((error: unknown) =>
            this.#ctx.log.warn(
              { mcp_server: state.spec.name, reason: describeMcpError(error) },
              "MCP tools not listed again",
            ),
          );
        });
      },
    })
      .then((opened) => {
        state.shared = opened;
        state.down = undefined;
        state.generation += 1;
        const generation = state.generation;
        opened.client.onclose = () => {
          if (state.shared !== opened) return;
          state.shared = undefined;
          if (this.#stopped) return;
          this.#ctx.log.warn({ mcp_server: state.spec.name }, "MCP server connection closed; opened again");
          // Its plain calls fail (the SDK rejects them); a stdio child's tasks are lost with it.
          if (generation === state.generation) void this.#connect(state, 0);
        };
        return opened;
      })
      .finally(() => (state.connecting = undefined));
    return state.connecting;
  }

  /** Handlers on a client: the server's questions to the person, for the job this client serves (if one). */
  #prepare(client: Client, state: ServerState, jobId: string | undefined): void {
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      const params = request.params;
      const related = (params._meta?.["io.modelcontextprotocol/related-task"] as { taskId?: string } | undefined)
        ?.taskId;
      const held = jobId
        ? this.#held.get(jobId)
        : related
          ? [...this.#held.values()].find((each) => each.taskId === related)
          : this.#onlyHeldCall(state.spec.name);
      if (!held) {
        this.#ctx.log.info(
          { mcp_server: state.spec.name },
          "MCP server asked a question the hub cannot tie to one call: declined",
        );
        return { action: "decline" };
      }
      return askPerson(this.#ctx, {
        ...params,
        conversationId: held.conversationId,
        jobId: held.jobId,
        server: state.spec.name,
        owner: this.processId,
        signal: AbortSignal.any([held.abort.signal, extra.signal]),
        onAsked: () => held.asked?.(),
      });
    });
  }

  /** The one plain call this process holds on a server: a question without a task can only be its. */
  #onlyHeldCall(server: string): Held | undefined {
    const calls = [...this.#held.values()].filter((each) => each.server === server && !each.taskId);
    return calls.length === 1 ? calls[0] : undefined;
  }

  /** Starts a job's call on its server. Never throws: a server that cannot be reached is a failure. */
  async startCall(
    job: JobRow,
    tool: ToolDefinition,
    modelArgs: Record<string, unknown>,
    person?: PersonIdentity,
  ): Promise<McpStart> {
    const source = tool.mcp!;
    const state = this.#servers.get(source.server);
    if (!state) return { kind: "failed", reason: `the MCP server ${source.server} is not declared` };
    const http = "url" in state.spec;
    // The person's verified identifier is the hub's to give: whatever the arguments hold under its name.
    const args =
      source.personArgument && person ? { ...modelArgs, [source.personArgument]: person.identifier } : modelArgs;
    const personHeader = state.spec.person?.header;
    let opened: OpenedClient;
    try {
      // Over HTTP each call has a session of its own: a question the server asks in it is that call's, and
      // a task lives in it (reopened by its id, by any process).
      opened = http
        ? await openClient(state.spec, {
            env: this.#options.env,
            timeoutMs: state.spec.connect_timeout ?? CONNECT_TIMEOUT_MS,
            prepare: (client) => this.#prepare(client, state, job.id),
            ...(personHeader && person ? { headers: { [personHeader]: person.identifier } } : {}),
          })
        : await this.#shared(state);
    } catch (error) {
      return {
        kind: "failed",
        reason: `the MCP server ${source.server} cannot be reached (${describeMcpError(error)})`,
      };
    }
    const supportsTasks = opened.client.getServerCapabilities()?.tasks?.requests?.tools?.call !== undefined;
    const asTask = source.taskSupport === "required" || (source.taskSupport === "optional" && supportsTasks);
    const base: McpJobState = {
      server: source.server,
      transport: http ? "http" : "stdio",
      kind: asTask ? "task" : "call",
      owner: this.processId,
      sessionId: opened.sessionId(),
      protocolVersion: opened.protocolVersion(),
    };
    const ctx = this.#ctx;
    try {
      if (asTask) {
        const created = await opened.client.request(
          { method: "tools/call", params: { name: source.tool, arguments: args } },
          CreateTaskResultSchema,
          { task: { ttl: tool.async?.timeoutMs }, timeout: ctx.config.toolStartTimeoutMs },
        );
        const pollMs = clampPoll(created.task.pollInterval);
        const task: McpJobState = { ...base, taskId: created.task.taskId, pollMs };
        const recorded = await recordMcpCall(ctx.sql, job.id, task, pollMs);
        if (http) await opened.close().catch(() => undefined);
        if (!recorded) return { kind: "failed", reason: "the job ended as it started" };
        return { kind: "running", message: created.task.statusMessage ?? null };
      }
    } catch (error) {
      if (http) await endSession(opened);
      return { kind: "failed", reason: describeMcpError(error) };
    }
    return this.#plainCall(job, tool, args, opened, base, http);
  }

  async #plainCall(
    job: JobRow,
    tool: ToolDefinition,
    args: Record<string, unknown>,
    opened: OpenedClient,
    state: McpJobState,
    http: boolean,
  ): Promise<McpStart> {
    const ctx = this.#ctx;
    const source = tool.mcp!;
    // The lease first: a crash during the call leaves a job the poll finds lost, never one that hangs.
    if (!(await recordMcpCall(ctx.sql, job.id, state, LEASE_MS))) {
      if (http) await endSession(opened);
      return { kind: "failed", reason: "the job ended as it started" };
    }
    const held: Held = {
      jobId: job.id,
      conversationId: job.conversationId,
      server: source.server,
      abort: new AbortController(),
    };
    this.#held.set(job.id, held);
    let late = false;
    const call = opened.client
      .request({ method: "tools/call", params: { name: source.tool, arguments: args } }, CallToolResultSchema, {
        signal: held.abort.signal,
        timeout: tool.async?.timeoutMs ?? ctx.config.toolStartTimeoutMs,
        resetTimeoutOnProgress: false,
        onprogress: (progress) => {
          if (late) void this.#commit(job, { progress: progressText(progress), notify: source.notifyProgress });
        },
      })
      .then(
        (result) => ({ ok: true as const, result }),
        (error: unknown) => ({ ok: false as const, reason: describeMcpError(error) }),
      );
    const finished = () => {
      this.#held.delete(job.id);
      if (http) void endSession(opened);
    };
    let budget: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      call,
      new Promise<"late">((resolve) => {
        budget = setTimeout(() => resolve("late"), source.syncBudgetMs);
        // A question to the person is sent by the conversation's turn: the call cannot hold it meanwhile.
        held.asked = () => resolve("late");
      }),
    ]);
    clearTimeout(budget);
    if (first !== "late") {
      finished();
      return first.ok ? { kind: "result", result: first.result } : { kind: "failed", reason: first.reason };
    }
    late = true;
    // The outcome commits after the start is recorded as running, so that the job's changes come in order.
    let accepted!: () => void;
    const recorded = new Promise<void>((resolve) => (accepted = resolve));
    const waited = Promise.race([recorded, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
    void Promise.all([call, waited]).then(async ([outcome]) => {
      try {
        if (held.abort.signal.aborted) return;
        await this.#commitOutcome(
          job,
          outcome.ok ? outcome.result : undefined,
          outcome.ok ? undefined : outcome.reason,
        );
      } finally {
        finished();
      }
    });
    return { kind: "running", message: null, accepted };
  }

  /** A result or progress for a job, through the callbacks' own path. A commit refused for now is retried. */
  async #commit(job: Pick<JobRow, "id" | "tool">, body: CallbackBody): Promise<boolean> {
    for (let attempt = 0; attempt < 10; attempt += 1) {
      try {
        await handleCallback(this.#ctx, { jobId: job.id, tool: job.tool }, body);
        return true;
      } catch (error) {
        // 409 (the job ended: cancelled, timed out) and 404 (erased): nothing to give.
        if (error instanceof HubError && error.status < 500) return false;
        if (this.#stopped) return false;
        await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** attempt)));
      }
    }
    this.#ctx.log.warn({ job_id: job.id }, "MCP result not committed; the job times out");
    return false;
  }

  /** A late result: its files stored with the conversation and linked (mcp-result.ts), then committed. */
  async #commitOutcome(job: JobRow, result: CallToolResult | undefined, reason: string | undefined): Promise<void> {
    if (result) await this.#commit(job, await resultOfMcp(this.#ctx, job.conversationId, result));
    else await this.#commit(job, { result: "error", message: reason ?? "the MCP call failed" });
  }

  /** Calls a job off on its server: a held call is aborted (the SDK tells the server), a task cancelled. */
  async cancel(job: JobRow): Promise<"sent" | "not_held"> {
    const held = this.#held.get(job.id);
    if (held) {
      held.abort.abort(new Error("the job was cancelled"));
      this.#held.delete(job.id);
    }
    const state = (job as Partial<McpJob>).mcp;
    if (state?.kind === "task" && state.taskId) {
      const done = await this.#withTaskClient(state, (client) =>
        client.experimental.tasks.cancelTask(state.taskId!, { timeout: this.#ctx.config.toolStartTimeoutMs }),
      ).then(
        () => true,
        () => false,
      );
      if (done) return "sent";
    }
    return held ? "sent" : "not_held";
  }

  /** A client for a task's session: the task's own (HTTP, reopened by id) or this process's stdio child. */
  async #withTaskClient<T>(state: McpJobState, work: (client: Client) => Promise<T>): Promise<T> {
    const server = this.#servers.get(state.server);
    if (!server) throw new Error(`the MCP server ${state.server} is no longer declared`);
    if (state.transport === "stdio") {
      if (state.owner !== this.processId || !server.shared) throw new LostError("the MCP server's process stopped");
      return work(server.shared.client);
    }
    const opened = await openClient(server.spec, {
      env: this.#options.env,
      timeoutMs: server.spec.connect_timeout ?? CONNECT_TIMEOUT_MS,
      session: { id: state.sessionId!, protocolVersion: state.protocolVersion },
    });
    try {
      return await work(opened.client);
    } finally {
      await opened.close().catch(() => undefined);
    }
  }

  async #poll(): Promise<void> {
    const ctx = this.#ctx;
    if (this.#held.size > 0) {
      const running = await renewLeases(ctx.sql, [...this.#held.keys()], LEASE_MS);
      // A held call whose job ended otherwise (cancelled, timed out): the server is told to stop.
      for (const [jobId, held] of this.#held)
        if (!running.has(jobId)) {
          held.abort.abort(new Error("the job has ended"));
          this.#held.delete(jobId);
        }
    }
    // Questions whose process stopped waiting for them (it died) can never be answered back: withdrawn.
    if (++this.#polls % ABANDONED_EVERY === 0) await cancelAbandonedElicitations(ctx);
    const due = await claimDue(ctx.sql, CLAIM_BATCH, LEASE_MS);
    await Promise.all(due.map((job) => this.#look(job)));
  }

  /** A due job: a task to poll, or a call whose holder is gone. */
  async #look(job: McpJob): Promise<void> {
    const state = job.mcp;
    if (this.#held.has(job.id)) return;
    if (state.kind === "call") return this.#lost(job, "the hub process running the call stopped");
    try {
      await this.#pollTask(job, state);
    } catch (error) {
      if (error instanceof LostError) return this.#lost(job, error.message);
      // Not found: the server no longer knows the task (it restarted, or the session ended).
      if (
        error instanceof McpError &&
        (error.code === -32602 || error.code === 404 || /not found/i.test(error.message))
      )
        return this.#lost(job, `the MCP server no longer knows the task (${error.message})`);
      const reason = describeMcpError(error);
      this.#ctx.warnRepeated(
        `mcp-task:${state.server}:${reason}`,
        { mcp_server: state.server, job_id: job.id, reason },
        "MCP task not polled; polled again later",
      );
      await updateTask(
        this.#ctx.sql,
        job.id,
        state,
        Math.min(MAX_TASK_POLL_MS, (state.pollMs ?? DEFAULT_TASK_POLL_MS) * 2),
      );
    }
  }

  async #pollTask(job: McpJob, state: McpJobState): Promise<void> {
    const ctx = this.#ctx;
    const tool = jobTool(ctx.tools, job);
    const task = await this.#withTaskClient(state, (client) =>
      client.experimental.tasks.getTask(state.taskId!, { timeout: ctx.config.toolStartTimeoutMs }),
    );
    const pollMs = clampPoll(task.pollInterval ?? state.pollMs);
    if (task.status === "completed") {
      const result = await this.#withTaskClient(state, (client) =>
        client.experimental.tasks.getTaskResult(state.taskId!, CallToolResultSchema, {
          timeout: ctx.config.toolStartTimeoutMs,
        }),
      );
      await this.#commitOutcome(job, result, undefined);
      await this.#endTaskSession(state);
      return;
    }
    if (task.status === "failed" || task.status === "cancelled") {
      const reason =
        task.status === "cancelled"
          ? `the MCP server cancelled the task${task.statusMessage ? `: ${task.statusMessage}` : ""}`
          : (task.statusMessage ?? "the MCP task failed");
      await this.#commit(job, { result: "error", message: reason });
      await this.#endTaskSession(state);
      return;
    }
    if (task.statusMessage && task.statusMessage !== state.statusMessage) {
      await this.#commit(job, {
        progress: task.statusMessage.slice(0, 2000),
        notify: tool?.mcp?.notifyProgress === true,
      });
    }
    const next = { ...state, statusMessage: task.statusMessage ?? state.statusMessage, pollMs };
    if (task.status === "input_required") {
      // The server's question comes on the task's result stream: held here until the task ends.
      this.#holdResultStream(job, next);
      return;
    }
    await updateTask(ctx.sql, job.id, next, pollMs);
  }

  /** Waits on `tasks/result` (the server sends its questions on it), holding the job's lease meanwhile. */
  #holdResultStream(job: McpJob, state: McpJobState): void {
    const held: Held = {
      jobId: job.id,
      conversationId: job.conversationId,
      server: state.server,
      abort: new AbortController(),
      taskId: state.taskId!,
    };
    this.#held.set(job.id, held);
    const server = this.#servers.get(state.server)!;
    const work = async () => {
      let opened: OpenedClient | undefined;
      try {
        const client =
          state.transport === "stdio"
            ? server.shared!.client
            : (opened = await openClient(server.spec, {
                env: this.#options.env,
                timeoutMs: server.spec.connect_timeout ?? CONNECT_TIMEOUT_MS,
                session: { id: state.sessionId!, protocolVersion: state.protocolVersion },
                prepare: (each) => this.#prepare(each, server, job.id),
              })).client;
        const result = await client.experimental.tasks.getTaskResult(state.taskId!, CallToolResultSchema, {
          signal: held.abort.signal,
          timeout: jobTool(this.#ctx.tools, job)?.async?.timeoutMs ?? LEASE_MS,
        });
        if (!held.abort.signal.aborted) await this.#commitOutcome(job, result, undefined);
        await this.#endTaskSession(state);
      } catch (error) {
        if (held.abort.signal.aborted) return;
        // Let the poll look again: the task may still be running.
        this.#ctx.log.warn({ job_id: job.id, reason: describeMcpError(error) }, "MCP task's result stream ended");
        await updateTask(this.#ctx.sql, job.id, state, state.pollMs ?? DEFAULT_TASK_POLL_MS).catch(() => undefined);
      } finally {
        this.#held.delete(job.id);
        await opened?.close().catch(() => undefined);
      }
    };
    void work();
  }

  async #endTaskSession(state: McpJobState): Promise<void> {
    if (state.transport !== "http" || !state.sessionId) return;
    const server = this.#servers.get(state.server);
    if (!server) return;
    await openClient(server.spec, {
      env: this.#options.env,
      timeoutMs: CONNECT_TIMEOUT_MS,
      session: { id: state.sessionId, protocolVersion: state.protocolVersion },
    })
      .then(endSession)
      .catch(() => undefined);
  }

  /** A call no process can finish: run again where its tool allows, else the job fails with why. */
  async #lost(job: McpJob, reason: string): Promise<void> {
    const ctx = this.#ctx;
    const tool = jobTool(ctx.tools, job);
    ctx.log.warn({ job_id: job.id, tool: job.tool, reason }, "MCP call lost");
    if (tool && mayRunAgain(tool, job)) {
      await runAgain(ctx, job, tool, `The call was lost (${reason}): ran again`);
      return;
    }
    await settleJob(ctx, job, { ok: false, reason: `The call was lost: ${reason}.` });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#polling;
    for (const held of this.#held.values()) held.abort.abort(new Error("the hub is stopping"));
    // What this process held is looked at by another process (or this one, restarted) at once, not when
    // its lease would have run out.
    await releaseLeases(this.#ctx.sql, [...this.#held.keys()]).catch(() => undefined);
    await cancelOwnedElicitations(this.#ctx, this.processId).catch(() => undefined);
    this.#held.clear();
    for (const state of this.#servers.values()) {
      clearTimeout(state.retry);
      const shared = state.shared;
      state.shared = undefined;
      await shared?.close().catch(() => undefined);
    }
  }
}

class LostError extends Error {}

function clampPoll(ms: number | undefined): number {
  return Math.min(MAX_TASK_POLL_MS, Math.max(MIN_TASK_POLL_MS, ms ?? DEFAULT_TASK_POLL_MS));
}
