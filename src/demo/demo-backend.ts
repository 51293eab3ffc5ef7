// A tool backend for the demo tool, written with the tool-backend library (packages/tool-backend) as
// docs/tool-backends.md shows: accept with 202, do the work later, post progress and the result with the
// library's retries, honour DELETE to cancel.
// It searches a small catalogue of sample therapists for the query, and says plainly that it is a demo.
// Its timers live in this process: a restart forgets running demo jobs (their timeouts still end them).
import { createHmac, createHash, timingSafeEqual } from "node:crypto";
import { Router, type NextFunction, type Request, type Response } from "express";
import type { Logger } from "../logger.js";
import { acceptJob, cancelJob } from "../../packages/tool-backend/index.js";

// Sample data: what the demo searches. Each therapist's words are what a query is matched against.
const CATALOGUE = [
  {
    name: "Ana Rojas",
    approach: "cognitive behavioural therapy for anxiety and panic",
    where: "Ñuñoa, Tuesdays and Thursdays",
  },
  { name: "Pedro Soto", approach: "mindfulness for stress and burnout", where: "online or in Providencia" },
  {
    name: "Carla Méndez",
    approach: "psychodynamic therapy for depression and grief",
    where: "Las Condes, evenings",
  },
  { name: "Javiera Fuentes", approach: "couples and family therapy", where: "Providencia or online, Saturdays" },
  {
    name: "Tomás Herrera",
    approach: "therapy for children and teenagers (kids and teens)",
    where: "Maipú, afternoons",
  },
  { name: "Valentina Ruiz", approach: "trauma therapy (EMDR)", where: "Santiago Centro, mornings" },
];
const SAMPLE_SIZE = 2;
const EXAMPLES = '"search for anxiety" or "search for couples therapy online"';

/** Words that say nothing about which therapist fits ("a good therapist for …"). */
const FILLER = new Set(
  "the and for with who near someone somebody need want looking good best any some help therapist therapists therapy psychologist psychologists session sessions".split(
    " ",
  ),
);

const plain = (text: string) => text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

/** The query's words that can tell therapists apart. */
function termsOf(query: string): string[] {
  return [...new Set(plain(query).split(/[^\p{L}\p{N}]+/u))].filter((word) => word.length >= 3 && !FILLER.has(word));
}

/** The therapists matching the most of the query's words (none when nothing matches). */
export function searchCatalogue(query: string): typeof CATALOGUE {
  const terms = termsOf(query);
  const scored = CATALOGUE.map((therapist) => {
    const words = plain(`${therapist.name} ${therapist.approach} ${therapist.where}`);
    const score = terms.filter(
      (term) => words.includes(term) || (term.endsWith("s") && words.includes(term.slice(0, -1))),
    ).length;
    return { therapist, score };
  });
  const best = Math.max(0, ...scored.map((entry) => entry.score));
  return best === 0 ? [] : scored.filter((entry) => entry.score === best).map((entry) => entry.therapist);
}

/** The demo's result: what matches the query, or — said plainly — sample data when nothing was asked for. */
export function demoResult(query: string): { message: string; data: { matches: string[] } } {
  const line = (t: (typeof CATALOGUE)[number]) => `${t.name}: ${t.approach}, ${t.where}`;
  if (termsOf(query).length === 0) {
    return {
      message: `This is a demo, so here is sample data: ${SAMPLE_SIZE} of the ${CATALOGUE.length} therapists in its catalogue. Tell me what to look for (${EXAMPLES}) and I'll search for that.`,
      data: { matches: CATALOGUE.slice(0, SAMPLE_SIZE).map(line) },
    };
  }
  const found = searchCatalogue(query);
  if (found.length === 0) {
    return {
      message: `Nothing in the demo catalogue matches "${query}": it holds ${CATALOGUE.length} sample therapists in Santiago. Try ${EXAMPLES}.`,
      data: { matches: [] },
    };
  }
  return {
    message: `I found ${found.length} ${found.length === 1 ? "match" : "matches"} for "${query}" in the demo catalogue (sample data).`,
    data: { matches: found.map(line) },
  };
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

  router.post(
    "/search",
    // It posts only to this hub's own callbacks: never a relay for requests to anywhere else.
    acceptJob<Request, Response>(
      (job, req) => {
        const query = typeof req.body?.query === "string" ? req.body.query : "";
        const step = Math.max(1, Math.floor(options.delayMs / 3));
        const timers = [
          setTimeout(() => void job.progress(`Reviewing ${CATALOGUE.length} therapists`, { notify: true }), step),
          setTimeout(() => {
            running.delete(job.id);
            void job.result(demoResult(query));
          }, options.delayMs),
        ];
        running.set(job.id, timers);
        options.log.info({ job_id: job.id }, "demo backend accepted a job");
        const seconds = Math.round(options.delayMs / 1000);
        return termsOf(query).length
          ? `Searching the demo catalogue for "${query}"; this takes about ${seconds} seconds.`
          : `Running the demo search on sample data; this takes about ${seconds} seconds.`;
      },
      { hubUrl: options.callbackBase },
    ),
  );

  router.delete(
    "/jobs/:id",
    cancelJob<Request, Response>((jobId) => {
      for (const timer of running.get(jobId) ?? []) clearTimeout(timer);
      // A demo job this process no longer holds (it restarted) was lost anyway: cancelling it is done.
      running.delete(jobId);
    }),
  );

  return router;
}
