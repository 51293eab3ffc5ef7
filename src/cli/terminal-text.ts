// Conversation text printed by the `hub` command goes to a terminal, and a visitor wrote it: an escape
// sequence in a message could erase lines, move the cursor, retitle the window or write the clipboard
// (OSC 52). Everything a terminal would act on is dropped; newlines and tabs stay.

const CONTROLS = new RegExp(
  [
    // CSI: ESC [ parameters intermediates final
    "\\u001b\\[[\\u0030-\\u003f]*[\\u0020-\\u002f]*[\\u0040-\\u007e]",
    // OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \), or the line's end when never terminated
    "\\u001b[\\]PX^_][^\\u0007\\u001b\\n]*(?:\\u0007|\\u001b\\\\)?",
    // any other escape sequence: ESC, intermediates, one final character
    "\\u001b[\\u0020-\\u002f]*[\\u0030-\\u007e]",
    // C0 controls but newline and tab, DEL, C1 controls (the 8-bit CSI and OSC among them), a lone ESC
    "[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f]",
  ].join("|"),
  "g",
);

/** The text with every terminal control sequence and control character removed. */
export function terminalText(text: string): string {
  return text.replace(CONTROLS, "");
}
