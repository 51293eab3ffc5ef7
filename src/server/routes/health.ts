// Liveness and readiness.
import { Router } from "express";
import type { HubContext } from "../../context.js";
import { requireBearer } from "../auth.js";

export function healthRoutes(ctx: HubContext): Router {
  const router = Router();
  router.get("/healthz", (_req, res) => {
    res.json({ ok: true });
  });
  const { metricsToken } = ctx.config;
  router.get(
    "/metrics",
    metricsToken ? requireBearer({ agent: metricsToken }) : (_req, _res, next) => next(),
    async (_req, res) => {
      res.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    },
  );
  router.get("/readyz", async (_req, res) => {
    const database = await ctx.sql.query("SELECT 1").then(
      () => true,
      () => false,
    );
    const redis = ctx.queues.isReady();
    res.status(database && redis ? 200 : 503).json({ ok: database && redis, database, redis });
  });
  return router;
}
