// Maps whatever a route threw to a JSON error: HubError as given, body-parser's errors as 4xx, the rest
// as a plain 500 without a stack trace.
import type { NextFunction, Request, Response } from "express";
import { isStoreUnavailable } from "../db/store-unavailable.js";
import { HubError, UnavailableError } from "../errors.js";
import { errorKey, throttledLog } from "../log-throttle.js";
import type { Logger } from "../logger.js";

interface BodyParserError {
  type?: string;
  status?: number;
}

export function errorHandler(log: Logger) {
  const logUnavailable = throttledLog(log, "warn");
  return (thrown: unknown, req: Request, res: Response, _next: NextFunction) => {
    let error = thrown;
    if (!(error instanceof HubError) && isStoreUnavailable(error)) error = new UnavailableError("store", error);
    if (error instanceof UnavailableError) {
      logUnavailable(
        `${error.code}:${errorKey(error.cause)}`,
        { err: error.cause, method: req.method, route: req.route?.path },
        "request refused: a dependency is unavailable",
      );
    }
    if (error instanceof HubError) {
      const body = {
        error: {
          code: error.code,
          message: error.message,
          ...(error.details ? { details: error.details } : {}),
          ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
        },
      };
      if (error.retryAfterMs !== undefined) res.set("Retry-After", String(Math.ceil(error.retryAfterMs / 1000)));
      res.status(error.status).json(body);
      return;
    }
    const parserError = error as BodyParserError;
    if (parserError.type === "entity.parse.failed") {
      res.status(400).json({
        error: {
          code: "invalid_body",
          message: "the body is not valid JSON",
          details: [{ field: "(body)", message: "not valid JSON" }],
        },
      });
      return;
    }
    if (parserError.type === "entity.too.large") {
      const limit = (error as { limit?: number }).limit;
      const size = limit ? `${Math.round(limit / 1024)} KiB` : "the limit";
      res.status(413).json({ error: { code: "payload_too_large", message: `the body is larger than ${size}` } });
      return;
    }
    if (parserError.status && parserError.status >= 400 && parserError.status < 500) {
      res.status(parserError.status).json({ error: { code: "bad_request", message: "the request could not be read" } });
      return;
    }
    log.error({ err: error, method: req.method, route: req.route?.path }, "unhandled error");
    res.status(500).json({ error: { code: "internal", message: "internal error" } });
  };
}
