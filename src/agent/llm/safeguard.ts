// The safeguard on what a model invents: a link, an e-mail address, a phone number or an amount of money in a
// reply must come from somewhere — a tool result, the person's own words, the instructions (safeguard-sources.ts
// chooses them). What appears in none of them is named (so the model can be asked once more) and, if it stays,
// removed from the reply. Each kind is compared whole (claim-scan.ts reads replies and sources alike, in one pass):
// - a link by scheme, host (with port and any user part) and path, a trailing slash aside; its query's pairs must
//   all be a source link's, its fragment the same or none; `www.…` with no scheme matches http and https;
// - an e-mail address whole, letter case aside;
// - a phone number by all its digits; a country prefix (written `+56` or `0056`) only as the one thing that
//   differs, the national number otherwise the same (a leading trunk 0 aside: `(02) 2987 6543` is `+56 2 2987 6543`);
// - an amount (written with a currency) by its whole value and currency: `$45.000` is the 45000 of a result; a
//   number with no currency in a source stands for that value in any currency, one with a currency only in that
//   currency (`$` for any dollar or peso).
// Pure.
import { scan, numberValue, type AmountKey, type Found, type LinkKey, type PhoneKey } from "./claim-scan.js";

export type ClaimKind = "link" | "email" | "phone" | "amount";

export interface Claim {
  kind: ClaimKind;
  /** As written in the reply. */
  text: string;
}

/** What the reply may state, as the safeguard compares it. */
export interface Sources {
  links: Map<string, LinkKey[]>;
  /** Raw text of links no URL parser reads, lower-cased. */
  rawLinks: Set<string>;
  emails: Set<string>;
  /** `full:` every phone's digits; `nsn:` a phone's number after its written country prefix; `nat:` one without. */
  phones: Set<string>;
  /** Each value, with the currencies it is written with in each place (null: a bare number). */
  amounts: Map<string, (readonly string[] | null)[]>;
}

const linkPlace = (key: LinkKey) => `${key.authority}${key.path}`;

function linkStated(key: LinkKey, sources: Sources): boolean {
  return (sources.links.get(linkPlace(key)) ?? []).some((source) => {
    if (key.scheme && source.scheme && key.scheme !== source.scheme) return false;
    if (key.fragment && key.fragment !== source.fragment) return false;
    const pairs = [...source.query];
    // The reply may leave out a source's pairs, never add or change one.
    return key.query.every((pair) => {
      const at = pairs.indexOf(pair);
      if (at < 0) return false;
      pairs.splice(at, 1);
      return true;
    });
  });
}

function phoneStated(key: PhoneKey, sources: Sources): boolean {
  const { phones } = sources;
  if (phones.has(`full:${key.digits}`)) return true;
  if (key.national !== null) return phones.has(`nat:${key.national}`) || phones.has(`nat:0${key.national}`);
  return phones.has(`nsn:${key.digits}`) || (key.digits.startsWith("0") && phones.has(`nsn:${key.digits.slice(1)}`));
}

function amountStated(key: AmountKey, sources: Sources): boolean {
  return (sources.amounts.get(key.value) ?? []).some(
    (currencies) =>
      currencies === null || key.currencies === null || currencies.some((code) => key.currencies!.includes(code)),
  );
}

/** The links, e-mail addresses, phone numbers and amounts a text states, where it states them. */
function locatedClaims(text: string): Found[] {
  const found = scan(text);
  // A run of digits with a currency is an amount (or several); without one, a phone number if it reads as one.
  const priced = new Set<number>();
  for (const item of found) if (item.kind === "amount" && item.key.currencies) priced.add(item.run);
  return found.filter((item) =>
    item.kind === "phone" ? !priced.has(item.run) : item.kind !== "amount" || item.key.currencies !== null,
  );
}

function stated(claim: Found, text: string, sources: Sources): boolean {
  switch (claim.kind) {
    case "link":
      return claim.key
        ? linkStated(claim.key, sources)
        : sources.rawLinks.has(text.slice(claim.start, claim.end).toLowerCase());
    case "email":
      return sources.emails.has(claim.address);
    case "phone":
      return phoneStated(claim.key, sources);
    case "amount":
      return amountStated(claim.key, sources);
  }
}

const asClaim = (text: string) => (found: Found) => ({ kind: found.kind, text: text.slice(found.start, found.end) });

/** The links, e-mail addresses, phone numbers and amounts a text states. */
export function claimsIn(text: string): Claim[] {
  return locatedClaims(text).map(asClaim(text));
}

function addText(sources: Sources, text: string): void {
  for (const item of scan(text)) {
    switch (item.kind) {
      case "link":
        if (item.key) {
          const place = linkPlace(item.key);
          sources.links.set(place, [...(sources.links.get(place) ?? []), item.key]);
        } else sources.rawLinks.add(text.slice(item.start, item.end).toLowerCase());
        break;
      case "email":
        sources.emails.add(item.address);
        break;
      case "phone":
        sources.phones.add(`full:${item.key.digits}`);
        sources.phones.add(item.key.national === null ? `nat:${item.key.digits}` : `nsn:${item.key.national}`);
        break;
      case "amount":
        addAmount(sources, item.key.value, item.key.currencies);
        break;
    }
  }
}

function addAmount(sources: Sources, value: string, currencies: readonly string[] | null): void {
  const known = sources.amounts.get(value);
  if (known) known.push(currencies);
  else sources.amounts.set(value, [currencies]);
}

/**
 * The sources, from texts (read as the reply is) and JSON values (a tool's result: its strings read as text, its
 * numbers as bare numbers — and, with 7 digits or more, as phone numbers written without a prefix).
 */
export function sourcesOf(values: readonly unknown[]): Sources {
  const sources: Sources = {
    links: new Map(),
    rawLinks: new Set(),
    emails: new Set(),
    phones: new Set(),
    amounts: new Map(),
  };
  const pending: unknown[] = [...values];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "string") addText(sources, value);
    else if (typeof value === "number") {
      const number = numberValue(value);
      if (number === null) continue;
      addAmount(sources, number, null);
      if (/^\d{7,15}$/.test(number)) {
        sources.phones.add(`full:${number}`);
        sources.phones.add(`nat:${number}`);
      }
    } else if (Array.isArray(value)) for (const inner of value) pending.push(inner);
    else if (value && typeof value === "object")
      for (const [name, inner] of Object.entries(value)) pending.push(name, inner);
  }
  return sources;
}

/** The claims of `reply` that appear in none of the sources. */
export function inventedClaims(reply: string, sources: Sources): Claim[] {
  return locatedClaims(reply)
    .filter((claim) => !stated(claim, reply, sources))
    .map(asClaim(reply));
}

const isBlank = (char: string | undefined) => char === " " || char === "\t";
/** Text with nothing for `tidy` to do: one character class, sticky, so it cannot backtrack. */
const PLAIN = /[^ \t()[\]]*/y;

/** The reply without those claims (wherever the reply states them), tidied where they stood. */
export function withoutClaims(reply: string, claims: Claim[]): string {
  const unwanted = new Set(claims.map((claim) => `${claim.kind} ${claim.text}`));
  let text = "";
  let from = 0;
  for (const claim of locatedClaims(reply)) {
    if (claim.start < from || !unwanted.has(`${claim.kind} ${reply.slice(claim.start, claim.end)}`)) continue;
    text += reply.slice(from, claim.start);
    from = claim.end;
  }
  return tidy(text + reply.slice(from));
}

/**
 * One pass: a Markdown link whose address went keeps its words (`[book]()` → `book`), empty parentheses go, blanks
 * before punctuation go, runs of blanks become one space.
 */
function tidy(text: string): string {
  const out: string[] = [];
  let open = -1;
  // The `[` and `]` of the last bracketed words in `out`, while nothing has followed the `]`.
  let pair: [number, number] | null = null;
  for (let at = 0; at < text.length;) {
    const char = text[at]!;
    if (isBlank(char)) {
      let end = at;
      while (isBlank(text[end])) end++;
      if (end === text.length || !".,;:!?".includes(text[end]!)) out.push(end - at > 1 ? " " : char);
      at = end;
      pair = null;
      continue;
    }
    if (char === "(") {
      let end = at + 1;
      while (end < text.length && /\s/.test(text[end]!)) end++;
      if (text[end] === ")") {
        if (pair && pair[1] === out.length - 1) {
          out[pair[0]] = "";
          out.pop();
        }
        pair = null;
        at = end + 1;
        continue;
      }
    }
    pair = char === "]" && open >= 0 ? [open, out.length] : null;
    if (char === "[") open = out.length;
    else if (char === "]") open = -1;
    out.push(char);
    // Plain text up to the next blank, parenthesis or bracket goes as one piece.
    PLAIN.lastIndex = at + 1;
    PLAIN.exec(text);
    if (PLAIN.lastIndex > at + 1) {
      out.push(text.slice(at + 1, PLAIN.lastIndex));
      pair = null;
    }
    at = Math.max(PLAIN.lastIndex, at + 1);
  }
  return out.join("").trim();
}

export const describeClaims = (claims: Claim[]) => claims.map((claim) => `${claim.kind} "${claim.text}"`).join(", ");
