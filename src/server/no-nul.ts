// PostgreSQL cannot store the NUL character in text or JSON: a body that holds one is refused with 400
// naming where, rather than failing in the database as if the store were down.
import type { NextFunction, Request, Response } from "express";
import { HubError } from "../errors.js";

/** The path of the first string holding a NUL character, or undefined. */
export function findNul(value: unknown, path = ""): string | undefined {
  if (typeof value === "string") return value.includes("\u0000") ? path || "(body)" : undefined;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = findNul(item, path ? `${path}.${index}` : String(index));
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      const found = findNul(key, path || "(body)") ?? findNul(item, path ? `${path}.${key}` : key);
      if (found) return found;
    }
  }
  return undefined;
}

export function rejectNul(code = "invalid_request") {
  return (req: Request, _res: Response, next: NextFunction) => {
    const field = findNul(req.body) ?? findNul(req.query);
    if (!field) return next();
    next(
      new HubError(400, code, `${field} contains a NUL character`, [{ field, message: "contains a NUL character" }]),
    );
  };
}

/** Removes NUL characters (for payloads from Meta, which are signed and must not be refused for it). */
export function stripNul(value: unknown): unknown {
  if (typeof value === "string") return value.replaceAll("\u0000", "");
  if (Array.isArray(value)) return value.map(stripNul);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key.replaceAll("\u0000", ""), stripNul(item)]),
    );
  }
  return value;
}
