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

const templateComponents = z
  .array(
    z
      .object({
        type: z.string(),
        parameters: z.array(templateParameter).optional(),
      })
      .loose(),
  )
  .optional();

/** A template sent instead when Meta has paused, disabled or rejected the tool's own (no file header). */
export const fallbackTemplateSchema = z.strictObject({
  name: z.string().min(1),
  language: z.string().min(1),
  components: templateComponents,
});

export const whatsappTemplateSchema = z.strictObject({
  name: z.string().min(1),
  language: z.string().min(1),
  /** The template's header is a file: the result's first file of this kind goes with the template. */
  header: z.enum(["document", "image", "video"]).optional(),
  components: templateComponents,
  fallback: fallbackTemplateSchema.optional(),
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
    // A message to a running job (the person's follow-up): a key of `body` with no value takes its text.
    message: z
      .strictObject({
        method: httpMethod.pipe(z.enum(["POST", "PUT", "PATCH"])),
        path: urlPath.pipe(z.string().min(1)),
        body: z.record(z.string(), z.unknown()).optional(),
      })
      .optional(),
    whatsapp_template: whatsappTemplateSchema.optional(),
    // What a push notification says when the result waits with the chat closed (never the result itself).
    notify_text: z.string().trim().min(1).max(200).optional(),
    rerun: rerunSchema.optional(),
    deliver_within: spanSchema.optional(),
  }),
);

// A call of this tool waits for a yes before its backend hears of it (src/jobs/approval.ts): the person's, asked
// on their channel, or a team member's, in the console.
const durationSchema = z.string().transform((value, ctx) => {
  const parsed = parseDuration(value);
  if ("ms" in parsed) return parsed.ms;
  ctx.addIssue({ code: "custom", message: parsed.error });
  return z.NEVER;
});

export const toolFileSchema = z
  .strictObject({
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
    approval: z.enum(["person", "team"], { error: 'must be "person" or "team"' }).optional(),
    // What the person is asked, in plain words; the call's arguments follow it, quoted as data.
    approval_text: z.string().trim().min(1).max(300).optional(),
    approval_timeout: durationSchema.optional(),
  })
  .superRefine((file, ctx) => {
    // Only a background call can wait: a normal tool's caller expects its answer at once.
    if (file.approval && !file.async)
      ctx.addIssue({ code: "custom", path: ["approval"], message: "needs `async` (a call waits for the approval)" });
    for (const key of ["approval_text", "approval_timeout"] as const)
      if (file[key] !== undefined && !file.approval)
        ctx.addIssue({ code: "custom", path: [key], message: "only with `approval`" });
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
        /** The request that gives a running job a message (`async.message`); undefined: it takes none. */
        message: { method: string; path: string; body?: Record<string, unknown> | undefined } | undefined;
        template: WhatsappTemplate | undefined;
        /** The push notification's text for a result of this tool (`async.notify_text`). */
        notifyText: string | undefined;
        /** How many times a lost job is started again (0: never). */
        rerunTimes: number;
        /** How long a result may wait to be given before it expires; undefined: it never does. */
        deliverWithinMs: number | undefined;
      }
    | undefined;
  /** Who must say yes before the backend is called; undefined: nobody, the call starts at once. */
  approval:
    | {
        by: "person" | "team";
        /** `approval_text`, else the tool's description, is what the person is asked. */
        text: string | undefined;
        /** How long the call waits for the answer before it is refused (`approval_timeout`). */
        timeoutMs: number;
      }
    | undefined;
  /** The HTTP backend a tool file calls; undefined for an MCP server's tool (`mcp`). */
  request: ToolFile["request"] | undefined;
  /** An MCP server's tool (src/mcp/): called through the server, not by `request`. */
  mcp?: McpToolSource | undefined;
  respond: Record<string, string>;
  /** Checks arguments against `parameters`; returns the problems, or [] when they fit. */
  validateArguments(args: unknown): { path: string; message: string }[];
}

/** Where an MCP server's tool lives, and how the hub calls it (src/mcp/mcp-call.ts). */
export interface McpToolSource {
  /** The server's name (its file's name in tools/mcp/). */
  server: string;
  /** The tool's name on the server (the hub's may carry a prefix). */
  tool: string;
  /** Whether the server runs the call as a task (MCP Tasks): `required`, `optional`, or never. */
  taskSupport: "required" | "optional" | "forbidden";
  /** How long a turn waits for a plain call before it becomes a job. */
  syncBudgetMs: number;
  /** Progress reaches the person as a message, not only the live indicator. */
  notifyProgress: boolean;
  /** The argument the person's verified identifier fills (the model never sees or sets it). */
  personArgument?: string | undefined;
}
