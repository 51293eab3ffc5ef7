// `$person.identifier` and `$person.channel`: the conversation's verified person (person-identity.ts) in a tool's
// start request — a header, the path, a body value — filled by the hub at the call, never by the model. The
// model does not see them (they are not parameters) and cannot set them: a body key they fill is the hub's,
// whatever the arguments say, and `hub tools check` refuses a parameter of that name.
import { personIdentifierOf, personNotIdentified, type PersonIdentity } from "../conversations/person-identity.js";
import type { SqlQuery } from "../db/sql.js";
import { isPersonPlaceholder, placeholdersIn, stringsIn } from "./placeholders.js";
import type { ToolDefinition } from "./tool-definition.js";

type PersonTool = Pick<ToolDefinition, "request" | "mcp">;

/** Whether a call of the tool carries the person's identity: a `$person.*` in its request, or an MCP `person`. */
export function toolNeedsPerson(tool: PersonTool): boolean {
  if (tool.mcp?.personArgument !== undefined) return true;
  return stringsIn(tool.request ?? {}, "request").some((each) =>
    placeholdersIn(each.text).some((placeholder) => isPersonPlaceholder(placeholder.namespace, placeholder.name)),
  );
}

/**
 * The identity a call of the tool carries: undefined when the tool needs none; `person` when it needs one;
 * 409 `person_not_identified` when it needs one and the conversation has none (an anonymous widget visitor).
 */
export function requirePersonIdentifier(
  tool: PersonTool,
  person: PersonIdentity | undefined,
): PersonIdentity | undefined {
  if (!toolNeedsPerson(tool)) return undefined;
  if (!person) throw personNotIdentified();
  return person;
}

/** The same, read from the conversation (only when the tool needs it): what a call site passes to render. */
export async function personForToolCall(
  sql: SqlQuery,
  conversationId: string,
  tool: PersonTool,
): Promise<PersonIdentity | undefined> {
  if (!toolNeedsPerson(tool)) return undefined;
  return requirePersonIdentifier(tool, await personIdentifierOf(sql, conversationId));
}

/** The text a `$person.<name>` stands for. */
export function personValue(person: PersonIdentity, name: string | undefined): string | undefined {
  if (name === "identifier") return person.identifier;
  if (name === "channel") return person.channel;
  return undefined;
}

/** A header value must be visible ASCII: anything else (a widget identifier `josé`) is sent percent-encoded. */
export const headerSafe = (text: string) => (/^[\x20-\x7e]*$/.test(text) ? text : encodeURIComponent(text));

/**
 * Parameters the model would be offered for a body key the hub fills with the person's identity: refused, so
 * that the model is never asked for an id it cannot set.
 */
export function personParameterProblems(
  file: string,
  body: Record<string, unknown> | undefined,
  parameters: Record<string, unknown>,
): { file: string; key: string; reason: string }[] {
  const properties = parameters["properties"];
  if (!body || !properties || typeof properties !== "object") return [];
  return Object.entries(body).flatMap(([key, value]) => {
    const filled = stringsIn(value, key).some((each) =>
      placeholdersIn(each.text).some((placeholder) => isPersonPlaceholder(placeholder.namespace, placeholder.name)),
    );
    if (!filled || !Object.hasOwn(properties, key)) return [];
    return [
      {
        file,
        key: `parameters.properties.${key}`,
        reason: `request.body.${key} is filled by the hub with the person's verified identity; the model must not be offered it (remove it from parameters)`,
      },
    ];
  });
}
