// Names are data: a person's name, a profile's name, a file's name. They are shown in the console and the
// terminal and given to the model, so none may hold what steers those instead of being read: control
// characters (C0, DEL, C1 — ESC, BEL, line breaks), the Unicode line and paragraph separators, and the
// bidirectional controls that make `évil\u202Egnp.exe` show as `éviléxe.png`. The widget refuses a name with
// them; names from Meta and file names have them stripped; a prompt quotes a name as JSON.

/** C0 controls, DEL, C1 controls (NEL included) and the Unicode line and paragraph separators. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/u;
/** Embeddings, overrides and isolates (U+202A–202E, U+2066–2069), the LRM/RLM marks and the Arabic letter mark. */
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/u;
const EVERY_CONTROL = new RegExp(CONTROLS.source, "gu");
const EVERY_BIDI_CONTROL = new RegExp(BIDI_CONTROLS.source, "gu");

/** Whether a text holds a control character or a line separator. */
export const hasControlCharacters = (text: string) => CONTROLS.test(text);

/** Whether a text is fit to be a name as it is: no control characters, no line separators, no bidi controls. */
export const isPlainText = (text: string) => !CONTROLS.test(text) && !BIDI_CONTROLS.test(text);

/**
 * A name with those characters taken out: a control character becomes a space (runs of spaces then one), so
 * `"Bob.\n\n## Heading"` stays readable as `"Bob. ## Heading"` on one line; a bidi control goes; trimmed.
 */
export function plainText(text: string): string {
  return text
    .replace(EVERY_BIDI_CONTROL, "")
    .replace(EVERY_CONTROL, " ")
    .replace(/\s{2,}/gu, " ")
    .trim();
}

/** A name as a prompt holds it: cleaned, then JSON-quoted, so it reads as one quoted value and never as lines. */
export const quotedData = (text: string) => JSON.stringify(plainText(text));

/**
 * A text of several lines (a tool's message) with the same characters taken out but its line breaks kept:
 * CR LF, CR and the Unicode separators become `\n`, tabs stay, other controls become a space, bidi controls go.
 */
export function plainLines(text: string): string {
  return (
    text
      .replace(/\r\n?|[\u2028\u2029]/gu, "\n")
      .replace(EVERY_BIDI_CONTROL, "")
      // eslint-disable-next-line no-control-regex -- finding control characters is the point
      .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/gu, " ")
  );
}
