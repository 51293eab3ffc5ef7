// The `$…` placeholders of a tool file, each recognised whole: `$job.identifier` is not `$job.id` followed by
// "entifier" but a placeholder the hub does not know, refused by `hub tools check` and at start. Where each
// is filled: `$env.NAME` in the request and the cancel path, `$job.id` in an async tool's request and cancel
// path, `$result.message`, `$tool.name`, `$contact.name` in a WhatsApp template's parameters.

/** `$name` or `$name.field`; `$` followed by anything else (`$5`, `$.data`) is plain text. */
const PLACEHOLDER = /\$([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?/g;

/** The namespaces the hub fills somewhere; a bare `$name` outside them is plain text (`$USD`). */
const NAMESPACES = ["env", "job", "result", "tool", "contact"] as const;

export type PlaceholderPlace = "request" | "cancel" | "template";

export interface Placeholder {
  /** As written, e.g. `$job.id`. */
  text: string;
  namespace: string;
  name: string | undefined;
}

export function placeholdersIn(text: string): Placeholder[] {
  return [...text.matchAll(PLACEHOLDER)]
    .filter((match) => match[2] !== undefined || (NAMESPACES as readonly string[]).includes(match[1]!))
    .map((match) => ({ text: match[0], namespace: match[1]!, name: match[2] }));
}

/** What each place accepts, said in a problem's reason. */
const ACCEPTED: Record<PlaceholderPlace, string> = {
  request: "$env.NAME, and $job.id in an async tool",
  cancel: "$env.NAME and $job.id",
  template: "$result.message, $tool.name and $contact.name",
};

/** Why a placeholder is refused at this place, or undefined when the hub fills it there. */
export function placeholderProblem(
  placeholder: Placeholder,
  place: PlaceholderPlace,
  options: { async: boolean },
): string | undefined {
  const { namespace, name } = placeholder;
  const accepted =
    place === "template"
      ? (namespace === "result" && name === "message") ||
        (namespace === "tool" && name === "name") ||
        (namespace === "contact" && name === "name")
      : (namespace === "env" && name !== undefined) ||
        (namespace === "job" && name === "id" && (place === "cancel" || options.async));
  if (accepted) return undefined;
  const hint =
    namespace === "args" || namespace === "arguments"
      ? " (a tool-call argument is sent as a `body` key with no value, or in the query string of a GET or DELETE)"
      : namespace === "job" && name === "id" && place === "request"
        ? " (a normal tool has no job)"
        : "";
  return `${placeholder.text} is not a placeholder the hub fills here; ${place === "template" ? "a template's parameters" : place === "cancel" ? "async.cancel.path" : "the request"} takes ${ACCEPTED[place]}${hint}`;
}

/** Every string in a value (strings, lists, objects), with the key it is under ("request.headers.X"). */
export function stringsIn(value: unknown, key: string): { key: string; text: string }[] {
  if (typeof value === "string") return [{ key, text: value }];
  if (Array.isArray(value)) return value.flatMap((item, index) => stringsIn(item, `${key}.${index}`));
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([child, item]) => stringsIn(item, `${key}.${child}`));
  return [];
}

/**
 * Replaces each placeholder `value` gives a value for; the others stay as written (a file that loaded has
 * none the hub does not fill).
 */
export function fillPlaceholders(
  text: string,
  value: (namespace: string, name: string | undefined) => string | undefined,
): string {
  return text.replace(
    PLACEHOLDER,
    (match, namespace: string, name: string | undefined) => value(namespace, name) ?? match,
  );
}
