// The shape of a tools/mcp/<server>.yml file (docs/mcp.md): one MCP server the agent may use tools of, over
// Streamable HTTP (`url`) or stdio (`command`), validated with zod so that a problem names its key.
import { z } from "zod";
import { parseDuration, parseSpan } from "../tools/duration.js";
import { whatsappTemplateSchema } from "../tools/tool-file.js";

const duration = z.string().transform((value, ctx) => {
  const parsed = parseDuration(value);
  if ("ms" in parsed) return parsed.ms;
  ctx.addIssue({ code: "custom", message: parsed.error });
  return z.NEVER;
});

const span = z.string().transform((value, ctx) => {
  const parsed = parseSpan(value);
  if ("ms" in parsed) return parsed.ms;
  ctx.addIssue({ code: "custom", message: parsed.error });
  return z.NEVER;
});

const times = "must be 1, 2 or 3";

/** The hub's own settings for one of the server's tools, where they apply (as a tool file's `async`). */
export const mcpToolSettingsSchema = z.strictObject({
  // How long the call may run (a task, or a plain call past its sync budget) before it times out.
  timeout: duration.optional(),
  // How long the agent's turn waits for a plain call before it becomes a job the person hears of later ("0s":
  // every call is a job).
  sync_budget: z
    .string()
    .transform((value, ctx) => {
      if (/^0\s*(s|m|h)$/.test(value.trim())) return 0;
      const parsed = parseDuration(value);
      if ("ms" in parsed) return parsed.ms;
      ctx.addIssue({ code: "custom", message: parsed.error });
      return z.NEVER;
    })
    .optional(),
  whatsapp_template: whatsappTemplateSchema.optional(),
  notify_text: z.string().trim().min(1).max(200).optional(),
  deliver_within: span.optional(),
  rerun: z.strictObject({ times: z.number({ error: times }).int(times).min(1, times).max(3, times) }).optional(),
  // Progress the server reports reaches the person as a message (within the job's notify limit), not only
  // the live indicator.
  notify_progress: z.boolean().optional(),
  description: z.string().trim().min(1).optional(),
});

/** Where the person's verified identifier goes, so that the model never sets it (`$person.identifier`). */
export const personSchema = z
  .strictObject({
    argument: z.string().min(1).optional(),
    header: z.string().min(1).optional(),
  })
  .refine((person) => person.argument !== undefined || person.header !== undefined, {
    message: "names an `argument` or a `header`",
  });

const common = {
  description: z.string().optional(),
  // The server's tools' names in the hub: prefix + the tool's name (default: the server's name and `_`; "" for
  // none, when the server's names are the ones the agent knows).
  prefix: z
    .string()
    .regex(/^([a-zA-Z][a-zA-Z0-9_-]{0,31})?$/, 'letters, digits, _ or -, starting with a letter (or "" for none)')
    .optional(),
  // Which of the server's tools the agent may use: all of them, or these (by the server's names).
  tools: z.union([z.literal("all"), z.array(z.string().min(1)).min(1)]).default("all"),
  settings: z.record(z.string(), mcpToolSettingsSchema).default({}),
  person: personSchema.optional(),
  // How long connecting and a call's start may take.
  connect_timeout: duration.optional(),
};

export const mcpServerFileSchema = z.union(
  [
    z.strictObject({
      url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }),
      headers: z.record(z.string(), z.string()).default({}),
      // OAuth 2.1 client credentials, for a server that asks for them (RFC 6749 §4.4).
      oauth: z
        .strictObject({
          client_id: z.string().min(1),
          client_secret: z.string().min(1),
          scope: z.string().optional(),
          token_url: z.url().optional(),
        })
        .optional(),
      ...common,
    }),
    z.strictObject({
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      env: z.record(z.string(), z.string()).default({}),
      cwd: z.string().optional(),
      ...common,
    }),
  ],
  { error: "needs `url` (Streamable HTTP) or `command` (stdio), with the keys of that kind only" },
);

export type McpServerFile = z.output<typeof mcpServerFileSchema>;
export type McpToolSettings = z.output<typeof mcpToolSettingsSchema>;

/** A declared server, as the hub holds it (`$env.NAME` substituted where it connects). */
export type McpServerSpec = McpServerFile & {
  /** The server's name: its file's name. */
  name: string;
  /** Where it was declared, for problems (`tools/mcp/research.yml`). */
  file: string;
};
