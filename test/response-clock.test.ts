// The response clock as a table: what a hand-off, a member's reply, the person's message and a hand-back do to
// the clock, with and without targets, and a clock already running (kept, never pushed later).
import { describe, expect, it } from "vitest";
import {
  clockView,
  isBreached,
  nextClock,
  NO_CLOCK,
  type ClockEvent,
  type ResponseClock,
  type ResponseTargets,
} from "../src/team/response-clock.js";

const T = new Date("2026-12-03T10:00:00.000Z");
const at = (seconds: number) => new Date(T.getTime() + seconds * 1000);
const both: ResponseTargets = { firstResponseSeconds: 300, nextResponseSeconds: 120 };
const none: ResponseTargets = { firstResponseSeconds: null, nextResponseSeconds: null };
const onlyNext: ResponseTargets = { firstResponseSeconds: null, nextResponseSeconds: 60 };
const first = (due: number, breached?: number): ResponseClock => ({
  responseKind: "first",
  responseDueAt: at(due),
  breachedAt: breached === undefined ? null : at(breached),
});
const next = (due: number): ResponseClock => ({ responseKind: "next", responseDueAt: at(due), breachedAt: null });

const rows: [string, ResponseClock, ResponseTargets, ClockEvent, ResponseClock][] = [
  ["a hand-off starts the first-response clock", NO_CLOCK, both, { type: "handoff", at: T }, first(300)],
  ["a hand-off to a team without targets starts none", NO_CLOCK, none, { type: "handoff", at: T }, NO_CLOCK],
  ["no first target: a hand-off starts none", NO_CLOCK, onlyNext, { type: "handoff", at: T }, NO_CLOCK],
  ["a second hand-off keeps the earlier due time", first(300), both, { type: "handoff", at: at(200) }, first(300)],
  ["a member's reply stops the first clock", first(300), both, { type: "member_reply", at: at(10) }, NO_CLOCK],
  ["a member's reply stops a breached clock", first(300, 301), both, { type: "member_reply", at: at(400) }, NO_CLOCK],
  ["a member's reply with no clock: none", NO_CLOCK, both, { type: "member_reply", at: at(10) }, NO_CLOCK],
  [
    "the person writes after the team answered: next clock from their message",
    NO_CLOCK,
    both,
    { type: "person_message", at: at(500), withTeam: true },
    next(620),
  ],
  [
    "the person writes while the first is still owed: the first keeps its time",
    first(300),
    both,
    { type: "person_message", at: at(100), withTeam: true },
    first(300),
  ],
  [
    "the person writes again while a next is owed: the earlier due time stays",
    next(620),
    both,
    { type: "person_message", at: at(600), withTeam: true },
    next(620),
  ],
  [
    "a breached clock stays breached when the person writes again",
    first(300, 301),
    both,
    { type: "person_message", at: at(400), withTeam: true },
    first(300, 301),
  ],
  [
    "the person writes while the agent has it: no clock",
    NO_CLOCK,
    both,
    { type: "person_message", at: at(10), withTeam: false },
    NO_CLOCK,
  ],
  [
    "no next target: the person's message starts none",
    NO_CLOCK,
    { firstResponseSeconds: 300, nextResponseSeconds: null },
    { type: "person_message", at: at(10), withTeam: true },
    NO_CLOCK,
  ],
  [
    "only a next target: the person's message starts it",
    NO_CLOCK,
    onlyNext,
    { type: "person_message", at: at(10), withTeam: true },
    next(70),
  ],
  ["a hand-back stops the clock", next(620), both, { type: "handback", at: at(30) }, NO_CLOCK],
  ["a hand-back stops a breached clock", first(300, 301), both, { type: "handback", at: at(400) }, NO_CLOCK],
];

describe("the response clock", () => {
  it.each(rows)("%s", (_name, clock, targets, event, expected) => {
    expect(nextClock(clock, targets, event)).toEqual(expected);
  });

  it("is breached once it is past due, and only until it is marked", () => {
    expect(isBreached(first(300), at(299))).toBe(false);
    expect(isBreached(first(300), at(300))).toBe(false);
    expect(isBreached(first(300), at(301))).toBe(true);
    expect(isBreached(first(300, 301), at(400))).toBe(false);
    expect(isBreached(NO_CLOCK, at(400))).toBe(false);
  });

  it("is shown as kind, due time and breach", () => {
    expect(clockView(first(300, 301))).toEqual({
      kind: "first",
      dueAt: at(300).toISOString(),
      breachedAt: at(301).toISOString(),
    });
    expect(clockView(NO_CLOCK)).toBeNull();
    expect(clockView({})).toBeNull();
  });
});
