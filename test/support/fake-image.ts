// What the LLM stand-ins check of an image the hub sends (fake-openai.ts, fake-anthropic.ts): base64 that
// decodes as written, and bytes that are the format they claim — PNG, JPEG, GIF or WebP, the four both APIs
// take — read from the file's own signature, as the real services decode the image rather than trust a label.

export type ImageFormat = "png" | "jpeg" | "gif" | "webp";
export const IMAGE_FORMATS: readonly ImageFormat[] = ["png", "jpeg", "gif", "webp"];

/** The bytes of strict base64, or undefined when it is not (stray characters, wrong padding). */
export function strictBase64(text: string): Buffer | undefined {
  if (text.length === 0 || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? bytes : undefined;
}

/** The format the bytes are, by their signature; undefined for anything else. */
export function imageFormat(bytes: Buffer): ImageFormat | undefined {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "png";
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "jpeg";
  if (bytes.subarray(0, 4).toString("latin1") === "GIF8") return "gif";
  if (bytes.subarray(0, 4).toString("latin1") === "RIFF" && bytes.subarray(8, 12).toString("latin1") === "WEBP")
    return "webp";
  return undefined;
}

/** An image a stand-in received, as a test reads it. */
export interface ReceivedImage {
  mediaType: string;
  bytes: Buffer;
}
