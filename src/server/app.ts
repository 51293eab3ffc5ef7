// The express app: routes and error mapping, nothing else.
import express, { type Express } from "express";
import type { HubContext } from "../context.js";
import { HubError } from "../errors.js";
import { errorHandler } from "./error-handler.js";
import { callbackRoutes } from "./routes/callbacks.js";
import { healthRoutes } from "./routes/health.js";
import { v1Routes } from "./routes/v1.js";

export function createApp(ctx: HubContext): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", true);
  app.use(healthRoutes(ctx));
  app.use("/callbacks", callbackRoutes(ctx));
  app.use("/v1", express.json({ limit: "1mb" }), v1Routes(ctx));
  app.use((_req, _res, next) => next(new HubError(404, "not_found", "no such route")));
  app.use(errorHandler(ctx.log));
  return app;
}
