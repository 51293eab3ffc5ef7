// Finds the links, e-mail addresses, phone numbers and amounts of money a text states, for the safeguard
// (safeguard.ts), which reads replies and sources with the same scan. Every scan moves forward and looks back or
// ahead a bounded number of characters: no regular expression here can backtrack, so a text of n characters
// costs O(n), whatever it holds (100 kB of hostile text in a few milliseconds: bench/safeguard.ts). What is found
// is handed to a visitor as it is read, not collected: a reader that keeps little (a reply's made-up claims, a
// source's keys) leaves only short-lived objects behind, which is what keeps tens of thousands of claims cheap.

export interface Span {
  start: number;
  end: number;
}

/** A link as compared: scheme (none for `www.…`), who@host:port, path, query pairs and fragment. */
export interface LinkKey {
  scheme: string | null;
  authority: string;
  path: string;
  query: string[];
  fragment: string;
}

/** A phone number's digits (without `+` or `00`), and for one written with its country prefix, the rest. */
export interface PhoneKey {
  digits: string;
  national: string | null;
}

/** A number as a whole amount (`45000`, `1250.5`), and the currencies it is written with (none: a bare number). */
export interface AmountKey {
  value: string;
  currencies: readonly string[] | null;
}

/**
 * An item found, each kind with the same fields in the same order: one object shape for all, so that the code that
 * reads them stays fast when a text mixes kinds. `run` numbers the runs of digits (-1 for a link or an address).
 */
export type Found =
  | (Span & { kind: "link"; key: LinkKey | null; run: number })
  | (Span & { kind: "email"; key: string; run: number })
  | (Span & { kind: "phone"; key: PhoneKey; run: number })
  | (Span & { kind: "amount"; key: AmountKey; run: number });

const isDigit = (code: number) => code >= 48 && code <= 57;
const isAsciiLetter = (code: number) => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
const WORD = /[\p{L}\p{N}_]/u;
/** A word's character other than an ASCII digit (a letter, `_`, another script's digit). */
function isLetterAt(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  if (code < 128) return isAsciiLetter(code) || code === 95;
  return WORD.test(text[at]!);
}
function isWordChar(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  if (Number.isNaN(code)) return false;
  if (code < 128) return isDigit(code) || isAsciiLetter(code) || code === 95;
  return WORD.test(text[at]!);
}

// ---- Links ---------------------------------------------------------------------------------------------------

/**
 * A link's characters, up to white space, quotes, brackets (a Markdown link's parenthesis), angle brackets or a
 * backslash: one character class repeated, from a fixed place (sticky), so it cannot backtrack.
 */
const LINK_RUN = /[^\s<>"'`()[\]{}|\\^]*/y;
/** Punctuation that ends a sentence rather than the link. */
const LINK_TRAIL = new Set([...".,;:!?*_~"]);

function linkKey(raw: string): LinkKey | null {
  const schemeless = /^www\./i.test(raw);
  let url: URL;
  try {
    url = new URL(schemeless ? `https://${raw}` : raw);
  } catch {
    return null;
  }
  const host = url.hostname.endsWith(".") ? url.hostname.slice(0, -1) : url.hostname;
  if (!host) return null;
  let path = url.pathname.replace(/%[0-9a-f]{2}/gi, (escape) => escape.toUpperCase());
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 47) end--;
  path = path.slice(0, end);
  const query = [...url.searchParams].map(([name, value]) => `${name}=${value}`);
  const who = url.username || url.password ? `${url.username}:${url.password}@` : "";
  return {
    scheme: schemeless ? null : url.protocol,
    authority: `${who}${host}:${url.port}`,
    path,
    query,
    fragment: url.hash,
  };
}

function linksIn(text: string): Found[] {
  const found: Found[] = [];
  // A reply repeats its links: each is parsed once.
  const keys = new Map<string, LinkKey | null>();
  // Fixed-length alternatives: constant work at each position; the scan resumes after each link.
  const start = /https?:\/\/|www\./gi;
  for (let match = start.exec(text); match; match = start.exec(text)) {
    const from = match.index;
    if (isWordChar(text, from - 1) || (match[0].length === 4 && ".@/-".includes(text[from - 1] ?? ""))) continue;
    LINK_RUN.lastIndex = from + match[0].length;
    let end = LINK_RUN.exec(text) ? LINK_RUN.lastIndex : from + match[0].length;
    while (end > from && LINK_TRAIL.has(text[end - 1]!)) end--;
    start.lastIndex = Math.max(end, from + 1);
    if (end <= from + match[0].length) continue;
    const raw = text.slice(from, end);
    let key = keys.get(raw);
    if (key === undefined) keys.set(raw, (key = linkKey(raw)));
    found.push({ kind: "link", start: from, end, key, run: -1 });
  }
  return found;
}

// ---- E-mail addresses -----------------------------------------------------------------------------------------

const isLocalChar = (code: number) =>
  isDigit(code) || isAsciiLetter(code) || "._%+-".includes(String.fromCharCode(code));
const isDomainChar = (code: number) => isDigit(code) || isAsciiLetter(code) || code === 45 || code === 46;

/**
 * Where an address's domain starting at `from` ends: whole labels (letters, digits, inner hyphens) joined by dots,
 * up to the first that is not one, the last of them a top-level domain of two letters or more; -1 if none.
 */
function domainEnd(text: string, from: number, limit: number): number {
  let best = -1;
  let labels = 0;
  let at = from;
  while (at < limit) {
    const start = at;
    let letters = true;
    while (at < limit && isDomainChar(text.charCodeAt(at)) && text.charCodeAt(at) !== 46) {
      if (!isAsciiLetter(text.charCodeAt(at))) letters = false;
      at++;
    }
    if (at === start || text.charCodeAt(start) === 45 || text.charCodeAt(at - 1) === 45) break;
    labels++;
    if (labels >= 2 && letters && at - start >= 2) best = at;
    if (text.charCodeAt(at) !== 46) break;
    at++;
  }
  return best;
}

/** The e-mail addresses outside the given spans (sorted): each `@` reads back and ahead to the next `@` at most. */
function emailsIn(text: string, links: Span[]): Found[] {
  const found: Found[] = [];
  let next = 0;
  for (let at = text.indexOf("@"); at >= 0; at = text.indexOf("@", at + 1)) {
    while (next < links.length && links[next]!.end <= at) next++;
    if (next < links.length && links[next]!.start <= at) continue;
    let from = at;
    while (from > 0 && isLocalChar(text.charCodeAt(from - 1))) from--;
    while (from < at && text[from] === ".") from++;
    if (from === at || (next > 0 && from < links[next - 1]!.end)) continue;
    const limit = next < links.length ? links[next]!.start : text.length;
    const end = domainEnd(text, at + 1, limit);
    if (end < 0) continue;
    found.push({ kind: "email", start: from, end, key: text.slice(from, end).toLowerCase(), run: -1 });
  }
  return found;
}

// ---- Numbers: phone numbers and amounts ---------------------------------------------------------------------------

// Maps, not object literals: a word like `toString` must find nothing.
const SYMBOLS = new Map<string, readonly string[]>([
  ["€", ["EUR"]],
  ["£", ["GBP"]],
  ["¥", ["JPY", "CNY"]],
  ["₹", ["INR"]],
]);
const DOLLARS = ["USD", "CAD", "AUD", "NZD", "SGD", "HKD"];
const PESOS = ["CLP", "MXN", "ARS", "COP", "UYU"];
/** `$` alone: a dollar or a peso. */
const DOLLAR_SIGN = [...DOLLARS, ...PESOS];
/** Letters written right before `$`. */
const DOLLAR_PREFIXES = new Map<string, readonly string[]>([
  ["US", ["USD"]],
  ["R", ["BRL"]],
  ["C", ["CAD"]],
  ["CA", ["CAD"]],
  ["A", ["AUD"]],
  ["AU", ["AUD"]],
  ["NZ", ["NZD"]],
  ["HK", ["HKD"]],
  ["S", ["SGD"]],
  ["MX", ["MXN"]],
  ["CLP", ["CLP"]],
  ["COL", ["COP"]],
]);
const CODES = new Set([...DOLLARS, ...PESOS, "EUR", "GBP", "JPY", "CNY", "INR", "BRL", "PEN", "CHF"]);
const WORDS = new Map<string, readonly string[]>([
  ["dollar", DOLLARS],
  ["dollars", DOLLARS],
  ["dólar", DOLLARS],
  ["dólares", DOLLARS],
  ["dolares", DOLLARS],
  ["peso", PESOS],
  ["pesos", PESOS],
  ["euro", ["EUR"]],
  ["euros", ["EUR"]],
  ["pound", ["GBP"]],
  ["pounds", ["GBP"]],
  ["libras", ["GBP"]],
  ["yen", ["JPY"]],
  ["yuan", ["CNY"]],
  ["real", ["BRL"]],
  ["reais", ["BRL"]],
  ["reales", ["BRL"]],
  ["sol", ["PEN"]],
  ["soles", ["PEN"]],
  ["rupees", ["INR"]],
  ["francs", ["CHF"]],
]);
/** Powers of ten a word after a number stands for (`$45k`, `2 millones`); `m` and `M` only beside a currency. */
const MULTIPLIERS = new Map<string, number>([
  ["k", 3],
  ["K", 3],
  ["mil", 3],
  ["m", 6],
  ["M", 6],
  ["MM", 6],
  ["mn", 6],
  ["million", 6],
  ["millions", 6],
  ["millón", 6],
  ["millon", 6],
  ["millones", 6],
  ["bn", 9],
]);
const LONGEST_WORD = 9;

/** The letters of a word starting at `at` (at most a short word's worth), or null when longer or glued on. */
function wordAt(text: string, at: number): string | null {
  let end = at;
  while (end < text.length && end - at <= LONGEST_WORD && isLetterAt(text, end)) end++;
  if (end === at || end - at > LONGEST_WORD || isWordChar(text, end)) return null;
  return text.slice(at, end);
}

/** The word ending right before `end`, when it starts a word. */
function wordBefore(text: string, end: number): { word: string; start: number } | null {
  let start = end;
  while (start > 0 && end - start <= LONGEST_WORD && isAsciiLetter(text.charCodeAt(start - 1))) start--;
  if (start === end || end - start > LONGEST_WORD || isWordChar(text, start - 1)) return null;
  return { word: text.slice(start, end), start };
}

/** A space, a no-break space or a narrow no-break space. */
const spaceAt = (text: string, at: number) => {
  const code = text.charCodeAt(at);
  return code === 32 || code === 0xa0 || code === 0x202f;
};
const skipSpace = (text: string, at: number) => (spaceAt(text, at) ? at + 1 : at);

/** A currency written before a number starting at `at`: `$`, `US$`, `€`, `USD `, `CLP`. */
function currencyBefore(text: string, at: number): { currencies: readonly string[]; start: number } | null {
  let end = at;
  if (spaceAt(text, end - 1)) end--;
  const mark = text[end - 1];
  if (mark === "$") {
    const prefix = wordBefore(text, end - 1);
    const known = prefix && DOLLAR_PREFIXES.get(prefix.word);
    return known ? { currencies: known, start: prefix.start } : { currencies: DOLLAR_SIGN, start: end - 1 };
  }
  const symbol = mark && SYMBOLS.get(mark);
  if (symbol) return { currencies: symbol, start: end - 1 };
  const word = wordBefore(text, end);
  if (word && CODES.has(word.word)) return { currencies: [word.word], start: word.start };
  return null;
}

interface Suffix {
  power: number;
  currencies: readonly string[] | null;
  end: number;
  unit: boolean;
}
/** Neither a multiplier nor a currency (most numbers): one object for all (its `end` is never read). */
const NOTHING_AFTER: Suffix = { power: 0, currencies: null, end: -1, unit: false };

/**
 * What follows a number ending at `at`: a multiplier and a currency, each optional, and where they end. After a
 * number written with its currency first, a currency that a number follows is that number's (`$10 $20`, `USD 10
 * USD 20`), not a second mark of this one.
 */
function suffixAfter(text: string, at: number, prefixed: boolean): Suffix {
  let end = at;
  let power = 0;
  let unit = false;
  let word = wordAt(text, skipSpace(text, end));
  const multiplier = word === null ? undefined : MULTIPLIERS.get(word);
  if (word && multiplier !== undefined) {
    power = multiplier;
    unit = true;
    end = skipSpace(text, end) + word.length;
    // "2 millones de pesos"
    if (text.startsWith(" de ", end)) {
      const after = wordAt(text, end + 4);
      if (after && WORDS.has(after.toLowerCase())) end += 3;
    }
    word = wordAt(text, skipSpace(text, end));
  }
  const from = skipSpace(text, end);
  const mark = text[from];
  const symbol = mark === "$" ? DOLLAR_SIGN : mark && SYMBOLS.get(mark);
  const named = !symbol && word ? (CODES.has(word) ? [word] : WORDS.get(word.toLowerCase())) : undefined;
  const markEnd = symbol ? from + 1 : named ? from + word!.length : -1;
  if (markEnd < 0 || (prefixed && isDigit(text.charCodeAt(skipSpace(text, markEnd))))) {
    if (!unit) return NOTHING_AFTER;
    return { power, currencies: null, end, unit };
  }
  return { power, currencies: (symbol || named)!, end: markEnd, unit: true };
}

/** `45.000` → 45000, `1,250.50` → 1250.5, `1.250,50` → 1250.5, `45'000` → 45000; null when no number reads so. */
export function amountValue(groups: string[], seps: string[], power = 0): string | null {
  if (groups.length === 1) return shifted(groups[0]!, "", power);
  const marks = seps.map((sep) => (sep === "." || sep === "," ? sep : "'"));
  let decimal = -1;
  const last = marks[marks.length - 1]!;
  const lastGroup = groups[groups.length - 1]!;
  if (last !== "'") {
    let sameMarks = 0;
    let otherMarks = 0;
    for (const mark of marks) {
      if (mark === last) sameMarks++;
      else if (mark !== "'") otherMarks++;
    }
    // One `.` or `,` before anything but three digits is a decimal point; so is the last mark when both are used.
    if ((otherMarks > 0 && sameMarks === 1) || (otherMarks === 0 && sameMarks === 1 && lastGroup.length !== 3))
      decimal = marks.length - 1;
  }
  const whole = decimal >= 0 ? groups.slice(0, -1) : groups;
  const thousands = decimal >= 0 ? marks.slice(0, -1) : marks;
  for (const mark of thousands) if (mark !== thousands[0]) return null;
  if (whole.length > 1 && (whole[0]!.length > 3 || whole.slice(1).some((group) => group.length !== 3))) return null;
  return shifted(whole.join(""), decimal >= 0 ? lastGroup : "", power);
}

/** Digits and a fraction, times 10^power, as one canonical number: no leading or trailing zeros. */
function shifted(digits: string, fraction: string, power: number): string {
  // Most numbers: whole, written without leading zeros.
  if (power === 0 && fraction === "" && (digits.length === 1 || digits.charCodeAt(0) !== 48)) return digits;
  const whole = digits + fraction.slice(0, power).padEnd(power, "0");
  const rest = fraction.slice(power);
  let start = 0;
  while (start < whole.length - 1 && whole[start] === "0") start++;
  let end = rest.length;
  while (end > 0 && rest[end - 1] === "0") end--;
  return end > 0 ? `${whole.slice(start)}.${rest.slice(0, end)}` : whole.slice(start);
}

/** A JavaScript number as the same canonical form (`4.5e+21` spelled out). */
export function numberValue(value: number): string | null {
  if (!Number.isFinite(value)) return null;
  const match = /^-?(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(Math.abs(value)));
  if (!match) return null;
  const power = Number(match[3] ?? 0);
  if (power < 0) return null;
  return shifted(match[1]!, match[2] ?? "", power);
}

/** Country calling codes of two digits; `1` and `7` are the one-digit ones, any other is three digits. */
const TWO_DIGIT_CODES = new Set(
  "20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98".split(
    " ",
  ),
);
function countryCodeLength(digits: string): number {
  if (digits[0] === "1" || digits[0] === "7") return 1;
  return TWO_DIGIT_CODES.has(digits.slice(0, 2)) ? 2 : 3;
}

// What the number scan asks of a character, as bits looked up by its code (no string made, nothing hashed).
/** Joins the groups of a run of digits. */
const SEPARATOR = 1;
/** A separator of phone numbers, never of one amount's groups: a space, a dash, a parenthesis. */
const STRONG = 2;
/** A separator a phone number may be written with. */
const PHONE = 4;
/** Glues a number to a word (`ord-5000`, `v1.2`, `a/7`). */
const GLUE = 8;
/** Between two digits, a time, a date or a ratio. */
const TIME = 16;
const ASCII_CLASSES = new Uint8Array(128);
const WIDE_CLASSES = new Map<number, number>();
function setClass(chars: string, bit: number): void {
  for (const char of chars) {
    const code = char.charCodeAt(0);
    if (code < 128) ASCII_CLASSES[code]! |= bit;
    else WIDE_CLASSES.set(code, (WIDE_CLASSES.get(code) ?? 0) | bit);
  }
}
setClass(" -.,'()\u00a0\u202f\u2009\u2011\u2013", SEPARATOR);
setClass(" -()\u2011\u2013", STRONG);
setClass(" -.()\u2011\u2013", PHONE);
setClass("-._/\\", GLUE);
setClass(":/", TIME);
/** The classes of the character at `at` (none past either end). */
function classAt(text: string, at: number): number {
  const code = text.charCodeAt(at);
  return code < 128 ? ASCII_CLASSES[code]! : (WIDE_CLASSES.get(code) ?? 0);
}
const WEAK_SPACES = new Set(["\u00a0", "\u202f", "\u2009", "'"]);

function allHave(sep: string, bit: number): boolean {
  for (let i = 0; i < sep.length; i++) if (!(classAt(sep, i) & bit)) return false;
  return true;
}
function someHas(sep: string, bit: number): boolean {
  for (let i = 0; i < sep.length; i++) if (classAt(sep, i) & bit) return true;
  return false;
}
const hasStrong = (sep: string) => someHas(sep, STRONG);
const phoneSeparator = (sep: string) => allHave(sep, PHONE);

/** One separator between two digits, or two or three of ` -()` with at least one that is not a space. */
const validSeparator = (sep: string) => sep.length === 1 || (allHave(sep, STRONG) && sep.trim() !== "");

const NO_SEPARATORS: string[] = [];
/** The longest run of digits and separators read as a phone number or an amount. */
const MAX_RUN = 64;

/**
 * The numbers of a text outside the given spans (sorted): digits joined by separators into runs, each read once.
 * A run glued to a word (`ord_5000`, `480Z`, `#7000`, `8c0f5000-1a2b`), beside a `:` or `/` and a digit (times,
 * dates, ratios), a date, or a percentage states no amount; one that reads as a phone number (7–15 digits, written
 * with spaces, dashes, dots or parentheses) states that number, and no amount inside it unless it also reads as
 * one number (`1.234.567`). The spans' items are visited too, each before a number at its place: all in text order.
 */
function numbersIn(text: string, taken: Found[], visit: (found: Found) => void): void {
  let next = 0;
  let shown = 0;
  let runs = 0;
  // Where the last number's facts end: a currency between two numbers belongs to the first.
  let floor = 0;
  // Each fact as it is read: the spans' items before it first.
  const sink = (fact: Found) => {
    while (shown < taken.length && taken[shown]!.start <= fact.start) visit(taken[shown++]!);
    visit(fact);
    floor = fact.end;
  };
  for (let at = 0; at < text.length; at++) {
    while (next < taken.length && taken[next]!.end <= at) next++;
    if (next < taken.length && taken[next]!.start <= at) {
      at = taken[next]!.end - 1;
      floor = Math.max(floor, taken[next]!.end);
      continue;
    }
    if (!isDigit(text.charCodeAt(at))) {
      // On to the next digit, or to the next span.
      const limit = next < taken.length ? taken[next]!.start : text.length;
      while (at < limit && !isDigit(text.charCodeAt(at))) at++;
      at--;
      continue;
    }
    const limit = next < taken.length ? taken[next]!.start : text.length;
    const groups: string[] = [];
    // Most runs have no separator: they share this empty list.
    let seps = NO_SEPARATORS;
    let end = at;
    // Parentheses hold a short group: "(600) 123-4567", "+56 (2) 2987 6543".
    let inParen = text.charCodeAt(at - 1) === 40 || (text.charCodeAt(at - 1) === 43 && text.charCodeAt(at - 2) === 40);
    for (;;) {
      const from = end;
      while (end < limit && isDigit(text.charCodeAt(end))) end++;
      // Longer than any phone number or amount: a long number or a list, read to its end and stating neither.
      if (end - at > MAX_RUN) groups.length = 0;
      else groups.push(text.slice(from, end));
      let sepEnd = end;
      while (sepEnd < limit && sepEnd - end < 3 && classAt(text, sepEnd) & SEPARATOR) sepEnd++;
      if (sepEnd === end || sepEnd >= limit || !isDigit(text.charCodeAt(sepEnd))) break;
      const sep = text.slice(end, sepEnd);
      if (!validSeparator(sep)) break;
      const closes = sep.includes(")");
      const opens = sep.includes("(");
      if (closes !== inParen || (opens && !shortGroupInParentheses(text, sepEnd, limit))) break;
      inParen = opens;
      if (end - at <= MAX_RUN) {
        if (seps === NO_SEPARATORS) seps = [];
        seps.push(sep);
      }
      end = sepEnd;
    }
    if (end - at <= MAX_RUN) runFacts(text, at, end, groups, seps, runs++, floor, limit, sink);
    at = end - 1;
  }
  while (shown < taken.length) visit(taken[shown++]!);
}

/** After a `(` at `at - 1`: one to four digits, then `)`. */
function shortGroupInParentheses(text: string, at: number, limit: number): boolean {
  let end = at;
  while (end < limit && end - at <= 4 && isDigit(text.charCodeAt(end))) end++;
  return end > at && end - at <= 4 && text[end] === ")";
}

function runFacts(
  text: string,
  from: number,
  end: number,
  groups: string[],
  seps: string[],
  run: number,
  floor: number,
  limit: number,
  sink: (fact: Found) => void,
): void {
  const plus = text[from - 1] === "+";
  // "(600) 123-4567", "(+56) 9 …": an area code or a country prefix in parentheses.
  const paren = text[plus ? from - 2 : from - 1] === "(" && seps[0]?.startsWith(")") === true;
  const start = from - (plus ? 1 : 0) - (paren ? 1 : 0);
  const before = text[start - 1];
  const written = plus ? null : currencyBefore(text, from);
  const currency = written && written.start >= floor ? written : null;
  const read = suffixAfter(text, end, currency !== null);
  // A currency or multiplier inside the link or address that follows is not this number's.
  const suffix = read.end <= limit ? read : NOTHING_AFTER;
  // Glued to a word before (an id), unless that word is the currency (`USD5000`).
  if (!currency && isWordChar(text, start - 1)) return;
  if (before === "#" || (classAt(text, start - 1) & GLUE && isWordChar(text, start - 2))) return;
  const after = text[end];
  const gluedAfter =
    (isWordChar(text, end) && !suffix.unit) || (classAt(text, end) & GLUE && isWordChar(text, end + 1));
  if (gluedAfter && !currency) return;
  const timeLike =
    (classAt(text, start - 1) & TIME && isDigit(text.charCodeAt(start - 2))) ||
    (classAt(text, end) & TIME && isDigit(text.charCodeAt(end + 1)));
  const date =
    groups.length === 3 &&
    seps[0] === seps[1] &&
    (seps[0] === "-" || seps[0] === ".") &&
    groups[1]!.length <= 2 &&
    ((groups[0]!.length === 4 && groups[2]!.length <= 2) || (groups[0]!.length <= 2 && groups[2]!.length === 4));
  if (timeLike || date || after === "%") return;

  let digitCount = 0;
  for (const group of groups) digitCount += group.length;
  const strong = plus || paren || seps.some(hasStrong);
  if (digitCount >= 7 && digitCount <= 17 && seps.every(phoneSeparator)) {
    // "+44 (0)20 …": the (0) is not dialled from abroad.
    const kept = plus ? groups.filter((group, i) => !(group === "0" && seps[i - 1]?.endsWith("("))) : groups;
    let digits = kept.join("");
    const international = plus || (digits.startsWith("00") && digits[2] !== "0");
    if (!plus && international) digits = digits.slice(2);
    if (digits.length >= 7 && digits.length <= 15) {
      const national = international ? digits.slice(countryCodeLength(digits)) : null;
      sink({ kind: "phone", start, end, key: { digits, national }, run });
    }
  }
  if (plus || paren) return;
  // The numbers of the run that are amounts, each as groups joined by `.` `,` `'` or a narrow space.
  const spaceThousands =
    groups.length > 1 &&
    seps.every((sep) => sep === " " || WEAK_SPACES.has(sep)) &&
    groups[0]!.length <= 3 &&
    groups.slice(1).every((group) => group.length === 3);
  if (!strong || spaceThousands) amountFact(text, run, currency, suffix, from, end, groups, seps, true, true, sink);
  else if (digitCount < 7) {
    let tokenStart = from;
    let first = 0;
    let position = from;
    for (let i = 0; i <= seps.length; i++) {
      position += groups[i]!.length;
      const sep = seps[i];
      if (sep === undefined || hasStrong(sep)) {
        const last = sep === undefined;
        const tokenGroups = groups.slice(first, i + 1);
        const tokenSeps = seps.slice(first, i);
        amountFact(text, run, currency, suffix, tokenStart, position, tokenGroups, tokenSeps, first === 0, last, sink);
        first = i + 1;
        tokenStart = position + (sep?.length ?? 0);
      }
      position += sep?.length ?? 0;
    }
  }
}

/**
 * One number of a run as an amount, if it reads as one: the run's currency before it goes to its first number, what
 * follows the run (a multiplier, a currency) to its last.
 */
function amountFact(
  text: string,
  run: number,
  currency: { currencies: readonly string[]; start: number } | null,
  suffix: Suffix,
  start: number,
  end: number,
  groups: string[],
  seps: string[],
  first: boolean,
  last: boolean,
  sink: (fact: Found) => void,
): void {
  const power = last ? suffix.power : 0;
  const value = amountValue(groups, seps, power);
  if (value === null) return;
  const own = first ? currency : null;
  const currencies = own?.currencies ?? (last ? suffix.currencies : null);
  // `m` after a bare number is a metre, not a million.
  if (last && power === 6 && !currencies && /^\s?m$/.test(text.slice(end, suffix.end))) return;
  sink({
    kind: "amount",
    start: own?.start ?? start,
    end: last && (suffix.currencies || power) ? suffix.end : end,
    key: { value, currencies },
    run,
  });
}

/**
 * Everything a text states, in the order it comes, each handed to `visit` as it is read: links, addresses outside
 * them, and numbers outside both (the facts of one run of digits one after another, with the same `run`).
 */
export function scan(text: string, visit: (found: Found) => void): void {
  const links = linksIn(text);
  const emails = emailsIn(text, links);
  numbersIn(text, merged(links, emails), visit);
}

/** Two lists in text order as one. */
function merged(a: Found[], b: Found[]): Found[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const out: Found[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length)
    out.push(j >= b.length || (i < a.length && a[i]!.start <= b[j]!.start) ? a[i++]! : b[j++]!);
  return out;
}
