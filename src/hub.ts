// Composition root: builds every dependency once and starts the roles this process plays.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Worker } from "bullmq";
import { builtInComposer } from "./agent/composer.js";
import { DEMO_TOOL, startDemo } from "./agent/demo-agent.js";
import { httpAgent } from "./agent/http-agent.js";
import { llmAgent } from "./agent/llm/llm-agent.js";
import { modelLabel } from "./agent/llm/model-choice.js";
import { disabledChannel } from "./channels/disabled-channel.js";
import { metaChannels } from "./channels/meta/meta-channels.js";
import { startWebhookWorker } from "./channels/meta/meta-webhooks.js";
import { smsChannel } from "./channels/sms/sms-channel.js";
import { twilioClient } from "./channels/sms/twilio-client.js";
import { domainOf, smtpLabel } from "./channels/email/email-config.js";
import { commitEmail, startEmailWorker } from "./channels/email/inbound-emails.js";
import type { SmtpListener } from "./channels/email/smtp-listener.js";
import { widgetChannel } from "./channels/widget/widget-channel.js";
import { setWebhookAtStart, telegramAdapter, telegramBanner } from "./channels/telegram/telegram-start.js";
import { visitorLimits } from "./channels/widget/visitor-limits.js";
import { keyFailures } from "./server/key-failures.js";
import { memberLookup } from "./team/member-auth.js";
import { toolEnvironment, type Config } from "./config.js";
import type { HubContext } from "./context.js";
import { openDatabase, type Database } from "./db/client.js";
import { backlogMeter } from "./delivery/backlog.js";
import { messageChanges } from "./conversations/message-changes.js";
import { createChanges } from "./delivery/changes.js";
import { deliveryState } from "./delivery/state/sql-delivery-state.js";
import { metaStatusRules } from "./channels/meta/meta-statuses.js";
import { turnSchedule } from "./delivery/turn-schedule.js";
import { attachConsoleNamespace } from "./server/sockets/console-namespace.js";
import { catchUpAfterRedisReturns } from "./server/sockets/widget-catch-up.js";
import { attachWidgetNamespace, forwardChangesToWidgets } from "./server/sockets/widget-namespace.js";
import { startSweeper } from "./workers/sweeper.js";
import { startTurnWorker, turnRunner } from "./workers/turn-worker.js";
import { startPushWorker } from "./workers/push-worker.js";
import { startEventSender } from "./workers/event-sender.js";
import { setEventSinks } from "./events/event-sinks.js";
import { createPush } from "./push/push.js";
import { startJobWorkers, type Workers } from "./jobs/job-workers.js";
import { createLogger, type Logger } from "./logger.js";
import { errorKey, throttledLog } from "./log-throttle.js";
import { relayJobEvents } from "./jobs/job-events.js";
import { createJobWaiters } from "./jobs/job-waiters.js";
import { createMetrics } from "./metrics.js";
import { openQueues, type Queues } from "./queues.js";
import { createRealtime } from "./realtime.js";
import { createRedisWatch } from "./redis-watchdog.js";
import { createApp } from "./server/app.js";
import { demoBackendKey } from "./demo/demo-backend.js";
import { databaseStartError, listenStartError } from "./start-up-errors.js";
import { formatProblem, loadTools, ToolFileError } from "./tools/load-tools.js";
import { toolEnvHas } from "./tools/tool-env.js";
import { toolReloader } from "./tools/tool-reload.js";
import { loadMcpServers } from "./mcp/load-mcp-servers.js";
import { mcpRegistry } from "./mcp/mcp-registry.js";
import { mcpToolsOf } from "./mcp/mcp-tools.js";
import { relayToolReloads } from "./tools/tool-reload-relay.js";

/** How long in-flight HTTP requests, and then running turns, may take to finish on stop. */
const DRAIN_HTTP_MS = 2500;
const DRAIN_WORK_MS = 4000;
const STOP_WAIT_MS = 1500;

async function boundedWait(work: Promise<unknown>, ms: number, onTimeout: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), ms)));
  const outcome = await Promise.race([
    work.then(
      () => "done" as const,
      () => "done" as const,
    ),
    timedOut,
  ]);
  clearTimeout(timer);
  if (outcome === "timeout") onTimeout();
}

export interface Hub {
  ctx: HubContext;
  /** The port of the hub's SMTP listener, when it has one (EMAIL_SMTP_PORT). */
  smtpPort?: number;
  /** Where the HTTP server listens (web roles), e.g. http://127.0.0.1:3000. */
  url: string | undefined;
  database: Database;
  stop(): Promise<void>;
}

export interface HubOptions {
  logger?: Logger;
  /** Replaces the clock (tests of expiry). */
  now?: () => Date;
}

export async function startHub(config: Config, options: HubOptions = {}): Promise<Hub> {
  const log = options.logger ?? createLogger(config.logLevel);
  for (const warning of config.warnings) log.warn({ setting: warning.setting }, warning.message);
  const env = toolEnvironment();
  // A `$env` name with no value would be sent as an empty string: refused here, like any invalid file.
  const { tools, problems, folder } = await loadTools(config.toolsDir, { envHas: toolEnvHas(env) });
  if (problems.length > 0) throw new ToolFileError(problems);
  if (folder === "missing" || folder === "empty")
    log.warn(
      { tools_dir: config.toolsDir },
      folder === "missing" ? "no tool folder: the hub has no tools (set TOOLS_DIR)" : "no tool file in the tool folder",
    );

  const mcpServers = await loadMcpServers(config.toolsDir, { envHas: toolEnvHas(env) });
  if (mcpServers.problems.length > 0) throw new ToolFileError(mcpServers.problems);
  const metrics = createMetrics();
  // The MCP servers' tools join the tool files' as each server lists them (none is waited for).
  let recompose = () => undefined as void;
  const mcpTools = mcpRegistry({
    servers: mcpServers.servers.map((server) => server.name),
    log,
    changed: () => recompose(),
  });
  // The set in force for the hub's lifetime; a change in the folder (or `hub tools reload`) replaces it.
  const reloader = toolReloader({
    dir: config.toolsDir,
    check: { envHas: toolEnvHas(env) },
    initial: tools,
    compose: mcpTools.compose,
    log,
    counted: (outcome) => {
      metrics.toolReloads.inc({ outcome });
      metrics.toolFilesRefused.set(outcome === "refused" ? 1 : 0);
    },
  });
  recompose = () => reloader.recompose();
  // Every Redis connection of this process: an outage is logged once when it starts and once when it ends;
  // in between, each connection lost (and each that ioredis gave up on and the hub opened again) is counted.
  const redisWatch = createRedisWatch({
    outage: (connection) =>
      log.warn({ connection }, "Redis is not ready: /readyz answers 503 and callbacks are refused until it is"),
    lost: (connection) => metrics.redisLost.inc({ connection }),
    reopened: (connection) => metrics.redisReopened.inc({ connection }),
    returned: (downMs) => log.info({ down_ms: downMs }, "Redis is ready again"),
  });
  const queues: Queues = await openQueues(config.redis, config.queuePrefix, redisWatch);
  let database: Database;
  try {
    database = await openDatabase({
      databaseUrl: config.databaseUrl,
      pooler: config.databasePooler,
      directUrl: config.databaseDirectUrl,
      dataDir: config.dataDir,
    });
  } catch (error) {
    await queues.close();
    throw databaseStartError(config.databaseUrl, error);
  }
  // Outgoing events: the triggers write them only while the database lists an endpoint (docs/events.md).
  try {
    await setEventSinks(database.sql, config.events.endpoints);
  } catch (error) {
    await queues.close();
    await database.close().catch(() => undefined);
    throw error;
  }
  let publicUrl = config.publicUrl;
  const demoKey = demoBackendKey(config.secrets.callbackSecret);
  const realtime = createRealtime(config.redis, config.queuePrefix, redisWatch);
  const widget = widgetChannel(realtime);
  const now = options.now ?? (() => new Date());
  const changes = createChanges((error) => log.warn({ err: error }, "a change listener failed"));
  // Turns run the context built below; they only start once the hub runs.
  const turns = turnSchedule(
    queues.redis,
    queues.prefix,
    queues.turns,
    turnRunner(config, () => ctx),
  );
  const backlog = backlogMeter(turns, queues.turns);
  const warnRepeated = throttledLog(log, "warn");
  // Every process hears every process's job changes (for its widgets and its job waiters).
  const jobEvents = relayJobEvents({
    changes,
    redis: queues.redis,
    redisTarget: config.redis,
    watch: redisWatch,
    prefix: queues.prefix,
    onError: (error) => warnRepeated(`job-events:${errorKey(error)}`, { err: error }, "job event not relayed"),
  });
  const toolReloads = relayToolReloads({
    reloader,
    redis: queues.redis,
    redisTarget: config.redis,
    watch: redisWatch,
    prefix: queues.prefix,
    onError: (error) => warnRepeated(`tool-reloads:${errorKey(error)}`, { err: error }, "tool reload not relayed"),
  });
  const jobWaiters = createJobWaiters({
    changes,
    relayed: jobEvents.ready,
    onError: (error) => warnRepeated(`job-waiters:${errorKey(error)}`, { err: error }, "job-end notice failed"),
  });
  const ctx: HubContext = {
    config,
    sql: database.sql,
    ingestSql: database.ingestSql,
    delivery: deliveryState(database.sql, changes, now, metaStatusRules),
    messageChanges: messageChanges(database.sql, changes, now),
    turns,
    changes,
    backlog,
    log,
    warnRepeated,
    jobWaiters,
    queues,
    tools: reloader.tools,
    async reloadTools() {
      const outcome = await reloader.reload("command");
      const processes = await toolReloads.announce().catch((error: unknown) => {
        log.warn({ err: error }, "the other processes were not asked to reload their tool files (Redis)");
        return null;
      });
      return { ...outcome, processes };
    },
    lastToolReload: () => reloader.last(),
    realtime,
    metrics,
    agent: config.agent
      ? httpAgent(config.agent)
      : config.llm
        ? llmAgent(config.llm, () => ctx)
        : builtInComposer({
            // The demo behaviour needs this very context; it is only called once the hub runs.
            startSearch: reloader.tools.has(DEMO_TOOL)
              ? (conversationId, args) => startDemo(ctx, conversationId, args)
              : undefined,
          }),
    channels: {
      web: widget,
      ios: widget,
      android: widget,
      flutter: widget,
      ...metaChannels(config, queues),
      telegram: config.telegram
        ? telegramAdapter(config.telegram, { queues, sql: database.sql, metrics, now })
        : disabledChannel,
      sms: config.sms
        ? smsChannel({
            config: config.sms,
            client: twilioClient(config.sms),
            sql: database.sql,
            publicUrl: () => publicUrl,
            now,
          })
        : disabledChannel,
      // nodemailer (and the SMTP listener's smtp-server, below) are loaded only by a hub with e-mail.
      email: config.email
        ? (await import("./channels/email/email-channel.js")).emailChannel({
            email: config.email,
            config,
            sql: database.sql,
            now,
            publicUrl: () => publicUrl,
            metrics,
          })
        : disabledChannel,
    },
    limits: visitorLimits(queues.redis, queues.prefix, config.limits),
    keyFailures: keyFailures(queues.redis, queues.prefix, config.limits.authFailuresPerMinute),
    members: memberLookup(database.sql),
    push: createPush(config.push, database.sql, queues.pushes, now),
    // `$env.HUB_URL` defaults to the hub's own address, where the demo tool's backend lives, and
    // `$env.DEMO_BACKEND_KEY` to the key that backend asks for.
    env: (name) => env[name] ?? (name === "HUB_URL" ? publicUrl : name === "DEMO_BACKEND_KEY" ? demoKey : undefined),
    publicUrl: () => publicUrl,
    now,
    // The MCP SDK is loaded only by a hub that declares servers.
    mcp:
      mcpServers.servers.length > 0
        ? new (await import("./mcp/mcp-runtime.js")).McpRuntime({
            servers: mcpServers.servers,
            env: (name) => ctx.env(name),
            ctx: () => ctx,
            toolsOf: (spec, listed) => {
              const { tools: listedTools, problems: listProblems } = mcpToolsOf(spec, listed);
              for (const problem of listProblems) log.warn({ problem: formatProblem(problem) }, "MCP tool left out");
              return listedTools;
            },
            onTools: (server, listedTools) => mcpTools.listed(server, listedTools),
          })
        : undefined,
  };

  let server: Server | undefined;
  let url: string | undefined;
  // Every process forwards its own changes to the consoles (on whichever process they are connected).
  const stopForwarding = attachConsoleNamespace(ctx);
  const stopWidgetForwarding = forwardChangesToWidgets(ctx);
  // Only processes with sockets of their own have anything to catch up.
  const stopCatchUp = config.role !== "worker" ? catchUpAfterRedisReturns(ctx) : () => undefined;
  if (config.role !== "worker") {
    server = createServer(createApp(ctx));
    realtime.attach(server);
    attachWidgetNamespace(ctx);
    // A deep accept queue: a burst of callbacks waits to be accepted rather than being reset.
    server.listen({ port: config.port, host: config.host, backlog: 4096 });
    try {
      await once(server, "listening");
    } catch (error) {
      // Nothing else has started yet: let go of what has, so the process can say why and exit.
      stopForwarding();
      jobEvents.stop();
      toolReloads.stop();
      backlog.stop();
      await realtime.close().catch(() => undefined);
      await queues.close().catch(() => undefined);
      await database.close().catch(() => undefined);
      throw listenStartError(config.host, config.port, error);
    }
    const { port } = server.address() as AddressInfo;
    url = `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${port}`;
    if (config.port === 0) publicUrl = config.publicUrl.replace(/:0$/, `:${port}`);
  }
  // People's e-mail comes in where HTTP does (web roles); a port taken is a start-up error like PORT's.
  let smtpListener: SmtpListener | undefined;
  if (config.role !== "worker" && config.email?.listen) {
    const { listen, from } = config.email;
    const { smtpListenError, startSmtpListener } = await import("./channels/email/smtp-listener.js");
    try {
      smtpListener = await startSmtpListener({
        listen,
        domain: domainOf(from.address),
        commit: (raw) => commitEmail(ctx, raw),
        counted: (outcome) => metrics.emailsReceived.inc({ outcome }),
        log,
      });
    } catch (error) {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      stopForwarding();
      jobEvents.stop();
      toolReloads.stop();
      backlog.stop();
      await realtime.close().catch(() => undefined);
      await queues.close().catch(() => undefined);
      await database.close().catch(() => undefined);
      throw smtpListenError(listen.host, listen.port, error);
    }
  }

  let workers: Workers | undefined;
  let turnWorker: Worker | undefined;
  let webhookWorker: Worker | undefined;
  let emailWorker: Worker | undefined;
  let pushWorker: Worker | undefined;
  let sweeper: { stop(): Promise<void> } | undefined;
  let eventSender: { stop(): Promise<void> } | undefined;
  if (config.role !== "web") {
    workers = await startJobWorkers(ctx);
    turnWorker = startTurnWorker(ctx);
    webhookWorker = startWebhookWorker(ctx);
    if (config.email) emailWorker = startEmailWorker(ctx);
    pushWorker = startPushWorker(ctx);
    sweeper = startSweeper(ctx);
    if (config.events.endpoints.length > 0)
      eventSender = startEventSender({ ...ctx, events: config.events, sql: database.eventsSql });
  }
  ctx.mcp?.start();
  if (config.telegram && config.role !== "worker") setWebhookAtStart(config.telegram, log);
  // Each process watches its tool folder: a change is reloaded here, whichever process saw it first.
  if (config.toolsWatch) reloader.watch();
  log.info(
    {
      role: config.role,
      database: database.kind,
      migrations_applied: database.appliedMigrations.length,
      tools: tools.size,
      mcp_servers: mcpServers.servers.map((spec) => spec.name),
      agent: config.agent ? "http" : config.llm ? `llm (${modelLabel(config.llm)})` : "built-in composer",
      meta_accounts: config.meta.accounts.map((account) => `${account.channel}:${account.id}`),
      meta_webhooks: config.meta.appSecret ? "on" : "off (META_APP_SECRET)",
      telegram: telegramBanner(config.telegram),
      sms: config.sms
        ? `on (${config.sms.messagingServiceSid ? `Messaging Service ${config.sms.messagingServiceSid}` : config.sms.from.join(", ")})`
        : "off (TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_FROM)",
      email: config.email
        ? `on (from ${config.email.from.address} via ${smtpLabel(config.email.smtpUrl)}; ${
            smtpListener
              ? `receiving on SMTP port ${smtpListener.port}${config.email.listen?.tls ? " with STARTTLS" : ""}`
              : config.role === "worker"
                ? "receiving on the web processes"
                : "not receiving (EMAIL_SMTP_PORT)"
          })`
        : "off (SMTP_URL, EMAIL_FROM)",
      events: config.events.endpoints.length > 0 ? `${config.events.endpoints.length} endpoint(s)` : "off",
      web_push: config.push.webPush ? "on" : "off (VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY)",
      fcm: config.push.fcm
        ? `on (project ${config.push.fcm.account.projectId})`
        : "off (FCM_SERVICE_ACCOUNT or GOOGLE_APPLICATION_CREDENTIALS)",
      url,
    },
    "hub started",
  );

  return {
    ctx,
    url,
    ...(smtpListener ? { smtpPort: smtpListener.port } : {}),
    database,
    async stop() {
      // Stop accepting, send this process's sockets elsewhere, let in-flight requests and turns finish for
      // a bounded time (turns still need the adapter and Redis), then close the rest. A turn cut short is
      // safe: its inputs stay pending until a reply commits, and its schedule is handed off.
      // Requests waiting for a job answer now, with the job as it is.
      await jobWaiters.close();
      if (server) {
        const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
        const dropped = realtime.dropLocalConnections();
        server.closeIdleConnections();
        await boundedWait(closed, DRAIN_HTTP_MS, () => server!.closeAllConnections());
        await dropped;
      }
      await smtpListener?.stop();
      await sweeper?.stop();
      await eventSender?.stop();
      await ctx.mcp?.stop();
      const queueWorkers = [workers, turnWorker, webhookWorker, emailWorker, pushWorker];
      await boundedWait(
        Promise.all(queueWorkers.map((worker) => worker?.close())),
        DRAIN_WORK_MS,
        // Let go of what still runs (and of a Redis that is gone): another process takes the jobs up.
        () => void Promise.all(queueWorkers.map((worker) => worker?.close(true))).catch(() => undefined),
      );
      // Turns running here get the same time to finish; whatever this process still holds then is handed to
      // the queue, where another process (or this one, restarted) takes it up at once.
      await boundedWait(ctx.turns.drain(), DRAIN_WORK_MS, () => undefined);
      await boundedWait(ctx.turns.handOffAll(), STOP_WAIT_MS, () => undefined);
      stopForwarding();
      stopWidgetForwarding();
      stopCatchUp();
      jobEvents.stop();
      reloader.stop();
      toolReloads.stop();
      backlog.stop();
      await realtime.close();
      await boundedWait(queues.close(), STOP_WAIT_MS, () => queues.redis.disconnect());
      await database.close();
    },
  };
}
