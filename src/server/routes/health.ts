// Liveness and readiness.
import { Router, type RequestHandler } from "express";
import { METRICS_CLOSED } from "../../config.js";
import type { HubContext } from "../../context.js";
import { HubError } from "../../errors.js";
import { requireBearer } from "../auth.js";
import { unusableTemplates } from "../../delivery/template-status.js";

/** How long /readyz waits for the database's answer (it answers within a second). */
const READY_DATABASE_WAIT_MS = 700;

export function healthRoutes(ctx: HubContext): Router {
  const router = Router();
  router.get("/healthz", (_req, res) => {
    res.json({ ok: true });
  });
  const { metricsToken, metricsPublic } = ctx.config;
  // Metrics name conversations' channels, tools and error codes: in production only the operator's scraper
  // reads them, unless the operator opens them on purpose.
  const closed: RequestHandler = (_req, _res, next) =>
    next(new HubError(401, "unauthorized", `/metrics is closed: ${METRICS_CLOSED}`));
  router.get(
    "/metrics",
    metricsToken
      ? requireBearer({ agent: metricsToken }, ctx.keyFailures)
      : metricsPublic
        ? (_req, _res, next) => next()
        : closed,
    async (_req, res) => {
      res.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    },
  );
  // Answers within a second whatever waits: a database that does not answer in time is not ready (its pool
  // may be held by work that waits for Redis); Redis is ready when every connection of this process is.
  router.get("/readyz", async (_req, res) => {
    let timer: NodeJS.Timeout | undefined;
    const database = await Promise.race([
      ctx.sql.query("SELECT 1").then(
        () => true,
        () => false,
      ),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), READY_DATABASE_WAIT_MS))),
    ]);
    clearTimeout(timer);
    const waiting = ctx.queues.notReady();
    const redis = waiting.length === 0;
    // After a reload of the tool files: the tools in force, and a refused reload's problems — the process
    // stays ready (the previous tools serve).
    const reload = ctx.lastToolReload();
    const tools = reload && {
      count: ctx.tools.size,
      last_reload: reload.outcome,
      reloaded_at: reload.at,
      ...(reload.outcome === "refused" ? { problems: reload.problems } : {}),
    };
    // WhatsApp templates Meta says cannot be sent now, and why: what would use them waits (or goes with a
    // fallback); the hub stays ready.
    const templates =
      database && ctx.config.meta.accounts.some((account) => account.channel === "whatsapp")
        ? await unusableTemplates(ctx.sql).catch(() => undefined)
        : undefined;
    res.status(database && redis ? 200 : 503).json({
      ok: database && redis,
      database,
      redis,
      ...(redis ? {} : { redis_waiting: waiting }),
      ...(tools ? { tools } : {}),
      // Each MCP server as this process sees it: a server that is down leaves the hub ready (its calls fail
      // with why), and says so here.
      ...(ctx.mcp ? { mcp_servers: ctx.mcp.status() } : {}),
      ...(templates
        ? {
            whatsapp_templates: {
              unusable: templates.map((template) => ({
                name: template.name,
                language: template.language,
                status: template.status,
                reason: template.reason,
                since: template.updatedAt.toISOString(),
              })),
            },
          }
        : {}),
    });
  });
  return router;
}
