// zod at the edge: a failed parse becomes a 400 naming each field.
import { z } from "zod";
import { HubError } from "../errors.js";

export function parseInput<S extends z.ZodType>(schema: S, value: unknown, code = "invalid_request"): z.output<S> {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const details = parsed.error.issues.flatMap((issue) => {
    const at = issue.path.map(String).join(".");
    // A strict object's unknown fields: each named, rather than the object that holds them.
    if (issue.code === "unrecognized_keys")
      return issue.keys.map((key) => ({ field: at ? `${at}.${key}` : key, message: "unknown field" }));
    return [{ field: at || "(body)", message: issue.message }];
  });
  throw new HubError(400, code, `invalid ${details.map((detail) => detail.field).join(", ")}`, details);
}

/** A human agent as the console names them: who took over, replied or cancelled. */
export const humanAgentBody = z.object({
  id: z.string().trim().min(1).max(100),
  name: z.string().trim().min(1).max(200),
});
