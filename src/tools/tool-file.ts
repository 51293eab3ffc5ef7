// The shape of a tools/*.yml file (docs/tool-files.md), validated with zod so a problem names its key.
import { z } from "zod";
import { parseDuration, parseSpan } from "./duration.js";
import { jsonPathProblem } from "./json-path.js";

const httpMethod = z
  .string()
  .transform((value) => value.toUpperCase())
  .pipe(z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]));

const jsonPath = z.string().superRefine((value, ctx) => {
  const problem = jsonPathProblem(value);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/** A path joined to `base_url`: from its root, so that what is sent is what the file says. */
const urlPath = z.string().refine((value) => value === "" || value.startsWith("/"), {
  message: 'must start with "/" (e.g. /vatio/match)',
});

const templateParameter = z.union([
  z.string(),
  z.object({ type: z.string().default("text"), text: z.string() }).loose(),
]);

export const whatsappTemplateSchema = z.strictObject({
  name: z.string().min(1),
  language: z.string().min(1),
  /** The template's header is a file: the result's first file of this kind goes with the template. */
  header: z.enum(["document", "image", "video"]).optional(),
  components: z
    .array(
      z
        .object({
          type: z.string(),
          parameters: z.array(templateParameter).optional(),
        })
        .loose(),
    )
    .optional(),
});

// Only for idempotent tools (reads, searches, reports): a job its backend lost is started again, `times` times.
const times = "must be 1, 2 or 3";
const rerunSchema = z.strictObject({ times: z.number({ error: times }).int(times).min(1, times).max(3, times) });

// How long a result may wait to be given (`deliver_within`); past it, it expires instead. In milliseconds.
const spanSchema = z.string().transform((value, ctx) => {
  const parsed = parseSpan(value);
  if ("ms" in parsed) return parsed.ms;
  ctx.addIssue({ code: "custom", message: parsed.error });
  return z.NEVER;
});

// `async: true` is the full form with every default; `async: false` is a normal tool.
const asyncSchema = z.preprocess(
  (value) => (value === true ? {} : value === false ? undefined : value),
  z.strictObject({
    timeout: z
      .string()
      .optional()
      .superRefine((value, ctx) => {
        if (value === undefined) return;
        const parsed = parseDuration(value);
        if ("error" in parsed) ctx.addIssue({ code: "custom", message: parsed.error });
      }),
    cancel: z.strictObject({ method: httpMethod, path: urlPath.pipe(z.string().min(1)) }).optional(),
    whatsapp_template: whatsappTemplateSchema.optional(),
    // What a push notification says when the result waits with the chat closed (never the result itself).
    notify_text: z.string().trim().min(1).max(200).optional(),
    rerun: rerunSchema.optional(),
    deliver_within: spanSchema.optional(),
  }),
);

export const toolFileSchema = z.strictObject({
  description: z.string().min(1),
  when_to_use: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()).default({ type: "object", properties: {} }),
  // Accepted for compatibility with tool files written for the agent platform; the hub does not use it.
  access: z.unknown().optional(),
  async: asyncSchema.optional(),
  request: z.strictObject({
    method: httpMethod.default("POST"),
    base_url: z.string().min(1),
    path: urlPath.default(""),
    headers: z.record(z.string(), z.string()).default({}),
    // A key with no value takes the tool-call argument of the same name.
    body: z.record(z.string(), z.unknown()).optional(),
  }),
  respond: z.strictObject({ data: z.record(z.string(), jsonPath).default({}) }).optional(),
});

export type ToolFile = z.output<typeof toolFileSchema>;
export type WhatsappTemplate = z.output<typeof whatsappTemplateSchema>;

/** A loaded, validated tool. */
export interface Tool {
  name: string;
  /** A hash of the definition (tool-definition.ts): what a job records, to tell a reloaded tool from its own. */
  version: string;
  file: string;
  description: string;
  whenToUse: string | undefined;
  parameters: Record<string, unknown>;
  async:
    | {
        timeoutMs: number;
        cancel: { method: string; path: string } | undefined;
        template: WhatsappTemplate | undefined;
        /** The push notification's text for a result of this tool (`async.notify_text`). */
        notifyText: string | undefined;
        /** How many times a lost job is started again (0: never). */
        rerunTimes: number;
        /** How long a result may wait to be given before it expires; undefined: it never does. */
        deliverWithinMs: number | undefined;
      }
    | undefined;
  request: ToolFile["request"];
  respond: Record<string, string>;
  /** Checks arguments against `parameters`; returns the problems, or [] when they fit. */
  validateArguments(args: unknown): { path: string; message: string }[];
}
