// The safeguard on what a model invents: a link, an e-mail address, a phone number or an amount of money in a
// reply must come from somewhere — a tool result, the person's own words, the instructions. What appears in none
// of them is named (so the model can be asked once more) and, if it stays, removed from the reply. Pure.

export type ClaimKind = "link" | "email" | "phone" | "amount";

export interface Claim {
  kind: ClaimKind;
  /** As written in the reply. */
  text: string;
}

const PATTERNS: { kind: ClaimKind; pattern: RegExp }[] = [
  { kind: "link", pattern: /\bhttps?:\/\/[^\s<>()"'\]]+|\bwww\.[a-z0-9-]+(?:\.[a-z0-9-]+)+[^\s<>()"'\]]*/gi },
  { kind: "email", pattern: /\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b/gi },
  {
    kind: "amount",
    pattern:
      /(?:[$€£¥]|\b(?:USD|EUR|GBP|CLP|MXN|ARS|COP|BRL|US\$)\s?)\s?\d[\d.,]*(?:\s?(?:k|mil|million|millones))?|\b\d[\d.,]*\s?(?:USD|EUR|GBP|CLP|MXN|ARS|COP|BRL|dollars|euros|pesos|pounds)\b/gi,
  },
  // Seven digits or more, with the separators phone numbers are written with; not a date or a time.
  { kind: "phone", pattern: /(?<![\w/-])\+?\(?\d[\d\s().-]{5,}\d(?![\w/])/g },
];

const trimPunctuation = (text: string) => text.replace(/[.,;:!?)\]]+$/, "");
const digits = (text: string) => text.replace(/\D/g, "");
const DATE_OR_TIME = /^\d{4}-\d{2}-\d{2}$|^\d{1,2}[:.]\d{2}$|^\d{1,2}-\d{1,2}-\d{2,4}$/;

/** The links, e-mail addresses, phone numbers and amounts a text states. */
export function claimsIn(text: string): Claim[] {
  const claims: Claim[] = [];
  const taken: [number, number][] = [];
  for (const { kind, pattern } of PATTERNS) {
    for (const match of text.matchAll(pattern)) {
      const start = match.index;
      const raw = kind === "link" ? trimPunctuation(match[0]) : match[0].trim();
      const end = start + raw.length;
      // Inside a link or an address already found (the digits of a URL are not a phone number).
      if (taken.some(([a, b]) => start < b && end > a)) continue;
      if (kind === "phone" && (digits(raw).length < 7 || DATE_OR_TIME.test(raw.trim()))) continue;
      taken.push([start, end]);
      claims.push({ kind, text: raw });
    }
  }
  return claims;
}

/** What the reply may state: the texts of the tool results, the person's messages and the instructions. */
export interface Sources {
  text: string;
  /** Every run of digits the sources state, separators removed (a phone as written, an amount as stored). */
  numbers: Set<string>;
}

export function sourcesOf(texts: string[]): Sources {
  const text = texts.join("\n").toLowerCase();
  const numbers = new Set<string>();
  for (const match of text.matchAll(/\d[\d\s().,+-]*\d|\d/g)) numbers.add(digits(match[0]));
  return { text, numbers };
}

function stated(claim: Claim, sources: Sources): boolean {
  switch (claim.kind) {
    case "link":
      return sources.text.includes(claim.text.toLowerCase().replace(/\/$/, ""));
    case "email":
      return sources.text.includes(claim.text.toLowerCase());
    case "phone":
    case "amount": {
      const wanted = digits(claim.text);
      // "$45.000" is the 45000 a result holds; a phone's digits may be written with or without its prefix.
      for (const number of sources.numbers)
        if (number === wanted || number.endsWith(wanted) || (wanted.endsWith(number) && number.length >= 7))
          return true;
      return false;
    }
  }
}

/** The claims of `reply` that appear in none of the sources. */
export function inventedClaims(reply: string, sources: Sources): Claim[] {
  return claimsIn(reply).filter((claim) => !stated(claim, sources));
}

/** The reply without those claims, tidied where they stood. */
export function withoutClaims(reply: string, claims: Claim[]): string {
  let text = reply;
  for (const claim of claims) text = text.split(claim.text).join("");
  return text
    .replace(/\[([^\]]*)\]\(\s*\)/g, "$1") // a Markdown link whose address went
    .replace(/[ \t]{2,}/g, " ")
    .replace(/ +([.,;:!?])/g, "$1")
    .replace(/\(\s*\)/g, "")
    .trim();
}

export const describeClaims = (claims: Claim[]) => claims.map((claim) => `${claim.kind} "${claim.text}"`).join(", ");
