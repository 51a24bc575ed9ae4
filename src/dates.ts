/**
 * Calendar-date arithmetic on `YYYY-MM-DD` strings, always in UTC whatever the machine's time zone.
 * Dates are handled as day numbers (days since 1970-01-01) so that arithmetic never touches local time.
 */
import { InternalError } from './errors.js';

const DAY_MS = 86_400_000;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True when `text` is `YYYY-MM-DD` and names a real calendar date (no 2025-02-30). */
export function isCalendarDate(text: string): boolean {
  const m = DATE_RE.exec(text);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1) return false;
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

/** Day number of a valid `YYYY-MM-DD` date. Throws on anything else, so callers validate first. */
export function toDayNumber(date: string): number {
  if (!isCalendarDate(date))
    throw new InternalError(`not a calendar date: ${JSON.stringify(date)} (dates are checked before they get here)`);
  return Date.parse(`${date}T00:00:00Z`) / DAY_MS;
}

/** Day numbers' texts already made: the emulator and the sync's window arithmetic ask for the same few days over and over. */
const dayTexts = new Map<number, string>();

/** `YYYY-MM-DD` for a day number. */
export function fromDayNumber(day: number): string {
  let text = dayTexts.get(day);
  if (text === undefined) {
    text = new Date(day * DAY_MS).toISOString().slice(0, 10);
    // Bounded: a long-lived process (the emulator, a backfill of decades) keeps at most this many.
    if (dayTexts.size >= 100_000) dayTexts.clear();
    dayTexts.set(day, text);
  }
  return text;
}

/** The date `days` after `date` (negative goes back). */
export function addDays(date: string, days: number): string {
  return fromDayNumber(toDayNumber(date) + days);
}

/** Number of days from `from` to `to` inclusive; 0 when `to` is before `from`. */
export function daysInclusive(from: string, to: string): number {
  return Math.max(0, toDayNumber(to) - toDayNumber(from) + 1);
}

/** The UTC calendar date of an epoch-millisecond instant. */
export function utcDate(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}

/** Milliseconds at 00:00:00 UTC of `date`. */
export function startOfDayMs(date: string): number {
  return toDayNumber(date) * DAY_MS;
}

export { DAY_MS };

/**
 * A duration as a person wrote it: `8 s`, `45 min`, `1 min 30 s`, `2 h`, `1 h 30 min`; under a
 * second, `250 ms`. Never rounds a short duration to zero minutes. Pure.
 */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const totalSeconds = Math.round(ms / 1000);
  const h = Math.floor(totalSeconds / 3600);
  const m = Math.floor((totalSeconds % 3600) / 60);
  const s = totalSeconds % 60;
  const parts = [h > 0 ? `${h} h` : '', m > 0 ? `${m} min` : '', s > 0 && h === 0 ? `${s} s` : ''].filter((p) => p !== '');
  return parts.length === 0 ? '0 s' : parts.join(' ');
}
