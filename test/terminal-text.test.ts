// What the `hub` command prints of conversation text reaches a terminal: a visitor's message must not be able
// to move the cursor, erase lines, retitle the window or write the clipboard (OSC 52). The table: what each
// kind of control sequence becomes.
import { describe, expect, it } from "vitest";
import { terminalText } from "../src/cli/terminal-text.js";

describe("terminal text", () => {
  it.each([
    ["plain text, accents and emoji", "Hola, ¿qué tal? 👋", "Hola, ¿qué tal? 👋"],
    ["newline and tab kept", "one\n\ttwo", "one\n\ttwo"],
    ["carriage return (overwrites the line)", "paid\rnot paid", "paidnot paid"],
    ["NUL, BEL, backspace, form feed", "a\u0000b\u0007c\bd\fe", "abcde"],
    ["DEL", "a\u007fb", "ab"],
    ["C1 controls, the 8-bit CSI among them", "a\u0085b\u009b2Jc\u009fd", "ab2Jcd"],
    ["CSI erase-line", "before\u001b[2Kafter", "beforeafter"],
    ["CSI colour and cursor moves", "\u001b[31mred\u001b[0m \u001b[10;20H\u001b[?25l", "red "],
    ["OSC 52 clipboard write, BEL-terminated", "copy \u001b]52;c;ZXZpbA==\u0007this", "copy this"],
    ["OSC window title, ST-terminated", "\u001b]0;pwned\u001b\\title", "title"],
    ["OSC 8 hyperlink", "\u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007", "click"],
    ["an OSC never terminated stops at the line's end", "a\u001b]52;c;ZXZpbA==\nnext", "a\nnext"],
    ["DCS string", "x\u001bPq#0;2;0;0;0\u001b\\y", "xy"],
    ["two-character ESC sequences", "\u001bcreset \u001b7saved\u001b8 \u001b(Bcharset", "reset saved charset"],
    ["a lone ESC at the end", "end\u001b", "end"],
  ])("%s", (_name, text, printed) => {
    expect(terminalText(text)).toBe(printed);
  });
});
