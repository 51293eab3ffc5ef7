// What a person's message asks of the built-in agent, read by keywords in Spanish and English: a search (a
// concern, a place, or the words "search"/"demo"), how the running search is going, a question about the
// result they were given, small talk, or who the agent is. Pure and deterministic (table-tested in
// test/composer.test.ts): no model, so the same words always get the same answer.

export type Lang = "en" | "es";

/** Which part of a result a question is about. */
export type Aspect = "cost" | "closest" | "online" | "when" | "where" | "approach";

export type Intent =
  | { kind: "search"; query: string; place?: string }
  | { kind: "status" }
  | { kind: "about_result"; aspect: Aspect | undefined; ordinal: number | undefined }
  | { kind: "greeting" }
  | { kind: "thanks" }
  | { kind: "bye" }
  | { kind: "about" }
  | { kind: "other" };

/** Lower case, accents off: "Ñuñoa" and "nunoa", "¿Cuánto?" and "cuanto" read the same. */
export const plain = (text: string) => text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

/** What a search can be about, each with the words (both languages, accents off) that name it. */
const CONCERNS: [string, RegExp][] = [
  ["anxiety", /\b(anxiety|anxious|ansiedad|ansios[oa]s?|angustia)\b/],
  ["panic", /\b(panic|panico|crisis de panico)\b/],
  ["stress", /\b(stress(ed)?|estres(ad[oa])?)\b/],
  ["burnout", /\b(burn ?out|agotad[oa]|agotamiento)\b/],
  ["depression", /\b(depress(ion|ed)|depresion|deprimid[oa])\b/],
  ["grief", /\b(grief|grieving|duelo|perdi(da|mos|o) a)\b/],
  ["couples", /\b(couples?|relationship|pareja|matrimonio)\b/],
  ["family", /\b(family|familia|familiar)\b/],
  ["children", /\b(child(ren)?|kids?|nin[oa]s?|hij[oa]s?)\b/],
  ["teens", /\b(teen(ager)?s?|adolescentes?)\b/],
  ["trauma", /\b(trauma|ptsd|emdr|traumatic[oa]?|traumatic)\b/],
  ["sleep", /\b(sleep|insomnia|insomnio|dormir)\b/],
];

/** Places the demo catalogue knows (Santiago's communes), as written and as read. */
const PLACES = [
  "Ñuñoa",
  "Providencia",
  "Las Condes",
  "Maipú",
  "Santiago Centro",
  "Vitacura",
  "La Reina",
  "Macul",
  "La Florida",
  "Peñalolén",
  "San Miguel",
  "Lo Barnechea",
  "Santiago",
];

const SEARCH_WORDS =
  /\b(demo|search|find|look(ing)? for|busca(r|me)?|encuentra(me)?|necesito (un|una) (psicolog|terapeut))/;
const STATUS =
  /\b(how('s| is)? (it|the search|that) going|how('s| is)? it coming|status|progress|ready yet|any news|como va|como vas|que tal va|novedades|ya esta(s)? listo|falta mucho)\b/;
const GREETING = /^\s*(hi|hello|hey|good (morning|afternoon|evening)|hola|buenas|buenos dias|buenas (tardes|noches))\b/;
const THANKS = /\b(thanks|thank you|thx|ty|cheers|gracias|muchas gracias|te agradezco)\b/;
const BYE = /\b(bye|goodbye|see you|chao|chau|adios|hasta luego|nos vemos)\b/;
const ABOUT = /\b(who are you|what (can|do) you do|what is this|help|quien eres|que eres|que puedes hacer|ayuda)\b/;

const ASPECTS: [Aspect, RegExp][] = [
  ["cost", /\b(cost|costs|price|how much|fee|charge[s]?|cuanto (cuesta|cobra|sale|vale)|precio|valor|tarifa|cobra)\b/],
  ["closest", /\b(closest|nearest|near(er)? me|closer|mas cerca|cercan[oa]|queda cerca)\b/],
  ["online", /\b(online|remote(ly)?|video|virtual(es)?|en linea|a distancia|por zoom)\b/],
  ["when", /\b(when|what days|which days|schedule|hours|cuando|que dias|horario[s]?)\b/],
  ["where", /\b(where|donde|en que comuna)\b/],
  ["approach", /\b(approach|treat[s]?|method|what kind|enfoque|trata|tipo de terapia)\b/],
];

const ORDINALS: [number, RegExp][] = [
  [1, /\b(first|1st|primer[oa]?)\b/],
  [2, /\b(second|2nd|segund[oa])\b/],
  [3, /\b(third|3rd|tercer[oa]?)\b/],
  [-1, /\b(last|ultim[oa])\b/],
];

/** Spanish when the message reads Spanish (its words, or ñ, ¿, ¡); English otherwise. */
export function langOf(text: string): Lang {
  if (/[ñ¿¡]/i.test(text.replace(/ñuñoa/gi, ""))) return "es";
  const words = plain(text).split(/[^a-z]+/);
  const spanish = words.filter((word) =>
    /^(hola|gracias|como|que|tengo|vivo|estoy|busco|necesito|quiero|cuanto|cual|donde|cuando|el|la|los|las|un|una|mucha|mucho|por|para|con|de|del|en|y|mi|me|ya|va|primero|primera|segundo|segunda|buenas|chao|adios)$/.test(
      word,
    ),
  ).length;
  const english = words.filter((word) =>
    /^(hi|hello|thanks|how|what|which|i|im|ive|live|have|been|the|a|an|is|it|its|one|my|me|you|do|does|and|in|for|with|of|much|first|second)$/.test(
      word,
    ),
  ).length;
  return spanish > english ? "es" : "en";
}

/** The concerns a message names, as the catalogue's words ("ansiedad" → "anxiety"). */
export function concernsOf(text: string): string[] {
  const read = plain(text);
  return CONCERNS.filter(([, words]) => words.test(read)).map(([concern]) => concern);
}

/** The place a message names: one of the catalogue's, or what follows "I live in"/"vivo en". */
export function placeOf(text: string): string | undefined {
  const read = plain(text);
  // The longest first, so "Santiago Centro" wins over "Santiago".
  const known = [...PLACES]
    .sort((a, b) => b.length - a.length)
    .find((place) => new RegExp(`\\b${plain(place)}\\b`).test(read));
  if (known) return known;
  const said = /\b(?:i live in|i'm in|im in|vivo en|estoy en)\s+([\p{L} ]{2,40}?)\s*(?:[,.;!?]|$)/iu.exec(text);
  return said?.[1]?.trim() || undefined;
}

/** The asking around a request ("please run the demo search for …"), which is not what to look for. */
const ASKING =
  /\b(?:please|pls|can you|could you|would you|for me|thanks|thank you)\b|\b(?:run|start|try|do)\s+(?:the\s+|a\s+)?demo(?:\s+search)?\b|\bdemo\s+search\b|\bsearch(?:\s+for)?\b|\bbusca(?:r|me)?\b|\bencuentra(?:me)?\b|\bfind(?:\s+me)?\b|\blook(?:ing)?\s+for\b|\b(?:the\s+)?demo\b/gi;

/** What the person asked the demo to look for, in their words; empty when they only asked for the demo. */
export function searchWords(text: string): string {
  return text
    .replace(ASKING, " ")
    .replace(/[\s,.;:!?¿¡"“”()]+/g, " ")
    .trim();
}

/** Words that say where, before a place: "near Las Condes", "en Ñuñoa", "I live in …". */
const WHERE_WORDS = new Set([
  "near",
  "in",
  "around",
  "at",
  "en",
  "cerca",
  "de",
  "live",
  "i",
  "im",
  "i'm",
  "vivo",
  "estoy",
]);

/** The search's words without the place the message names (it is an argument of its own), nor what led to it. */
function withoutPlace(query: string, place: string | undefined): string {
  if (!place) return query;
  const words = query.split(" ");
  const wanted = plain(place).split(/\s+/);
  const at = words.findIndex((_, i) => wanted.every((word, j) => plain(words[i + j] ?? "") === word));
  if (at < 0) return query;
  let from = at;
  while (from > 0 && WHERE_WORDS.has(plain(words[from - 1]!))) from -= 1;
  return [...words.slice(0, from), ...words.slice(at + wanted.length)].join(" ").trim();
}

/** What the message asks, the first rule that fits winning (see the table in test/composer.test.ts). */
export function readIntent(text: string, context: { hasResult: boolean }): Intent {
  const read = plain(text);
  if (STATUS.test(read)) return { kind: "status" };
  const place = placeOf(text);
  // "search for …" takes the person's own words; a concern named in a sentence takes the concern.
  if (SEARCH_WORDS.test(read))
    return { kind: "search", query: withoutPlace(searchWords(text), place), ...(place ? { place } : {}) };
  const concerns = concernsOf(text);
  if (context.hasResult) {
    const aspect = ASPECTS.find(([, words]) => words.test(read))?.[0];
    const ordinal = ORDINALS.find(([, words]) => words.test(read))?.[0];
    const asks = /\?|\b(which|what|does|do|is|are|how|cual|que|cuanto|atiende|hace)\b/.test(read);
    if (concerns.length === 0 && (aspect || ((ordinal || asks) && /\b(one|uno|una|el|la)\b/.test(read))))
      return { kind: "about_result", aspect, ordinal };
  }
  if (concerns.length > 0) return { kind: "search", query: concerns.join(" "), ...(place ? { place } : {}) };
  if (ABOUT.test(read)) return { kind: "about" };
  if (THANKS.test(read)) return { kind: "thanks" };
  if (BYE.test(read)) return { kind: "bye" };
  if (GREETING.test(read)) return { kind: "greeting" };
  return { kind: "other" };
}
