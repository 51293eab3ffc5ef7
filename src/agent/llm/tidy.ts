// Tidies a reply where the safeguard (safeguard.ts) cut something out, in one pass: a Markdown link whose address
// went keeps its words (`[book]()` → `book`), empty parentheses go, blanks before punctuation go, runs of blanks
// become one space. The text is built as it is read: only a `[` that may still lose its brackets is held back, never
// a list of pieces that grows with the reply (a big list costs fresh memory pages at every growth).
// Pure.

const BLANK = 1;
const PUNCTUATION = 2;
/** Ends a piece of plain text: a blank, a parenthesis or a bracket. */
const STOP = 4;
/** Per ASCII character, its classes as bits. */
const CLASSES = new Uint8Array(128);
for (const char of " \t") CLASSES[char.charCodeAt(0)] = BLANK | STOP;
for (const char of ".,;:!?") CLASSES[char.charCodeAt(0)] = PUNCTUATION;
for (const char of "()[]") CLASSES[char.charCodeAt(0)] = STOP;
const classAt = (text: string, at: number) => {
  const code = text.charCodeAt(at);
  return code < 128 ? CLASSES[code]! : 0;
};
const isSpace = (text: string, at: number) => at < text.length && /\s/.test(text[at]!);

export function tidy(text: string): string {
  let done = "";
  // The last `[` not closed yet, and what followed it; or, once its `]` came, the words between, until the next
  // piece shows whether empty parentheses follow (the brackets go) or not (they stay).
  let state: "plain" | "open" | "closed" = "plain";
  let inner = "";
  const settle = () => {
    if (state === "closed") {
      done += `[${inner}]`;
      inner = "";
      state = "plain";
    }
  };
  const emit = (piece: string) => {
    settle();
    if (state === "open") inner += piece;
    else done += piece;
  };
  let at = 0;
  while (at < text.length) {
    const code = text.charCodeAt(at);
    const kind = classAt(text, at);
    if (kind & BLANK) {
      let end = at + 1;
      while (end < text.length && classAt(text, end) & BLANK) end++;
      if (classAt(text, end) & PUNCTUATION) settle();
      else emit(end - at > 1 ? " " : text[at]!);
      at = end;
      continue;
    }
    if (code === 40) {
      let end = at + 1;
      while (isSpace(text, end)) end++;
      if (text.charCodeAt(end) === 41) {
        // Empty parentheses: gone, and with them the brackets of the words right before.
        if (state === "closed") {
          done += inner;
          inner = "";
          state = "plain";
        }
        at = end + 1;
        continue;
      }
    }
    if (code === 91) {
      // Of a run of `[`, only the last can open bracketed words; one still open before it stays as written.
      let end = at;
      while (text.charCodeAt(end + 1) === 91) end++;
      settle();
      if (state === "open") done += `[${inner}`;
      done += text.slice(at, end);
      inner = "";
      state = "open";
      at = end + 1;
      continue;
    }
    if (code === 93 && state === "open") {
      state = "closed";
      at++;
      continue;
    }
    if (kind & STOP) {
      emit(text[at]!);
      at++;
      continue;
    }
    // Plain text up to the next blank, parenthesis or bracket goes as one piece.
    let end = at + 1;
    while (end < text.length && !(classAt(text, end) & STOP)) end++;
    emit(text.slice(at, end));
    at = end;
  }
  settle();
  if (state === "open") done += `[${inner}`;
  return done.trim();
}
