// What a recorded test file must not carry, replaced in every text of it: the hub's identifiers for the person
// and their jobs (always), and with `--redact`, the e-mail addresses and phone numbers the person wrote — found
// with the safeguard's scanner, and replaced the same way wherever they appear, so the replies that repeat them
// still match.
import { scan } from "../agent/llm/claim-scan.js";

/** Every string in a JSON value (keys included), rewritten. */
export function rewriteStrings(value: unknown, rewrite: (text: string) => string): unknown {
  if (typeof value === "string") return rewrite(value);
  if (Array.isArray(value)) return value.map((each) => rewriteStrings(each, rewrite));
  if (value && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value).map(([key, each]) => [rewrite(key), rewriteStrings(each, rewrite)]),
    );
  return value;
}

/** Replaces each of `found` (longest first) with its placeholder. */
export function replacer(found: Map<string, string>): (text: string) => string {
  const keys = [...found.keys()].filter((key) => key.length > 0).sort((a, b) => b.length - a.length);
  return (text) => keys.reduce((out, key) => out.split(key).join(found.get(key)!), text);
}

/** The e-mail addresses and phone numbers in the person's texts, each with a placeholder of its kind. */
export function personalDetails(texts: string[]): {
  placeholders: Map<string, string>;
  emails: number;
  phones: number;
} {
  const placeholders = new Map<string, string>();
  let emails = 0;
  let phones = 0;
  for (const text of texts)
    scan(text, (found) => {
      const raw = text.slice(found.start, found.end);
      if (placeholders.has(raw)) return;
      if (found.kind === "email") placeholders.set(raw, `person-${++emails}@example.com`);
      else if (found.kind === "phone") placeholders.set(raw, `+1555010${String(++phones).padStart(4, "0")}`);
    });
  return { placeholders, emails, phones };
}
