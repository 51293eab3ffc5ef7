// Long replies are split where a reader would pause, never over the channel's limit, never inside a
// character, and nothing is lost (docs/architecture.md "Delivery").
import { describe, expect, it } from "vitest";
import { splitForChannel, splitText } from "../src/delivery/text-limits.js";

const rejoin = (parts: string[]) => parts.join(" ").replace(/\s+/g, " ");

describe("splitting a long reply", () => {
  it("leaves a text that fits alone, and widget channels always", () => {
    expect(splitText("short", 10)).toEqual(["short"]);
    expect(splitForChannel("web", "x".repeat(10_000))).toHaveLength(1);
  });

  it("prefers a paragraph break in the second half of the limit", () => {
    const text = `${"a".repeat(60)}. ${"b".repeat(10)}\n\n${"c".repeat(50)}`;
    expect(splitText(text, 100)).toEqual([`${"a".repeat(60)}. ${"b".repeat(10)}`, "c".repeat(50)]);
  });

  it("else a sentence end, else a space, else the limit", () => {
    expect(splitText("One two three. Four five six seven", 20)).toEqual(["One two three.", "Four five six seven"]);
    expect(splitText("alpha beta gamma delta epsilon", 12)).toEqual(["alpha beta", "gamma delta", "epsilon"]);
    expect(splitText("x".repeat(25), 10)).toEqual(["x".repeat(10), "x".repeat(10), "x".repeat(5)]);
  });

  it("never cuts an emoji in two, and loses no text", () => {
    const text = `${"y".repeat(9)}😀${"z".repeat(5)}`;
    const parts = splitText(text, 10);
    expect(parts).toEqual(["y".repeat(9), `😀${"z".repeat(5)}`]);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(10);
  });

  it("keeps every WhatsApp, Instagram and Messenger part within its limit, in order", () => {
    const text = Array.from({ length: 400 }, (_, i) => `Line ${i}: something worth reading.`).join(" ");
    for (const [channel, limit] of [
      ["whatsapp", 4096],
      ["instagram", 1000],
      ["messenger", 1000],
    ] as const) {
      const parts = splitForChannel(channel, text);
      expect(parts.length).toBeGreaterThan(1);
      for (const part of parts) expect(part.length).toBeLessThanOrEqual(limit);
      expect(rejoin(parts)).toBe(text);
    }
  });
});
