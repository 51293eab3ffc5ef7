// The built-in agent's answers to a question about a result the person was given ("which one is closest?",
// "how much does the first one cost?"): read from the result in the conversation, never by calling the tool
// again. A result it can answer about is a list of people or places with a `name` (the demo's matches:
// name, approach, where, fee); the search's `place` argument says what "closest" means. Pure.
import type { TurnRequest } from "./agent-port.js";
import { plain, type Aspect, type Lang } from "./intent.js";

export interface ResultItem {
  name: string;
  approach?: string;
  where?: string;
  fee?: string;
}

export interface LastResult {
  items: ResultItem[];
  /** Where the person said they are, as the search was asked (its `place` argument). */
  place?: string;
}

type HistoryEntry = TurnRequest["history"][number];

const record = (value: unknown): Record<string, unknown> | undefined =>
  value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

function itemOf(value: unknown): ResultItem | undefined {
  const item = record(value);
  if (!item || typeof item.name !== "string") return undefined;
  const text = (key: string) => (typeof item[key] === "string" ? { [key]: item[key] } : {});
  return { name: item.name, ...text("approach"), ...text("where"), ...text("fee") };
}

/** The latest result in the conversation that lists named items, with the place its search was for. */
export function lastResult(history: HistoryEntry[]): LastResult | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const entry = history[i]!;
    const data = record(entry.data);
    if (entry.role !== "tool_result" || data?.outcome !== "succeeded") continue;
    const lists = Object.values(record(record(data.result)?.data) ?? {}).filter(Array.isArray) as unknown[][];
    const items = (lists[0] ?? []).map(itemOf).filter((item): item is ResultItem => item !== undefined);
    if (items.length === 0) continue;
    // The call that started it is the latest one before it.
    const call = history.slice(0, i).findLast((earlier) => earlier.role === "tool_call");
    const place = record(record(call?.data)?.arguments)?.place;
    return { items, ...(typeof place === "string" && place ? { place } : {}) };
  }
  return undefined;
}

const isOnline = (item: ResultItem) => /\b(online|en l[ií]nea)\b/i.test(item.where ?? "");
const isIn = (item: ResultItem, place: string) => plain(item.where ?? "").includes(plain(place));

const COUNT = { en: ["one", "two", "three", "four", "five"], es: ["uno", "dos", "tres", "cuatro", "cinco"] };

/** The answer, in the person's language; the items' own words are the result's. */
export function answerAboutResult(
  question: { text: string; aspect: Aspect | undefined; ordinal: number | undefined },
  result: LastResult,
  lang: Lang,
): string {
  const { items } = result;
  const es = lang === "es";
  const said = plain(question.text);
  // Whom it is about: someone named, "the second one", the nearest, the only one — else all of them.
  const named = items.filter((item) =>
    plain(item.name)
      .split(" ")
      .some((part) => new RegExp(`\\b${part}\\b`).test(said)),
  );
  if (question.ordinal !== undefined && named.length === 0) {
    const item = question.ordinal === -1 ? items.at(-1) : items[question.ordinal - 1];
    if (!item) {
      const count = COUNT[lang][items.length - 1] ?? String(items.length);
      return es
        ? `Te di ${items.length === 1 ? "solo uno" : `solo ${count}`}: ${items.map((i) => i.name).join(" y ")}.`
        : `I gave you only ${count}: ${items.map((i) => i.name).join(" and ")}.`;
    }
    named.push(item);
  }
  if (question.aspect === "closest") return closest(result, es);
  const targets = named.length > 0 ? named : items;
  return targets.map((item) => sentence(item, question.aspect, es)).join(" ");
}

function closest(result: LastResult, es: boolean): string {
  const { items, place } = result;
  if (!place) {
    const where = items.map((item) => `${item.name} ${item.where ?? ""}`.trim()).join("; ");
    return es
      ? `Dime en qué comuna vives y te digo. Por ahora: ${where}.`
      : `Tell me where you live and I'll tell you. For now: ${where}.`;
  }
  const near = items.find((item) => isIn(item, place));
  if (near)
    return es
      ? `${near.name}: atiende ${near.where}.`
      : `${near.name} is the closest: ${near.name.split(" ")[0]} sees patients ${near.where}.`;
  const online = items.find(isOnline);
  if (online)
    return es
      ? `Ninguno atiende en ${place}; ${online.name} atiende ${online.where}.`
      : `None of them is in ${place}; ${online.name} sees patients ${online.where}.`;
  return es
    ? `Ninguno atiende en ${place}: ${items.map((item) => `${item.name} ${item.where ?? ""}`.trim()).join("; ")}.`
    : `None of them is in ${place}: ${items.map((item) => `${item.name} ${item.where ?? ""}`.trim()).join("; ")}.`;
}

function sentence(item: ResultItem, aspect: Aspect | undefined, es: boolean): string {
  const first = item.name.split(" ")[0]!;
  switch (aspect) {
    case "cost":
      if (!item.fee) return es ? `No sé cuánto cobra ${item.name}.` : `I don't know what ${item.name} charges.`;
      return es ? `${item.name} cobra ${item.fee} por sesión.` : `${item.name} charges ${item.fee} per session.`;
    case "online":
      if (isOnline(item))
        return es ? `Sí, ${item.name} atiende ${item.where}.` : `Yes, ${first} sees patients ${item.where}.`;
      return es
        ? `No, ${item.name} atiende solo en persona, ${item.where ?? ""}.`
        : `No, ${first} sees patients in person only, ${item.where ?? ""}.`;
    case "when":
    case "where":
      return es ? `${item.name} atiende ${item.where ?? ""}.` : `${item.name} sees patients ${item.where ?? ""}.`;
    case "approach":
      return `${item.name}: ${item.approach ?? ""}.`;
    default:
      return `${item.name}: ${[item.approach, item.where, item.fee && (es ? `${item.fee} por sesión` : `${item.fee} per session`)].filter(Boolean).join(", ")}.`;
  }
}
