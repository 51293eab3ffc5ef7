// What the safeguard (safeguard.ts) lets a reply state: the instructions and, from the conversation's timeline, the
// person's words and every tool answer and outcome.
import { sourcesOf, type Sources } from "./safeguard.js";
import type { TranscriptEntry } from "./transcript.js";

const textOf = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value ?? ""));

export function safeguardSources(instructions: string, entries: TranscriptEntry[]): Sources {
  return sourcesOf([
    instructions,
    ...entries.flatMap((entry) => {
      if (entry.kind === "user") return [entry.text];
      if (entry.kind === "outcome") return [textOf(entry.content)];
      if (entry.kind === "call")
        return [textOf(entry.answer.type === "answer" ? entry.answer.content : entry.answer.acceptMessage)];
      if (entry.kind === "progress") return [entry.text];
      return [];
    }),
  ]);
}
