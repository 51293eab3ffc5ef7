// The stand-in's rules for WhatsApp messages beyond text and templates, as Cloud API documents them: media by
// link or id (image, video, audio, document: caption ≤ 1,024, none on audio), interactive reply buttons
// (1–3, titles ≤ 20, ids ≤ 256) and lists (≤ 10 rows in all, row titles ≤ 24, ids ≤ 200, descriptions ≤ 72,
// the list button ≤ 20, body ≤ 1,024), and template header parameters that must match the template's header
// format. A broken rule throws what Meta answers: 131009 for a value out of bounds, 131008 for a missing one,
// 132012 for a header that does not match.

export type MediaType = "image" | "video" | "audio" | "document";
export const MEDIA_TYPES: readonly MediaType[] = ["image", "video", "audio", "document"];
export type TemplateHeaderFormat = "text" | "image" | "video" | "document";

export interface MediaPart {
  type: MediaType;
  link?: string;
  id?: string;
  caption?: string;
  filename?: string;
}

export interface InteractivePart {
  type: "button" | "list";
  body: string;
  /** Each choice: the id the tap comes back with and its title. */
  choices: { id: string; title: string; description?: string }[];
  /** A list's button text. */
  button?: string;
}

/** A rule broken: Meta's code and its error_data.details. */
export class RuleBroken extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(details);
  }
}

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const length = (value: string) => Array.from(value).length;
const invalid = (details: string) => new RuleBroken(131009, details);
const missing = (details: string) => new RuleBroken(131008, details);

function checkedString(value: unknown, what: string, max: number, optional = false): string | undefined {
  if (value === undefined && optional) return undefined;
  if (typeof value !== "string" || value.trim() === "") throw missing(`The parameter ${what} is required.`);
  if (length(value) > max) throw invalid(`${what} length invalid. Min length: 1, Max length: ${max}`);
  return value;
}

function httpsLink(value: unknown, what: string): string {
  if (typeof value !== "string") throw invalid(`${what} must be a string`);
  try {
    const url = new URL(value);
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error("scheme");
  } catch {
    throw invalid(`${what} is not a valid URL`);
  }
  return value;
}

/** A media message's object (`image`, `video`, `audio` or `document`). */
export function mediaPart(type: MediaType, object: unknown): MediaPart {
  if (!isRecord(object)) throw missing(`The parameter ${type} is required.`);
  const { link, id, caption, filename } = object;
  if (link === undefined && id === undefined)
    throw missing(`The parameter ${type}['link'] or ${type}['id'] is required.`);
  if (link !== undefined && id !== undefined) throw invalid(`Give either ${type}['link'] or ${type}['id'], not both.`);
  if (caption !== undefined && type === "audio")
    throw invalid("Param audio['caption'] is not supported: audio has no caption.");
  if (filename !== undefined && type !== "document") throw invalid(`Param ${type}['filename'] is only for documents.`);
  return {
    type,
    ...(link !== undefined ? { link: httpsLink(link, `${type}['link']`) } : {}),
    ...(id !== undefined ? { id: checkedString(id, `${type}['id']`, 256)! } : {}),
    ...(caption !== undefined ? { caption: checkedString(caption, `${type}['caption']`, 1024)! } : {}),
    ...(filename !== undefined ? { filename: checkedString(filename, `${type}['filename']`, 240)! } : {}),
  };
}

/** An interactive message's object (`button` or `list`). */
export function interactivePart(object: unknown): InteractivePart {
  if (!isRecord(object)) throw missing("The parameter interactive is required.");
  const body = isRecord(object.body) ? object.body.text : undefined;
  const text = checkedString(body, "interactive['body']['text']", 1024)!;
  const action = object.action;
  if (!isRecord(action)) throw missing("The parameter interactive['action'] is required.");
  if (object.type === "button") {
    const buttons = action.buttons;
    if (!Array.isArray(buttons) || buttons.length === 0) throw missing("The parameter action['buttons'] is required.");
    if (buttons.length > 3) throw invalid("Button count must be between 1 and 3.");
    const choices = buttons.map((button: unknown, i) => {
      const reply = isRecord(button) && button.type === "reply" && isRecord(button.reply) ? button.reply : undefined;
      if (!reply) throw missing(`The parameter action['buttons'][${i}]['reply'] is required (type reply).`);
      return {
        id: checkedString(reply.id, `Button id`, 256)!,
        title: checkedString(reply.title, "Button title", 20)!,
      };
    });
    unique(choices, "Button");
    return { type: "button", body: text, choices };
  }
  if (object.type === "list") {
    const button = checkedString(action.button, "action['button']", 20)!;
    const sections = action.sections;
    if (!Array.isArray(sections) || sections.length === 0)
      throw missing("The parameter action['sections'] is required.");
    if (sections.length > 10) throw invalid("Section count must be between 1 and 10.");
    const rows = sections.flatMap((section: unknown, i) => {
      const list = isRecord(section) ? section.rows : undefined;
      if (!Array.isArray(list) || list.length === 0) throw missing(`The parameter sections[${i}]['rows'] is required.`);
      return list as unknown[];
    });
    if (rows.length > 10) throw invalid(`Total row count exceed max allowed count: 10`);
    const choices = rows.map((row) => {
      if (!isRecord(row)) throw missing("The parameter rows[]['id'] is required.");
      const description = checkedString(row.description, "Row description", 72, true);
      return {
        id: checkedString(row.id, "Row id", 200)!,
        title: checkedString(row.title, "Row title", 24)!,
        ...(description !== undefined ? { description } : {}),
      };
    });
    unique(choices, "Row");
    return { type: "list", body: text, choices, button };
  }
  throw invalid("Param interactive['type'] must be one of {button, list, product, product_list, cta_url, flow}.");
}

function unique(choices: { id: string }[], what: string): void {
  if (new Set(choices.map((choice) => choice.id)).size !== choices.length) throw invalid(`${what} ids must be unique.`);
}

/**
 * A template's header parameter against its header format: a media header needs exactly one parameter of
 * its type with a link or id; a template without a media header takes no media parameter.
 */
export function checkTemplateHeader(format: TemplateHeaderFormat | undefined, components: unknown[] | undefined): void {
  const header = (components ?? []).find((component) => isRecord(component) && component.type === "header") as
    Json | undefined;
  const parameters = header && Array.isArray(header.parameters) ? (header.parameters as unknown[]) : [];
  const media = format === "image" || format === "video" || format === "document" ? format : undefined;
  const mismatch = () =>
    new RuleBroken(
      132012,
      `Parameter format does not match format in the created template (header: ${format ?? "none"})`,
    );
  if (!media) {
    if (parameters.some((parameter) => isRecord(parameter) && parameter.type !== "text")) throw mismatch();
    return;
  }
  const [parameter] = parameters;
  if (parameters.length !== 1 || !isRecord(parameter) || parameter.type !== media) throw mismatch();
  mediaPart(media, parameter[media]);
}
