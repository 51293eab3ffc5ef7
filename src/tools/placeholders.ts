// The `$…` placeholders of a tool file, each recognised whole: `$job.identifier` is not `$job.id` followed by
// "entifier" but a placeholder the hub does not know, refused by `hub tools check` and at start. Where each
// is filled: `$env.NAME` in the request and the cancel path, `$job.id` in an async tool's request and cancel
// path, `$result.message`, `$tool.name`, `$contact.name` in a WhatsApp template's parameters, and
// `$person.identifier`, `$person.channel` in the request but its base URL (person-placeholder.ts): the
// person's verified identity, filled by the hub and never by the model.

/** `$name` or `$name.field`; `$` followed by anything else (`$5`, `$.data`) is plain text. */
const PLACEHOLDER = /\$([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?/g;

/** The namespaces the hub fills somewhere; a bare `$name` outside them is plain text (`$USD`). */
const NAMESPACES = ["env", "job", "result", "tool", "contact", "person"] as const;

/** The person's verified identity (src/conversations/person-identity.ts): its fields a request may carry. */
export const PERSON_FIELDS = ["identifier", "channel"] as const;

export const isPersonPlaceholder = (namespace: string, name: string | undefined) =>
  namespace === "person" && (PERSON_FIELDS as readonly (string | undefined)[]).includes(name);

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
  request: "$env.NAME, $person.identifier and $person.channel (not in base_url), and $job.id in an async tool",
  cancel: "$env.NAME and $job.id",
  template: "$result.message, $tool.name and $contact.name",
};

/** Why a placeholder is refused at this place, or undefined when the hub fills it there. */
export function placeholderProblem(
  placeholder: Placeholder,
  place: PlaceholderPlace,
  options: { async: boolean; /** The key it stands under (`request.base_url`). */ key?: string | undefined },
): string | undefined {
  const { namespace, name } = placeholder;
  // The identity is the person's, not an address: it never chooses the host a request goes to.
  if (place === "request" && isPersonPlaceholder(namespace, name) && options.key === "request.base_url")
    return `${placeholder.text} is not filled in request.base_url (the person's identity never chooses the host); put it in request.path, request.headers or request.body`;
  const accepted =
    place === "template"
      ? (namespace === "result" && name === "message") ||
        (namespace === "tool" && name === "name") ||
        (namespace === "contact" && name === "name")
      : (namespace === "env" && name !== undefined) ||
        (namespace === "job" && name === "id" && (place === "cancel" || options.async)) ||
        (place === "request" && isPersonPlaceholder(namespace, name));
  if (accepted) return undefined;
  const hint =
    namespace === "args" || namespace === "arguments"
      ? " (a tool-call argument is sent as a `body` key with no value, or in the query string of a GET or DELETE)"
      : namespace === "job" && name === "id" && place === "request"
        ? " (a normal tool has no job)"
        : namespace === "person" && place !== "request"
          ? " (the person's identity goes with the start request only; the others name the job by its id)"
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
