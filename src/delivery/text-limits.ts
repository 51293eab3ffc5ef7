// How long one message may be on each Meta channel and Telegram, and how a longer reply is split into several sends:
// at a paragraph break if one falls in the second half of the limit, else at a sentence end, else at a
// space, else at the limit itself — never inside a character (half of an emoji's surrogate pair is not text).
import type { Channel } from "./channel.js";

export const TEXT_LIMITS: Partial<Record<Channel, number>> = {
  whatsapp: 4096,
  instagram: 1000,
  messenger: 1000,
  telegram: 4096,
  // Twilio refuses a longer Body (21617); it sends one as several segments the phone joins.
  sms: 1600,
};

/** The parts a text is sent as on this channel: itself when it fits (always on widget channels). */
export function splitForChannel(channel: Channel, text: string): string[] {
  const limit = TEXT_LIMITS[channel];
  return limit === undefined ? [text] : splitText(text, limit);
}

export function splitText(text: string, limit: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const cut = cutPoint(rest, limit);
    const part = rest.slice(0, cut).trimEnd();
    if (part) parts.push(part);
    rest = rest.slice(cut).trimStart();
  }
  if (rest || parts.length === 0) parts.push(rest);
  return parts;
}

function cutPoint(text: string, limit: number): number {
  const window = text.slice(0, limit + 1);
  const half = Math.floor(limit / 2);
  const paragraph = window.lastIndexOf("\n\n");
  if (paragraph >= half) return paragraph;
  // A sentence ends at . ! ? … followed by a space or a line break.
  let sentence = -1;
  for (const match of window.matchAll(/[.!?…]["')\]]?(?=\s)/g)) {
    const end = match.index + match[0].length;
    if (end <= limit) sentence = end;
  }
  if (sentence >= half) return sentence;
  const space = Math.max(window.lastIndexOf(" "), window.lastIndexOf("\n"));
  if (space >= half) return space;
  // No boundary at all: cut at the limit, but not between the halves of a surrogate pair.
  return /[\uD800-\uDBFF]/.test(text[limit - 1] ?? "") ? limit - 1 : limit;
}
