// Files a person sends (src/media/): how long the hub's `/media/<token>` URLs work, how large a file the hub
// serves, what the widget may upload, and whether the LLM agent's model is shown images. Merged into the
// environment's schema by src/config.ts.
import { z } from "zod";
import { parseSpan } from "../tools/duration.js";

const MIB = 1024 * 1024;

const span = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, zod) => {
      const parsed = parseSpan(text);
      if ("ms" in parsed) return parsed.ms;
      zod.addIssue({ code: "custom", message: parsed.error });
      return z.NEVER;
    });

const bytes = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const typePattern = /^([\w.+-]+)\/([\w.+-]+|\*)$/;

/** The media variables. */
export const mediaEnvShape = {
  MEDIA_URL_TTL: span("24h"),
  MEDIA_MAX_BYTES: bytes(25 * MIB),
  // MIME types (`image/*` for a family), comma-separated.
  WIDGET_UPLOAD_TYPES: z
    .string()
    .default("image/*,application/pdf")
    .transform((text) =>
      text
        .split(",")
        .map((type) => type.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(typePattern, "expected MIME types such as image/*,application/pdf")).min(1)),
  WIDGET_UPLOAD_MAX_BYTES: bytes(10 * MIB),
  // Whether the LLM agent's model is given the person's images: auto decides by the model's name.
  AGENT_MODEL_IMAGES: z.enum(["auto", "true", "false"]).default("auto"),
};

export type MediaEnv = z.output<z.ZodObject<typeof mediaEnvShape>>;

export interface MediaConfig {
  /** How long a `/media/<token>` URL works after the hub hands it out. */
  urlTtlMs: number;
  /** The largest file `/media` serves (and the LLM agent reads). */
  maxBytes: number;
  widgetUploads: { types: string[]; maxBytes: number };
  modelImages: "auto" | "true" | "false";
}

export function mediaConfig(env: MediaEnv): MediaConfig {
  return {
    urlTtlMs: env.MEDIA_URL_TTL,
    maxBytes: env.MEDIA_MAX_BYTES,
    widgetUploads: { types: env.WIDGET_UPLOAD_TYPES, maxBytes: env.WIDGET_UPLOAD_MAX_BYTES },
    modelImages: env.AGENT_MODEL_IMAGES,
  };
}

/** Whether a type is among the allowed ones (`image/*` allows every image type). */
export function typeAllowed(allowed: readonly string[], type: string): boolean {
  const [family] = type.split("/");
  return allowed.some((entry) => entry === type || entry === `${family}/*`);
}
