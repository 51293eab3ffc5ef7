import type { Prisma } from "../generated/prisma/client.js";

/** A value as Prisma stores it in a JSON column (undefined members dropped, as JSON would). */
export function asJson(value: unknown): Prisma.InputJsonValue {
  return JSON.parse(JSON.stringify(value ?? null)) as Prisma.InputJsonValue;
}
