// A compact, human-readable rendering of a result's data for the built-in composer.
const MAX = 600;
/** The order a named item's fields read in; any other field comes after them. */
const ORDER = ["description", "approach", "where", "location", "address", "when", "fee", "price"];

function scalar(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return render(value, 1);
  return String(value);
}

function render(value: unknown, depth = 0): string {
  if (Array.isArray(value)) {
    return value
      .map((item) => scalar(item))
      .filter(Boolean)
      .join(depth === 0 ? "\n" : "; ");
  }
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== null && v !== undefined);
    // A named item of a list (a person, a place) reads as its name, then what the rest of it says: what it is,
    // where, when, then its price (a stored result's keys come back in the database's order, not the backend's).
    const name = (value as Record<string, unknown>).name;
    if (depth > 0 && typeof name === "string" && entries.every(([, v]) => typeof v !== "object")) {
      const rank = (key: string) => (ORDER.includes(key) ? ORDER.indexOf(key) : ORDER.length);
      return `${name}: ${entries
        .filter(([key]) => key !== "name")
        .sort(([a], [b]) => rank(a) - rank(b))
        .map(([, v]) => String(v))
        .join(", ")}`;
    }
    // A single wrapping key (`{therapists: [...]}`) says nothing the list does not.
    if (depth === 0 && entries.length === 1) return render(entries[0]![1], 0);
    return entries
      .map(([key, v]) => (typeof v === "object" ? `${key}: ${render(v, depth + 1)}` : `${key}: ${String(v)}`))
      .join(", ");
  }
  return scalar(value);
}

export function renderData(data: unknown): string {
  const text = render(data).trim();
  return text.length > MAX ? `${text.slice(0, MAX - 1)}…` : text;
}
