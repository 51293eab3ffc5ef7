// Untrusted JSON is inspected before anything else reads it. PostgreSQL cannot store a NUL character or
// a lone UTF-16 surrogate (`"\ud800"`) in text or jsonb, and a deeply nested body would overflow any
// recursive walk: each is a client's mistake, to be answered with a 400 naming the field rather than
// failing later as if the store were down (a 503 that clients retry for ever).
// Bodies that carry a result or Meta's events are not refused for a stray character (refusing would lose
// them): there NUL and lone surrogates become U+FFFD, the replacement character.
import type { NextFunction, Request, Response } from "express";
import { HubError, type ErrorDetail } from "../errors.js";

/** Deeper than any real request, result or webhook; shallow enough for every recursive reader after this. */
export const MAX_JSON_DEPTH = 64;

export type JsonFlaw = "depth" | "nul" | "surrogate";

export interface JsonProblem extends ErrorDetail {
  flaw: JsonFlaw;
}

const FLAW_MESSAGE: Record<JsonFlaw, string> = {
  depth: `is nested deeper than ${MAX_JSON_DEPTH} levels`,
  nul: "contains a NUL character",
  surrogate: "contains a lone UTF-16 surrogate (not valid Unicode)",
};

function stringFlaw(text: string): JsonFlaw | undefined {
  if (text.includes("\u0000")) return "nul";
  if (!text.isWellFormed()) return "surrogate";
  return undefined;
}

const join = (path: string, key: string | number) => (path ? `${path}.${key}` : String(key));

/**
 * The first problem in a parsed JSON value, with the path of the field that has it. Iterative, so a
 * hostile depth never reaches the call stack. `ignore` skips flaws the caller will repair instead.
 */
export function inspectJson(value: unknown, ignore: readonly JsonFlaw[] = []): JsonProblem | undefined {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: "", depth: 0 }];
  const problem = (flaw: JsonFlaw, path: string): JsonProblem => ({
    flaw,
    field: path || "(body)",
    message: FLAW_MESSAGE[flaw],
  });
  while (stack.length > 0) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === "string") {
      const flaw = stringFlaw(current);
      if (flaw && !ignore.includes(flaw)) return problem(flaw, path);
      continue;
    }
    if (current === null || typeof current !== "object") continue;
    if (depth >= MAX_JSON_DEPTH) return problem("depth", path);
    const entries: [string | number, unknown][] = Array.isArray(current)
      ? current.map((item, index) => [index, item])
      : Object.entries(current);
    for (const [key, item] of entries) {
      if (typeof key === "string") {
        const flaw = stringFlaw(key);
        if (flaw && !ignore.includes(flaw)) return problem(flaw, join(path, key));
      }
      stack.push({ value: item, path: join(path, key), depth: depth + 1 });
    }
  }
  return undefined;
}

const repairString = (text: string) => text.replaceAll("\u0000", "\uFFFD").toWellFormed();

/** NUL and lone surrogates replaced by U+FFFD. Call on a value `inspectJson` found no deeper than the limit. */
export function repairJson(value: unknown): unknown {
  if (typeof value === "string") return repairString(value);
  if (Array.isArray(value)) return value.map(repairJson);
  if (value && typeof value === "object") {
    // defineProperty-style copy: a "__proto__" key stays a plain key, as JSON.parse made it.
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(copy, repairString(key), {
        value: repairJson(item),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return copy;
  }
  return value;
}

function refuse(problem: JsonProblem, code: string): HubError {
  const { flaw: _flaw, ...detail } = problem;
  return new HubError(400, code, `${detail.field} ${detail.message}`, [detail]);
}

/** Refuses a body or query string that is too deep or holds a NUL or a lone surrogate (client requests). */
export function guardJson(code = "invalid_request") {
  return (req: Request, _res: Response, next: NextFunction) => {
    const problem = inspectJson(req.body) ?? inspectJson(req.query);
    next(problem ? refuse(problem, code) : undefined);
  };
}

/**
 * For bodies that must not be lost to a stray character (results, Meta's events): too deep is refused,
 * NUL and lone surrogates are repaired in place.
 */
export function repairOrRefuse(value: unknown, code = "invalid_body"): unknown {
  const tooDeep = inspectJson(value, ["nul", "surrogate"]);
  if (tooDeep) throw refuse(tooDeep, code);
  return inspectJson(value) ? repairJson(value) : value;
}

/** Express middleware form of `repairOrRefuse` for a parsed JSON body. */
export function repairBody(code = "invalid_body") {
  return (req: Request, _res: Response, next: NextFunction) => {
    try {
      req.body = repairOrRefuse(req.body, code);
      next();
    } catch (error) {
      next(error);
    }
  };
}
