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
const hostPattern = /^([a-z0-9-]+(\.[a-z0-9-]+)*|[0-9a-f:.]+)$/;
/** Meta's CDNs for Instagram, Messenger and WhatsApp files (lookaside.fbsbx.com among them). */
export const DEFAULT_MEDIA_HOSTS = "fbcdn.net,fbsbx.com,whatsapp.net,cdninstagram.com,facebook.com";

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
  // Hosts a person's Meta files are read from, comma-separated, each with its subdomains (the Graph API's
  // host always counts). An address listed here may be private: only then is one fetched.
  MEDIA_HOSTS: z
    .string()
    .default(DEFAULT_MEDIA_HOSTS)
    .transform((text) =>
      text
        .split(",")
        .map((host) =>
          host
            .trim()
            .toLowerCase()
            .replace(/^\*?\./, "")
            .replace(/^\[(.*)\]$/, "$1"),
        )
        .filter(Boolean),
    )
    .pipe(
      z.array(z.string().regex(hostPattern, "expected host names or addresses such as fbcdn.net,fbsbx.com")).min(1),
    ),
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
  /** MEDIA_HOSTS: the hosts (and their subdomains) a person's Meta files are read from. */
  hosts: string[];
  modelImages: "auto" | "true" | "false";
}

export function mediaConfig(env: MediaEnv): MediaConfig {
  return {
    urlTtlMs: env.MEDIA_URL_TTL,
    maxBytes: env.MEDIA_MAX_BYTES,
    widgetUploads: { types: env.WIDGET_UPLOAD_TYPES, maxBytes: env.WIDGET_UPLOAD_MAX_BYTES },
    hosts: env.MEDIA_HOSTS,
    modelImages: env.AGENT_MODEL_IMAGES,
  };
}

/** Whether a type is among the allowed ones (`image/*` allows every image type). */
export function typeAllowed(allowed: readonly string[], type: string): boolean {
  const [family] = type.split("/");
  return allowed.some((entry) => entry === type || entry === `${family}/*`);
}
