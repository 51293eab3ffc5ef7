// A team's business hours: a weekly schedule of shifts in the team's time zone (several a day for split
// shifts), and holidays closed all day. Pure: every answer is a function of (hours, now), so a test sets the
// clock and a hand-off at 3 a.m. is the same as one at 3 a.m. on a real night.
import { z } from "zod";

export const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** "09:00"; a shift may end at "24:00" (midnight at the end of its day). */
const clock = z.string().regex(/^(?:[01]\d|2[0-3]):[0-5]\d$|^24:00$/, "a time of day as HH:MM (00:00 to 24:00)");
const shift = z
  .tuple([clock, clock])
  .refine(([start, end]) => minutesOf(start) < minutesOf(end), "a shift ends after it starts (the same day)");

const knownTimeZone = (zone: string) => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

export const teamHoursSchema = z.strictObject({
  timeZone: z.string().min(1).max(100).refine(knownTimeZone, "an IANA time zone, e.g. Europe/Madrid"),
  weekly: z.partialRecord(z.enum(WEEKDAYS), z.array(shift).max(8)),
  holidays: z
    .array(z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a date as YYYY-MM-DD"))
    .max(400)
    .optional(),
});
export type TeamHours = z.infer<typeof teamHoursSchema>;

function minutesOf(time: string): number {
  const [hours, minutes] = time.split(":").map(Number);
  return (hours ?? 0) * 60 + (minutes ?? 0);
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let found = formatters.get(timeZone);
  if (!found) {
    found = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formatters.set(timeZone, found);
  }
  return found;
}

interface LocalTime {
  year: number;
  month: number;
  day: number;
  minutes: number;
}

/** The wall clock in `timeZone` at `instant`. */
function localTime(instant: Date, timeZone: string): LocalTime & { seconds: number } {
  const parts: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(instant)) {
    if (part.type !== "literal") parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year ?? 1970,
    month: parts.month ?? 1,
    day: parts.day ?? 1,
    minutes: (parts.hour ?? 0) * 60 + (parts.minute ?? 0),
    seconds: parts.second ?? 0,
  };
}

/** How far `timeZone`'s wall clock is ahead of UTC at `instant`, in ms. */
function offsetAt(instant: number, timeZone: string): number {
  const local = localTime(new Date(instant), timeZone);
  const asUtc = Date.UTC(local.year, local.month - 1, local.day, 0, local.minutes, local.seconds);
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** The instant the wall clock in `timeZone` reads this local time (a time skipped by a DST change: just after). */
function instantOf(local: LocalTime, timeZone: string): Date {
  const guess = Date.UTC(local.year, local.month - 1, local.day, 0, local.minutes);
  const first = guess - offsetAt(guess, timeZone);
  const second = guess - offsetAt(first, timeZone);
  return new Date(Math.max(first, second));
}

const dateKey = (local: Pick<LocalTime, "year" | "month" | "day">) =>
  `${local.year}-${String(local.month).padStart(2, "0")}-${String(local.day).padStart(2, "0")}`;

const weekdayOf = (local: Pick<LocalTime, "year" | "month" | "day">): Weekday =>
  WEEKDAYS[new Date(Date.UTC(local.year, local.month - 1, local.day)).getUTCDay()] ?? "sun";

function shiftsOn(hours: TeamHours, local: Pick<LocalTime, "year" | "month" | "day">): [number, number][] {
  if (hours.holidays?.includes(dateKey(local))) return [];
  return (hours.weekly[weekdayOf(local)] ?? [])
    .map(([start, end]): [number, number] => [minutesOf(start), minutesOf(end)])
    .sort((a, b) => a[0] - b[0]);
}

/** Whether the team is open at `now`; a team without hours is always open. */
export function isOpen(hours: TeamHours | null | undefined, now: Date): boolean {
  if (!hours) return true;
  const local = localTime(now, hours.timeZone);
  return shiftsOn(hours, local).some(([start, end]) => start <= local.minutes && local.minutes < end);
}

/** How far ahead openings are looked for: a schedule with none in a year (all holidays, no shifts) never opens. */
const HORIZON_DAYS = 400;

/**
 * When the team is next open: `now` itself when it is open, the start of its next shift otherwise, or null
 * when the schedule never opens.
 */
export function nextOpening(hours: TeamHours | null | undefined, now: Date): Date | null {
  if (!hours || isOpen(hours, now)) return now;
  const today = localTime(now, hours.timeZone);
  for (let offset = 0; offset <= HORIZON_DAYS; offset += 1) {
    const day = new Date(Date.UTC(today.year, today.month - 1, today.day + offset));
    const local = { year: day.getUTCFullYear(), month: day.getUTCMonth() + 1, day: day.getUTCDate() };
    for (const [start] of shiftsOn(hours, local)) {
      if (offset === 0 && start <= today.minutes) continue;
      const opening = instantOf({ ...local, minutes: start }, hours.timeZone);
      if (opening > now) return opening;
    }
  }
  return null;
}
