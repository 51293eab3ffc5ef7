// Twilio's two webhooks, form-encoded: a message the person sent to one of the hub's numbers (with its MMS
// files, MediaUrl{N} and MediaContentType{N}), and status callbacks on what the hub sent. Validated field by
// field (a 400 names the field); what is committed is the validated fields, as they came.
import { z } from "zod";

const MESSAGE_SID = /^(SM|MM)[0-9a-fA-F]{32}$/;
const messageSid = z.string().regex(MESSAGE_SID, "expected a Message SID (SM or MM and 32 hex digits)");
const accountSid = z.string().regex(/^AC[0-9a-fA-F]{32}$/, "expected an Account SID (AC and 32 hex digits)");
const address = z.string().trim().min(1).max(100);
/** An empty field is as good as an absent one (Twilio sends some empty). */
const maybe = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === "" ? undefined : value), schema.optional());

/** Twilio sends at most 10 files with one MMS. */
export const MAX_INBOUND_MEDIA = 10;

const inboundBase = z.object({
  MessageSid: messageSid,
  AccountSid: accountSid,
  From: address,
  To: address,
  Body: z.string().max(20_000).default(""),
  NumMedia: z.coerce.number().int().min(0).max(MAX_INBOUND_MEDIA).default(0),
  MessagingServiceSid: maybe(z.string().max(64)),
  // Set by Advanced Opt-Out when the message was one of its keywords: STOP, START or HELP.
  OptOutType: maybe(z.string().max(32)),
});

export type SmsInbound = z.output<typeof inboundBase> & {
  media: { url: string; contentType: string }[];
};

/** The inbound fields, with the files NumMedia announces; each MediaUrl{N} must be there and be a URL. */
export function inboundSchema(fields: Record<string, string>): z.ZodType<SmsInbound> {
  const count = inboundBase.shape.NumMedia.safeParse(fields.NumMedia);
  const files = count.success ? count.data : 0;
  const shape: Record<string, z.ZodType> = {};
  for (let i = 0; i < files; i++) {
    shape[`MediaUrl${i}`] = z.url();
    shape[`MediaContentType${i}`] = z
      .string()
      .trim()
      .regex(/^[\w.+-]+\/[\w.+-]+/, "expected a MIME type")
      .default("application/octet-stream");
  }
  return inboundBase.extend(shape).transform((parsed): SmsInbound => {
    const all = parsed as Record<string, unknown>;
    const base = inboundBase.parse(all);
    const media = Array.from({ length: base.NumMedia }, (_, i) => ({
      url: String(all[`MediaUrl${i}`]),
      contentType: String(all[`MediaContentType${i}`]).split(";")[0]!.trim().toLowerCase(),
    }));
    return { ...base, media };
  });
}

export const statusSchema = z.object({
  MessageSid: messageSid,
  AccountSid: accountSid,
  MessageStatus: z.string().trim().min(1).max(32),
  ErrorCode: maybe(z.coerce.number().int().nonnegative()),
  ErrorMessage: maybe(z.string().max(500)),
  To: maybe(address),
  From: maybe(address),
});
export type SmsStatus = z.output<typeof statusSchema>;
