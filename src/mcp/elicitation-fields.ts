// A server's form (elicitation/create, form mode) as questions for a person in a chat: one field at a time,
// required ones first; a boolean or a single choice with buttons, anything else as a question to answer in
// words. The person's answer — a tap, or typed words — is read against the field: a value, a skip (an
// optional field), a decline ("cancel"), or a hint when it does not fit. Pure: the store keeps the state.
import type { ElicitRequestFormParams, PrimitiveSchemaDefinition } from "@modelcontextprotocol/sdk/types.js";
import type { Button } from "../conversations/attachments.js";
import { plainText } from "../data-text.js";

export type FormSchema = ElicitRequestFormParams["requestedSchema"];
/** What the server gets for one field. */
export type FieldValue = string | number | boolean | string[];

interface Choice {
  value: string;
  title: string;
}

export type Field = { key: string; title: string; description: string | undefined; required: boolean } & (
  | { kind: "boolean" }
  | { kind: "choice"; choices: Choice[] }
  | { kind: "choices"; choices: Choice[]; minItems: number | undefined; maxItems: number | undefined }
  | {
      kind: "text";
      format: "email" | "uri" | "date" | "date-time" | undefined;
      minLength: number | undefined;
      maxLength: number | undefined;
    }
  | { kind: "number"; integer: boolean; minimum: number | undefined; maximum: number | undefined }
);

/** The server's words, as the person reads them: cleaned of control characters, and not a page long. */
const MESSAGE_MAX = 600;
const TITLE_MAX = 80;
const DESCRIPTION_MAX = 200;
/** A button's title fits every channel's (WhatsApp reply buttons, Messenger quick replies: 20). */
const BUTTON_TITLE_MAX = 20;

const cut = (text: string, max: number) => {
  const clean = plainText(text);
  return Array.from(clean).length > max
    ? `${Array.from(clean)
        .slice(0, max - 1)
        .join("")}…`
    : clean;
};

function choicesOf(definition: PrimitiveSchemaDefinition): Choice[] | undefined {
  if ("oneOf" in definition) return definition.oneOf.map((option) => ({ value: option.const, title: option.title }));
  if ("enum" in definition) {
    const names = "enumNames" in definition ? definition.enumNames : undefined;
    return definition.enum.map((value, i) => ({ value, title: names?.[i] ?? value }));
  }
  return undefined;
}

function fieldOf(key: string, definition: PrimitiveSchemaDefinition, required: boolean): Field {
  const base = {
    key,
    title: cut(definition.title ?? key, TITLE_MAX),
    description: definition.description ? cut(definition.description, DESCRIPTION_MAX) : undefined,
    required,
  };
  if (definition.type === "boolean") return { ...base, kind: "boolean" };
  if (definition.type === "number" || definition.type === "integer")
    return {
      ...base,
      kind: "number",
      integer: definition.type === "integer",
      minimum: definition.minimum,
      maximum: definition.maximum,
    };
  if (definition.type === "array") {
    const items = definition.items;
    const choices =
      "anyOf" in items
        ? items.anyOf.map((option) => ({ value: option.const, title: option.title }))
        : items.enum.map((value) => ({ value, title: value }));
    return { ...base, kind: "choices", choices, minItems: definition.minItems, maxItems: definition.maxItems };
  }
  const choices = choicesOf(definition);
  if (choices) return { ...base, kind: "choice", choices };
  const text = definition as Extract<PrimitiveSchemaDefinition, { minLength?: number }>;
  return { ...base, kind: "text", format: text.format, minLength: text.minLength, maxLength: text.maxLength };
}

/** The form's fields in the order they are asked: the required ones first, each group as the server listed it. */
export function formFields(schema: FormSchema): Field[] {
  const required = new Set(schema.required ?? []);
  const entries = Object.entries(schema.properties);
  return [
    ...entries.filter(([key]) => required.has(key)).map(([key, definition]) => fieldOf(key, definition, true)),
    ...entries.filter(([key]) => !required.has(key)).map(([key, definition]) => fieldOf(key, definition, false)),
  ];
}

/** The payload of a button: this elicitation's, field's and choice's own, so a tap answers only this. */
export const choicePayload = (elicitationId: string, fieldIndex: number, choice: string) =>
  `elicit:${elicitationId}:${fieldIndex}:${choice}`;

/** What a tap's payload answers, when it is one of an elicitation's buttons. */
export function tappedChoice(payload: unknown): { elicitationId: string; fieldIndex: number; choice: string } | null {
  if (typeof payload !== "string") return null;
  const match = /^elicit:([0-9a-f-]{36}):(\d+):(.+)$/.exec(payload);
  return match ? { elicitationId: match[1]!, fieldIndex: Number(match[2]), choice: match[3]! } : null;
}

const buttonTitle = (title: string) => cut(title, BUTTON_TITLE_MAX);

function hintOf(field: Field): string {
  switch (field.kind) {
    case "boolean":
      return "Tap Yes or No, or reply yes or no.";
    case "choice":
      return "Tap one of the options, or reply with its name or number.";
    case "choices": {
      const list = field.choices.map((choice, i) => `${i + 1}. ${cut(choice.title, TITLE_MAX)}`).join("\n");
      const bounds =
        field.minItems !== undefined && field.maxItems !== undefined
          ? ` (${field.minItems} to ${field.maxItems})`
          : field.minItems !== undefined
            ? ` (at least ${field.minItems})`
            : field.maxItems !== undefined
              ? ` (at most ${field.maxItems})`
              : "";
      return `Reply with one or more of these${bounds}, separated by commas:\n${list}`;
    }
    case "number": {
      const what = field.integer ? "a whole number" : "a number";
      const range =
        field.minimum !== undefined && field.maximum !== undefined
          ? ` from ${field.minimum} to ${field.maximum}`
          : field.minimum !== undefined
            ? ` of at least ${field.minimum}`
            : field.maximum !== undefined
              ? ` of at most ${field.maximum}`
              : "";
      return `Please reply with ${what}${range}.`;
    }
    case "text": {
      const format = {
        email: "an email address",
        uri: "a web address (https://…)",
        date: "a date (YYYY-MM-DD)",
        "date-time": "a date and time (YYYY-MM-DD HH:MM)",
      } as const;
      return `Please reply with ${field.format ? format[field.format] : "your answer"}.`;
    }
  }
}

/**
 * The question for one field: the server's message first (only with the first field), the field's title and
 * description, what to reply, and how to skip or cancel; buttons for a boolean (Yes, No) and a single choice
 * (one per option: a channel that cannot show that many shows numbered lines, answered by number).
 * `again`: why the last answer did not fit, said before the question.
 */
export function fieldQuestion(
  elicitationId: string,
  message: string | undefined,
  fields: readonly Field[],
  index: number,
  again?: string,
): { text: string; buttons: Button[] } {
  const field = fields[index]!;
  const counter = fields.length > 1 ? ` (${index + 1} of ${fields.length})` : "";
  const title = `${field.title}${counter}${field.description ? `: ${field.description}` : ""}`;
  const ways = [field.required ? undefined : 'reply "skip" to leave it out', 'reply "cancel" to decline'].filter(
    Boolean,
  );
  const text = [
    again,
    message ? cut(message, MESSAGE_MAX) : undefined,
    title,
    hintOf(field),
    `(Or ${ways.join(", or ")}.)`,
  ]
    .filter(Boolean)
    .join("\n\n");
  const buttons: Button[] =
    field.kind === "boolean"
      ? [
          { title: "Yes", payload: choicePayload(elicitationId, index, "yes") },
          { title: "No", payload: choicePayload(elicitationId, index, "no") },
        ]
      : field.kind === "choice"
        ? field.choices.map((choice, i) => ({
            title: buttonTitle(choice.title),
            payload: choicePayload(elicitationId, index, String(i)),
          }))
        : [];
  return { text, buttons };
}

/** What the person's message says to a field. */
export type Reading =
  { kind: "value"; value: FieldValue } | { kind: "skip" } | { kind: "decline" } | { kind: "invalid"; hint: string };

/** A word as people type it: trimmed of spaces and end marks, lower case, accents away ("¡SÍ!" → "si"). */
export function word(text: string): string {
  return text
    .normalize("NFD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/^[\s.!¡?¿"'«]+|[\s.!¡?¿"'»]+$/gu, "");
}

// As the approval's typed answers (src/jobs/approval-store.ts), in the languages the hub's people write.
const YES = new Set(["yes", "y", "si", "true", "1"]);
const NO = new Set(["no", "n", "false", "2"]);
const SKIP = new Set(["skip", "omitir", "saltar"]);
// "no" declines a question that is not a yes-or-no one (the approval's word for refusing).
const DECLINE = new Set(["cancel", "stop", "cancelar", "parar", "no"]);

function pickChoice(choices: readonly Choice[], typed: string): Choice | undefined {
  const said = word(typed);
  const number = /^\d+$/.test(said) ? Number(said) : undefined;
  return (
    choices.find((choice) => word(choice.value) === said || word(choice.title) === said) ??
    (number !== undefined && number >= 1 && number <= choices.length ? choices[number - 1] : undefined)
  );
}

function readNumber(field: Extract<Field, { kind: "number" }>, typed: string): Reading {
  const text = typed.trim().replace(/\s/g, "");
  // A decimal comma is how many people write a number ("3,5").
  const normal = /^-?\d+,\d+$/.test(text) ? text.replace(",", ".") : text;
  const valid = field.integer ? /^-?\d+$/.test(normal) : /^-?(\d+\.?\d*|\.\d+)$/.test(normal);
  const value = Number(normal);
  if (!valid || !Number.isFinite(value)) return { kind: "invalid", hint: "That is not a number I can read." };
  if (field.minimum !== undefined && value < field.minimum)
    return { kind: "invalid", hint: `It must be at least ${field.minimum}.` };
  if (field.maximum !== undefined && value > field.maximum)
    return { kind: "invalid", hint: `It must be at most ${field.maximum}.` };
  return { kind: "value", value };
}

function readText(field: Extract<Field, { kind: "text" }>, typed: string): Reading {
  const value = typed.trim();
  const length = Array.from(value).length;
  if (length === 0) return { kind: "invalid", hint: "The answer was empty." };
  if (field.minLength !== undefined && length < field.minLength)
    return { kind: "invalid", hint: `It must be at least ${field.minLength} characters long.` };
  if (field.maxLength !== undefined && length > field.maxLength)
    return { kind: "invalid", hint: `It must be at most ${field.maxLength} characters long.` };
  switch (field.format) {
    case "email":
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) return { kind: "invalid", hint: "That is not an email address." };
      break;
    case "uri":
      if (!URL.canParse(value) || !/^https?:/i.test(value))
        return { kind: "invalid", hint: "That is not a web address." };
      break;
    case "date": {
      const date = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T00:00:00Z`) : undefined;
      if (!date || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value)
        return { kind: "invalid", hint: "That is not a date written as YYYY-MM-DD." };
      break;
    }
    case "date-time": {
      const iso = value.replace(" ", "T");
      if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(iso) || Number.isNaN(new Date(iso).getTime()))
        return { kind: "invalid", hint: "That is not a date and time written as YYYY-MM-DD HH:MM." };
      return { kind: "value", value: iso };
    }
    case undefined:
      break;
  }
  return { kind: "value", value };
}

function readChoices(field: Extract<Field, { kind: "choices" }>, typed: string): Reading {
  const parts = typed
    .split(/[,;\n]|\s+(?:and|y)\s+/u)
    .map((part) => part.trim())
    .filter(Boolean);
  const picked: string[] = [];
  for (const part of parts) {
    const choice = pickChoice(field.choices, part);
    if (!choice) return { kind: "invalid", hint: `${JSON.stringify(plainText(part))} is not one of the options.` };
    if (!picked.includes(choice.value)) picked.push(choice.value);
  }
  if (field.minItems !== undefined && picked.length < field.minItems)
    return { kind: "invalid", hint: `Choose at least ${field.minItems}.` };
  if (field.maxItems !== undefined && picked.length > field.maxItems)
    return { kind: "invalid", hint: `Choose at most ${field.maxItems}.` };
  return { kind: "value", value: picked };
}

/**
 * Reads the person's message as the answer to one field: a tap of one of its buttons (`tapped`: the choice
 * the payload named), else the typed words — an option by its title, value or number; yes or no; a number; a
 * text of the field's format. "skip" leaves an optional field out; "cancel" or "stop" (and "no", where no is
 * not an answer) declines the whole form.
 */
export function readAnswer(field: Field, text: string, tapped: string | undefined): Reading {
  if (tapped !== undefined) {
    if (field.kind === "boolean" && (tapped === "yes" || tapped === "no"))
      return { kind: "value", value: tapped === "yes" };
    if (field.kind === "choice") {
      const choice = field.choices[Number(tapped)];
      if (/^\d+$/.test(tapped) && choice) return { kind: "value", value: choice.value };
    }
  }
  const said = word(text);
  if (field.kind === "boolean") {
    if (YES.has(said)) return { kind: "value", value: true };
    if (NO.has(said)) return { kind: "value", value: false };
  }
  if (field.kind === "choice") {
    const choice = pickChoice(field.choices, text);
    if (choice) return { kind: "value", value: choice.value };
  }
  if (!field.required && SKIP.has(said)) return { kind: "skip" };
  if (DECLINE.has(said) && !(field.kind === "boolean" && NO.has(said))) return { kind: "decline" };
  switch (field.kind) {
    case "boolean":
      return { kind: "invalid", hint: "Please answer yes or no." };
    case "choice":
      return { kind: "invalid", hint: "That is not one of the options." };
    case "choices":
      return readChoices(field, text);
    case "number":
      return readNumber(field, text);
    case "text":
      return readText(field, text);
  }
}
