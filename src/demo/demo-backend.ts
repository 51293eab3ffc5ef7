// A tool backend for the demo tool, written with the tool-backend library (packages/tool-backend) as
// docs/tool-backends.md shows: accept with 202, do the work later, post progress and the result with the
// library's retries, honour DELETE to cancel.
// It searches a small catalogue of sample therapists for the query, and says plainly that it is a demo.
// Its timers live in this process: a restart forgets running demo jobs (their timeouts still end them).
import { createHmac, createHash, timingSafeEqual } from "node:crypto";
import { Router, type NextFunction, type Request, type Response } from "express";
import type { Logger } from "../logger.js";
import { acceptJob, cancelJob } from "../../packages/tool-backend/index.js";

// Sample data: what the demo searches. Each therapist's words are what a query is matched against; `where` reads
// after "sees patients" and `fee` is per session.
const CATALOGUE = [
  {
    name: "Ana Rojas",
    approach: "cognitive behavioural therapy for anxiety and panic",
    where: "in Ñuñoa on Tuesdays and Thursdays",
    fee: "CLP 35,000",
  },
  {
    name: "Pedro Soto",
    approach: "mindfulness for stress, anxiety and burnout",
    where: "online or in Providencia",
    fee: "CLP 30,000",
  },
  {
    name: "Carla Méndez",
    approach: "psychodynamic therapy for depression and grief",
    where: "in Las Condes in the evenings",
    fee: "CLP 45,000",
  },
  {
    name: "Javiera Fuentes",
    approach: "couples and family therapy",
    where: "in Providencia or online on Saturdays",
    fee: "CLP 40,000",
  },
  {
    name: "Tomás Herrera",
    approach: "therapy for children and teenagers (kids and teens)",
    where: "in Maipú in the afternoons",
    fee: "CLP 28,000",
  },
  {
    name: "Valentina Ruiz",
    approach: "trauma therapy (EMDR)",
    where: "in Santiago Centro in the mornings",
    fee: "CLP 38,000",
  },
];
type Therapist = (typeof CATALOGUE)[number];
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

const isIn = (therapist: Therapist, place: string) => plain(therapist.where).includes(plain(place));
const isOnline = (therapist: Therapist) => therapist.where.includes("online");

/**
 * The therapists matching the most of the query's words (none when nothing matches); with a place, those who see
 * patients there first, then those who see them online.
 */
export function searchCatalogue(query: string, place = ""): Therapist[] {
  const terms = termsOf(query);
  const scored = CATALOGUE.map((therapist) => {
    const words = plain(`${therapist.name} ${therapist.approach} ${therapist.where}`);
    const score = terms.filter(
      (term) => words.includes(term) || (term.endsWith("s") && words.includes(term.slice(0, -1))),
    ).length;
    return { therapist, score };
  });
  const best = Math.max(0, ...scored.map((entry) => entry.score));
  const found = best === 0 ? [] : scored.filter((entry) => entry.score === best).map((entry) => entry.therapist);
  if (!place) return found;
  const rank = (therapist: Therapist) => (isIn(therapist, place) ? 0 : isOnline(therapist) ? 1 : 2);
  return found.sort((a, b) => rank(a) - rank(b));
}

/** The demo's result: what matches the query, or — said plainly — sample data when nothing was asked for. */
export function demoResult(query: string, place = ""): { message: string; data: { matches: Therapist[] } } {
  if (termsOf(query).length === 0) {
    return {
      message: `This is a demo, so here is sample data: ${SAMPLE_SIZE} of the ${CATALOGUE.length} therapists in its catalogue. Tell me what to look for (${EXAMPLES}) and I'll search for that.`,
      data: { matches: CATALOGUE.slice(0, SAMPLE_SIZE) },
    };
  }
  const found = searchCatalogue(query, place);
  if (found.length === 0) {
    return {
      message: `Nothing in the demo catalogue matches "${query}": it holds ${CATALOGUE.length} sample therapists in Santiago. Try ${EXAMPLES}.`,
      data: { matches: [] },
    };
  }
  const count = found.length === 1 ? "1 match" : `${found.length} matches`;
  return {
    message: `I found ${count} for "${query}" in the demo catalogue (sample data)${place ? `, the nearest to ${place} first` : ""}.`,
    data: { matches: found },
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
        const place = typeof req.body?.place === "string" ? req.body.place : "";
        const step = Math.max(1, Math.floor(options.delayMs / 3));
        const near = place ? ` near ${place}` : "";
        const timers = [
          setTimeout(
            () => void job.progress(`Reviewing ${CATALOGUE.length} therapists${near}`, { notify: true }),
            step,
          ),
          setTimeout(() => {
            running.delete(job.id);
            void job.result(demoResult(query, place));
          }, options.delayMs),
        ];
        running.set(job.id, timers);
        options.log.info({ job_id: job.id }, "demo backend accepted a job");
        const seconds = Math.round(options.delayMs / 1000);
        return termsOf(query).length
          ? `Searching the demo catalogue for "${query}"${near}; this takes about ${seconds} seconds.`
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
