// Business hours as a table: open or closed at an instant, and the next opening, in the team's time zone,
// across split shifts, holidays, week-ends and a DST change.
import { describe, expect, it } from "vitest";
import { isOpen, nextOpening, teamHoursSchema, type TeamHours } from "../src/team/business-hours.js";

const madrid: TeamHours = {
  timeZone: "Europe/Madrid",
  weekly: {
    mon: [
      ["09:00", "13:00"],
      ["15:00", "18:00"],
    ],
    tue: [["09:00", "18:00"]],
    wed: [["09:00", "18:00"]],
    thu: [["09:00", "18:00"]],
    fri: [["09:00", "14:00"]],
  },
  holidays: ["2026-12-08", "2026-12-25"],
};
const nights: TeamHours = {
  timeZone: "America/New_York",
  weekly: { sat: [["22:00", "24:00"]], sun: [["00:00", "06:00"]] },
};

// 2026-12-07 is a Monday; Madrid is UTC+1 in winter, UTC+2 in summer.
const rows: [string, TeamHours, string, boolean, string | null][] = [
  ["Monday morning shift", madrid, "2026-12-07T09:30:00Z", true, "2026-12-07T09:30:00Z"],
  ["the first minute of a shift is open", madrid, "2026-12-07T08:00:00Z", true, "2026-12-07T08:00:00Z"],
  ["the last minute of a shift is closed", madrid, "2026-12-07T12:00:00Z", false, "2026-12-07T14:00:00Z"],
  ["the lunch gap of a split shift", madrid, "2026-12-07T13:00:00Z", false, "2026-12-07T14:00:00Z"],
  [
    "Monday night waits for Tuesday (the 8th is a holiday: Wednesday)",
    madrid,
    "2026-12-07T20:00:00Z",
    false,
    "2026-12-09T08:00:00Z",
  ],
  ["a holiday is closed all day", madrid, "2026-12-08T10:00:00Z", false, "2026-12-09T08:00:00Z"],
  ["3 a.m. on a Saturday waits for Monday", madrid, "2026-12-12T02:00:00Z", false, "2026-12-14T08:00:00Z"],
  ["Friday afternoon after its short shift", madrid, "2026-12-11T13:30:00Z", false, "2026-12-14T08:00:00Z"],
  ["summer time: 09:00 in Madrid is 07:00 UTC", madrid, "2026-06-01T06:59:00Z", false, "2026-06-01T07:00:00Z"],
  ["a shift to midnight, then one from midnight", nights, "2026-12-06T04:00:00Z", true, "2026-12-06T04:00:00Z"],
  ["closed on Sunday morning after six", nights, "2026-12-06T12:00:00Z", false, "2026-12-13T03:00:00Z"],
  [
    "the opening after the autumn DST change",
    { timeZone: "America/New_York", weekly: { sun: [["09:00", "10:00"]] } },
    "2026-10-31T20:00:00Z",
    false,
    "2026-11-01T14:00:00Z",
  ],
  ["no shifts at all never opens", { timeZone: "UTC", weekly: {} }, "2026-12-07T10:00:00Z", false, null],
];

describe("business hours", () => {
  it.each(rows)("%s", (_name, hours, at, open, opening) => {
    const now = new Date(at);
    expect(isOpen(hours, now)).toBe(open);
    expect(nextOpening(hours, now)?.toISOString() ?? null).toBe(opening ? new Date(opening).toISOString() : null);
  });

  it("a team without hours is always open", () => {
    const now = new Date("2026-12-12T02:00:00Z");
    expect(isOpen(null, now)).toBe(true);
    expect(nextOpening(null, now)).toBe(now);
  });

  it("refuses schedules that cannot be read, naming what is wrong", () => {
    const bad = [
      { timeZone: "Mars/Olympus", weekly: {} },
      { timeZone: "UTC", weekly: { mon: [["18:00", "09:00"]] } },
      { timeZone: "UTC", weekly: { mon: [["9:00", "17:00"]] } },
      { timeZone: "UTC", weekly: { funday: [["09:00", "17:00"]] } },
      { timeZone: "UTC", weekly: {}, holidays: ["25/12/2026"] },
    ];
    for (const hours of bad) expect(teamHoursSchema.safeParse(hours).success, JSON.stringify(hours)).toBe(false);
    expect(teamHoursSchema.safeParse(madrid).success).toBe(true);
  });
});
