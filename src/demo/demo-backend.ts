// A tool backend for the demo tool, written the way the tool-backend guide says: accept with 202, do the
// work later, post progress and the result to the callback URL with retries, honour DELETE to cancel.
// Its timers live in this process: a restart forgets running demo jobs (their timeouts still end them).
import { createHmac, createHash, timingSafeEqual } from "node:crypto";
import { Router, type NextFunction, type Request, type Response } from "express";
import type { Logger } from "../logger.js";

const CATALOGUE = [
  { name: "Ana Rojas", approach: "cognitive behavioural therapy", where: "Ñuñoa, Tuesdays and Thursdays" },
  { name: "Pedro Soto", approach: "mindfulness", where: "online or in Providencia" },
  { name: "Carla Méndez", approach: "psychodynamic therapy", where: "Las Condes, evenings" },
];

async function postCallback(url: string, body: unknown): Promise<void> {
  for (let attempt = 1; attempt <= 5; attempt++) {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }).catch(() => null);
    if (res && res.status < 500 && res.status !== 429) return;
    await new Promise((resolve) => setTimeout(resolve, attempt * 2000));
  }
}

/** The key the demo backend asks for, derived from the hub's secret (the demo tool file sends it). */
export function demoBackendKey(secret: string): string {
  return createHmac("sha256", secret).update("demo-backend").digest("base64url");
}

const digest = (value: string) => createHash("sha256").update(value).digest();

export function demoBackend(options: {
  delayMs: number;
  log: Logger;
  callbackBase: () => string;
  key: string;
}): Router {
  const router = Router();
  const running = new Map<string, NodeJS.Timeout[]>();
  // Like any tool backend, it answers only the hub (its key travels in the tool file's headers).
  router.use((req: Request, res: Response, next: NextFunction) => {
    const given = req.get("authorization") ?? "";
    if (!options.key || !timingSafeEqual(digest(given), digest(`Bearer ${options.key}`))) {
      return void res.status(401).json({ error: { code: "unauthorized", message: "missing or wrong key" } });
    }
    next();
  });

  router.post("/search", (req, res) => {
    const jobId = req.get("X-Vatio-Job-Id");
    const callbackUrl = req.get("X-Vatio-Callback-Url");
    const query = typeof req.body?.query === "string" ? req.body.query : "";
    if (!jobId || !callbackUrl) return void res.status(400).json({ error: "missing job headers" });
    // It posts only to this hub's own callbacks: never a relay for requests to anywhere else.
    if (!callbackUrl.startsWith(`${options.callbackBase()}/callbacks/`)) {
      return void res.status(400).json({ error: "the callback URL is not this hub's" });
    }
    const step = Math.max(1, Math.floor(options.delayMs / 3));
    const timers = [
      setTimeout(
        () => void postCallback(callbackUrl, { progress: `Reviewing ${CATALOGUE.length} therapists`, notify: true }),
        step,
      ),
      setTimeout(() => {
        running.delete(jobId);
        const matches = CATALOGUE.slice(0, 2).map((t) => `${t.name}: ${t.approach}, ${t.where}`);
        void postCallback(callbackUrl, {
          result: "ok",
          message: `I found ${matches.length} matches for "${query}".`,
          data: { matches },
        });
      }, options.delayMs),
    ];
    running.set(jobId, timers);
    options.log.info({ job_id: jobId }, "demo backend accepted a job");
    res.status(202).json({
      message: `Searching the demo catalogue; this takes about ${Math.round(options.delayMs / 1000)} seconds.`,
    });
  });

  router.delete("/jobs/:id", (req, res) => {
    for (const timer of running.get(req.params.id) ?? []) clearTimeout(timer);
    running.delete(req.params.id);
    res.json({ result: "ok", message: "Cancelled" });
  });

  return router;
}
