// Checks a `respond:` JSONPath when the tool file is loaded. jsonpath-plus accepts almost any text and fails
// (or quietly maps nothing) only when a result arrives, hours later; a path that cannot work is refused here.
// The grammar accepted: `$`, then `.name`, `.*`, `..name`, `..*`, and brackets holding `*`, an index, a
// slice, a quoted name, a comma-separated list of indexes or quoted names, or a filter `?(…)`.
import { JSONPath } from "jsonpath-plus";

const NAME = /^[^\s.[\]()'"?,]+/;
const INDEX = /^-?\d+$/;
const SLICE = /^(-?\d+)?:(-?\d+)?(:(-?\d+)?)?$/;
const QUOTED = /^('[^']*'|"[^"]*")$/;

/** Why `path` cannot be used as a JSONPath, in a few words; undefined when it can. */
export function jsonPathProblem(path: string): string | undefined {
  if (!path.startsWith("$")) return "must be a JSONPath starting with $";
  let i = 1;
  while (i < path.length) {
    const at = `at character ${i + 1}`;
    if (path[i] === ".") {
      const descent = path[i + 1] === ".";
      i += descent ? 2 : 1;
      if (descent && path[i] === "[") continue;
      if (path[i] === "*") {
        i += 1;
        continue;
      }
      const name = NAME.exec(path.slice(i))?.[0];
      if (!name) return `is not a valid JSONPath: a name must follow "." ${at}`;
      i += name.length;
    } else if (path[i] === "[") {
      const end = closingBracket(path, i);
      if (end === undefined) return `is not a valid JSONPath: the "[" ${at} is never closed`;
      const problem = bracketProblem(path.slice(i + 1, end).trim(), at);
      if (problem) return `is not a valid JSONPath: ${problem}`;
      i = end + 1;
    } else {
      return `is not a valid JSONPath: unexpected "${path[i]}" ${at}`;
    }
  }
  try {
    JSONPath({ path, json: {}, wrap: false });
  } catch (error) {
    return `is not a valid JSONPath: ${(error as Error).message}`;
  }
  return undefined;
}

/** The index of the `]` closing the `[` at `open`, skipping quoted text and parentheses. */
function closingBracket(path: string, open: number): number | undefined {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open + 1; i < path.length; i++) {
    const c = path[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "(") depth++;
    else if (c === ")") depth = Math.max(0, depth - 1);
    else if (c === "]" && depth === 0) return i;
  }
  return undefined;
}

function bracketProblem(inside: string, at: string): string | undefined {
  if (inside === "") return `empty brackets ${at}`;
  if (inside === "*" || SLICE.test(inside)) return undefined;
  if (inside.startsWith("?")) return filterProblem(inside.slice(1), at);
  if (inside.startsWith("(")) return `a script expression [(…)] ${at}; use an index or a filter ?(…)`;
  for (const item of inside.split(",").map((part) => part.trim())) {
    if (!INDEX.test(item) && !QUOTED.test(item)) return `"${item}" ${at} is not an index, a slice or a quoted name`;
  }
  return undefined;
}

function filterProblem(filter: string, at: string): string | undefined {
  if (!filter.startsWith("(") || !filter.endsWith(")")) return `a filter must be written ?(…) ${at}`;
  const expression = filter.slice(1, -1);
  if (expression.trim() === "") return `an empty filter ${at}`;
  // jsonpath-plus parses a filter when it first runs it; run it once on one empty item. A parse error is
  // thrown; an error of evaluation (a property of nothing) is ignored: it depends on the data.
  try {
    JSONPath({ path: `$[?(${expression})]`, json: [{}], ignoreEvalErrors: true });
  } catch (error) {
    // Its position is in the library's rewritten text, not in the file: leave it out.
    return `the filter ${at} does not parse (${(error as Error).message.replace(/ at character \d+$/, "")})`;
  }
  return undefined;
}
