// The hub-wide WhatsApp template (WA_TEMPLATE_*), for tools that name none of their own; and the one sent
// when Meta has paused, disabled or rejected the template a result would use (WHATSAPP_FALLBACK_TEMPLATE).
import { fallbackTemplateSchema, whatsappTemplateSchema, type WhatsappTemplate } from "../tools/tool-file.js";
import type { ParsedEnv } from "./env.js";

export function defaultTemplate(env: ParsedEnv): { template: WhatsappTemplate | undefined } | { problems: string[] } {
  if (!env.WA_TEMPLATE_NAME) return { template: undefined };
  let components: unknown;
  try {
    components = env.WA_TEMPLATE_COMPONENTS ? JSON.parse(env.WA_TEMPLATE_COMPONENTS) : undefined;
  } catch {
    return { problems: ["WA_TEMPLATE_COMPONENTS: not valid JSON"] };
  }
  const parsed = whatsappTemplateSchema.safeParse({
    name: env.WA_TEMPLATE_NAME,
    language: env.WA_TEMPLATE_LANGUAGE,
    ...(components === undefined ? {} : { components }),
  });
  if (!parsed.success) {
    return {
      problems: parsed.error.issues.map(
        // The components are the only part of the template read as JSON; name the field inside them.
        (issue) => `${["WA_TEMPLATE_COMPONENTS", ...issue.path.slice(1).map(String)].join(".")}: ${issue.message}`,
      ),
    };
  }
  return { template: parsed.data };
}

/** WHATSAPP_FALLBACK_TEMPLATE: `name` or `name:language`, its components as JSON in their own setting. */
export function fallbackTemplate(env: ParsedEnv): { template: WhatsappTemplate | undefined } | { problems: string[] } {
  const given = env.WHATSAPP_FALLBACK_TEMPLATE?.trim();
  if (!given) return { template: undefined };
  const [name, language] = given.split(":", 2).map((part) => part.trim());
  let components: unknown;
  try {
    components = env.WHATSAPP_FALLBACK_TEMPLATE_COMPONENTS
      ? JSON.parse(env.WHATSAPP_FALLBACK_TEMPLATE_COMPONENTS)
      : undefined;
  } catch {
    return { problems: ["WHATSAPP_FALLBACK_TEMPLATE_COMPONENTS: not valid JSON"] };
  }
  const parsed = fallbackTemplateSchema.safeParse({
    name,
    language: language || env.WA_TEMPLATE_LANGUAGE,
    ...(components === undefined ? {} : { components }),
  });
  if (!parsed.success) {
    return {
      problems: parsed.error.issues.map((issue) => {
        const [first, ...rest] = issue.path.map(String);
        const setting =
          first === "components"
            ? ["WHATSAPP_FALLBACK_TEMPLATE_COMPONENTS", ...rest].join(".")
            : "WHATSAPP_FALLBACK_TEMPLATE";
        return `${setting}: ${issue.message}`;
      }),
    };
  }
  return { template: parsed.data };
}
