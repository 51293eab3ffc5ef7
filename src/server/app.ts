// The express app: routes and error mapping, nothing else.
import { fileURLToPath } from "node:url";
import express, { type Express, type RequestHandler } from "express";
import helmet from "helmet";
import type { HubContext } from "../context.js";
import { HubError } from "../errors.js";
import { errorHandler } from "./error-handler.js";
import { requireBearer } from "./auth.js";
import { guardJson } from "./json-guard.js";
import { callbackRoutes } from "./routes/callbacks.js";
import { healthRoutes } from "./routes/health.js";
import { v1Routes } from "./routes/v1.js";
import { consoleRoutes } from "./routes/console.js";
import { CONSOLE_EVENTS_MODULE_PATH, consoleEventsModule } from "../console/console-events-module.js";
import { teamRoutes } from "./routes/team.js";
import { noteRoutes } from "./routes/notes.js";
import { erasureRoutes } from "./routes/erasure.js";
import { personReachRoutes } from "./routes/person-reach.js";
import { widgetRoutes } from "./routes/widget.js";
import { widgetUploadRoutes } from "./routes/widget-uploads.js";
import { metaWebhookRoutes } from "./routes/meta-webhooks.js";
import { telegramWebhookRoutes } from "./routes/telegram-webhook.js";
import { twilioWebhookRoutes } from "./routes/twilio-webhooks.js";
import { mediaRoutes } from "./routes/media.js";
import { demoBackend } from "../demo/demo-backend.js";
import { DEMO_TOOL } from "../agent/demo-agent.js";
import { openApiDocument } from "./openapi.js";

const webDir = fileURLToPath(new URL("../../web/", import.meta.url));

export function createApp(ctx: HubContext): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", ctx.config.trustProxy);
  // No ETag on JSON answers: nothing here is fetched conditionally, and hashing every body cost CPU on every
  // callback (static files keep their own).
  app.set("etag", false);
  // Machines' endpoints (tool backends' callbacks, Meta's webhooks) answer JSON to servers, not pages: the
  // browser policies below mean nothing there, and setting them on every callback was about 5 % of the hub's
  // CPU under load. They still say their JSON is JSON.
  const nosniff: RequestHandler = (_req, res, next) => {
    res.setHeader("X-Content-Type-Options", "nosniff");
    next();
  };
  app.use("/callbacks", nosniff, callbackRoutes(ctx));
  app.use("/webhooks/meta", nosniff, metaWebhookRoutes(ctx));
  app.use("/webhooks/telegram", nosniff, telegramWebhookRoutes(ctx));
  app.use("/webhooks/twilio", nosniff, twilioWebhookRoutes(ctx));
  app.use(
    helmet({
      contentSecurityPolicy: {
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'", "'unsafe-inline'"],
          // Files a message carries are links the person's browser fetches (src/conversations/attachments.ts).
          imgSrc: ["'self'", "data:", "https:", ...(ctx.config.production ? [] : ["http:"])],
          connectSrc: ["'self'"],
          objectSrc: ["'none'"],
          baseUri: ["'self'"],
          formAction: ["'self'"],
          // The console acts with a key it keeps in the page: no other site may frame it (clickjacking).
          frameAncestors: ["'none'"],
        },
      },
      // widget.js and widget.css are loaded by the sites that embed the widget.
      crossOriginResourcePolicy: { policy: "cross-origin" },
    }),
  );
  app.use(healthRoutes(ctx));
  app.use("/media", mediaRoutes(ctx));
  // Built once: it depends only on the code and PUBLIC_URL. Public, like any API reference.
  const openApi = openApiDocument(ctx.config.publicUrl);
  app.get("/v1/openapi.json", (_req, res) => res.json(openApi));
  // The key before the body: a request without one is refused before its body is read or walked.
  const { hubApiKey, consoleApiKey } = ctx.config.secrets;
  app.use(
    "/v1",
    requireBearer({ agent: hubApiKey, human: consoleApiKey }, ctx.keyFailures, ctx.members),
    express.json({ limit: "1mb" }),
    guardJson(),
    consoleRoutes(ctx),
    teamRoutes(ctx),
    noteRoutes(ctx),
    erasureRoutes(ctx),
    personReachRoutes(ctx),
    v1Routes(ctx),
  );
  // Before /widget's JSON parser: an upload's body is the file itself.
  app.use("/widget/uploads", widgetUploadRoutes(ctx));
  app.use("/widget", express.json({ limit: "64kb" }), guardJson(), widgetRoutes(ctx));
  if (ctx.config.demo.enabled) {
    app.use(
      "/demo-backend",
      express.json(),
      demoBackend({
        delayMs: ctx.config.demo.delayMs,
        log: ctx.log,
        callbackBase: ctx.publicUrl,
        key: ctx.env("DEMO_BACKEND_KEY") ?? "",
      }),
    );
    app.get("/", (_req, res) => res.redirect("/demo"));
  }
  // The demo page offers the demo search; with the team's own agent runtime (AGENT_URL), or no demo tool to
  // search with, /demo is a plain chat page.
  const demoPage = !ctx.config.agent && ctx.config.demo.enabled && ctx.tools.has(DEMO_TOOL);
  app.get("/demo", (_req, res) => res.sendFile(demoPage ? "demo.html" : "chat.html", { root: webDir }));
  app.get("/console", (_req, res) => res.sendFile("console.html", { root: webDir }));
  // The console's modules are files in web/console/; the event names are generated from the hub's own list.
  const eventsModule = consoleEventsModule();
  app.get(CONSOLE_EVENTS_MODULE_PATH, (_req, res) => {
    res.type("text/javascript").set("Cache-Control", "no-cache").send(eventsModule);
  });
  app.use(express.static(webDir, { index: false, maxAge: "5m" }));
  app.use((_req, _res, next) => next(new HubError(404, "not_found", "no such route")));
  app.use(errorHandler(ctx.log));
  return app;
}
