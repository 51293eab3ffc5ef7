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
import { tidy } from "./tidy.js";
import { scan, numberValue, type AmountKey, type Found, type LinkKey, type PhoneKey } from "./claim-scan.js";

export type ClaimKind = "link" | "email" | "phone" | "amount";

export interface Claim {
  kind: ClaimKind;
  /** As written in the reply. */
  text: string;
}

/**
 * Places in a reply, in order, kept in blocks of a few thousand: one array as long as a reply's claims would be
 * copied to fresh memory pages each time it grew, which costs more than reading the reply.
 */
export class Places {
  private readonly blocks: number[][] = [[]];
  /** How many places. */
  count = 0;

  add(start: number, end: number): void {
    let block = this.blocks[this.blocks.length - 1]!;
    if (block.length >= 4096) this.blocks.push((block = []));
    block.push(start, end);
    this.count++;
  }

  forEach(visit: (start: number, end: number) => void): void {
    for (const block of this.blocks) for (let i = 0; i < block.length; i += 2) visit(block[i]!, block[i + 1]!);
  }
}

/** What a reply states from nowhere. */
export interface MadeUp {
  /** Each different claim once, in the order the reply first states it: the first 200 of them. */
  claims: Claim[];
  /** Whether the reply makes up more different claims than those. */
  more: boolean;
  /** Every place the reply states one of them. */
  places: Places;
}

/** What the reply may state, as the safeguard compares it. */
export interface Sources {
  links: Map<string, LinkKey[]>;
  /** Raw text of links no URL parser reads, lower-cased. */
  rawLinks: Set<string>;
  emails: Set<string>;
  /** Phone numbers: every one's digits, as written (`full`); the number after a written country prefix (`nsn`); a
   * number written without one (`nat`). Three sets, so that a lookup builds no string. */
  phones: { full: Set<string>; nsn: Set<string>; nat: Set<string> };
  /** Each value, with the currencies it is written with in each place (null: a bare number). */
  amounts: Map<string, (readonly string[] | null)[]>;
}

const NONE: readonly never[] = [];
const linkPlace = (key: LinkKey) => `${key.authority}${key.path}`;

function linkStated(key: LinkKey, sources: Sources): boolean {
  return (sources.links.get(linkPlace(key)) ?? NONE).some((source) => {
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
  const { full, nsn, nat } = sources.phones;
  if (full.has(key.digits)) return true;
  if (key.national !== null) return nat.has(key.national) || nat.has(`0${key.national}`);
  return nsn.has(key.digits) || (key.digits.startsWith("0") && nsn.has(key.digits.slice(1)));
}

function amountStated(key: AmountKey, sources: Sources): boolean {
  return (sources.amounts.get(key.value) ?? NONE).some(
    (currencies) =>
      currencies === null || key.currencies === null || currencies.some((code) => key.currencies!.includes(code)),
  );
}

/**
 * The links, e-mail addresses, phone numbers and amounts a text states, handed to `visit` in text order. A run of
 * digits with a currency is an amount (or several); without one, a phone number if it reads as one: a run's phone
 * waits for the run's last fact.
 */
function eachClaim(text: string, visit: (claim: Found) => void): void {
  let run = -1;
  let phone: Found | null = null;
  let priced = false;
  const settle = () => {
    if (phone && !priced) visit(phone);
    phone = null;
  };
  scan(text, (item) => {
    if (item.kind === "link" || item.kind === "email") {
      settle();
      visit(item);
      return;
    }
    if (item.run !== run) {
      settle();
      run = item.run;
      priced = false;
    }
    if (item.kind === "phone") phone = item;
    else if (item.key.currencies) {
      priced = true;
      visit(item);
    }
  });
  settle();
}

function stated(claim: Found, text: string, sources: Sources): boolean {
  switch (claim.kind) {
    case "link":
      return claim.key
        ? linkStated(claim.key, sources)
        : sources.rawLinks.has(text.slice(claim.start, claim.end).toLowerCase());
    case "email":
      return sources.emails.has(claim.key);
    case "phone":
      return phoneStated(claim.key, sources);
    case "amount":
      return amountStated(claim.key, sources);
  }
}

/** The links, e-mail addresses, phone numbers and amounts a text states, each time it states one. */
export function claimsIn(text: string): Claim[] {
  const claims: Claim[] = [];
  eachClaim(text, (found) => claims.push({ kind: found.kind, text: text.slice(found.start, found.end) }));
  return claims;
}

function addText(sources: Sources, text: string): void {
  scan(text, (item) => {
    switch (item.kind) {
      case "link":
        if (item.key) {
          const place = linkPlace(item.key);
          sources.links.set(place, [...(sources.links.get(place) ?? []), item.key]);
        } else sources.rawLinks.add(text.slice(item.start, item.end).toLowerCase());
        break;
      case "email":
        sources.emails.add(item.key);
        break;
      case "phone":
        sources.phones.full.add(item.key.digits);
        if (item.key.national === null) sources.phones.nat.add(item.key.digits);
        else sources.phones.nsn.add(item.key.national);
        break;
      case "amount":
        addAmount(sources, item.key.value, item.key.currencies);
        break;
    }
  });
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
    phones: { full: new Set(), nsn: new Set(), nat: new Set() },
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
        sources.phones.full.add(number);
        sources.phones.nat.add(number);
      }
    } else if (Array.isArray(value)) for (const inner of value) pending.push(inner);
    else if (value && typeof value === "object")
      for (const [name, inner] of Object.entries(value)) pending.push(name, inner);
  }
  return sources;
}

/** How many different made-up claims are kept by name: more than any note or record names. */
const KEPT_CLAIMS = 200;

/**
 * The claims of `reply` that appear in none of the sources. Only what is made up is kept, and only its place once
 * the first 200 different ones are known: a reply with tens of thousands of claims leaves next to nothing for the
 * collector.
 */
export function inventedClaims(reply: string, sources: Sources): MadeUp {
  const known = new Map<string, Claim>();
  const places = new Places();
  let more = false;
  let last = "";
  eachClaim(reply, (found) => {
    if (stated(found, reply, sources)) return;
    places.add(found.start, found.end);
    // A claim repeated right after itself is read in place, not copied out again.
    if (more || (found.end - found.start === last.length && reply.startsWith(last, found.start))) return;
    // Kinds never share a text: a link or an address has its marks, an amount's text a currency, a phone's neither.
    const text = (last = reply.slice(found.start, found.end));
    if (known.has(text)) return;
    if (known.size < KEPT_CLAIMS) known.set(text, { kind: found.kind, text });
    else more = true;
  });
  return { claims: [...known.values()], more, places };
}

/** The reply without what it made up (`inventedClaims(reply, …)`), tidied where each stood. */
export function withoutClaims(reply: string, madeUp: MadeUp): string {
  let text = "";
  let from = 0;
  madeUp.places.forEach((start, end) => {
    text += reply.slice(from, start);
    from = end;
  });
  return tidy(text + reply.slice(from));
}

/** How many different claims a note to the model names; the rest are counted. */
const NAMED_CLAIMS = 20;

/** What was made up, for a note to the model: the first twenty different claims named, the others counted. */
export function describeClaims(madeUp: MadeUp): string {
  const rest = madeUp.claims.length - NAMED_CLAIMS;
  const named = madeUp.claims.slice(0, NAMED_CLAIMS).map((claim) => `${claim.kind} "${claim.text}"`);
  if (madeUp.more) return `${named.join(", ")} and more than ${Math.max(rest, 0)} others`;
  return named.join(", ") + (rest > 0 ? ` and ${rest} more` : "");
}
