/**
 * The recheck horizon: which stored dates an incremental run compares with the API's rollups, and the
 * windows that sync the changed ones again. Small pure functions, like the window planner's.
 */
import { addDays } from '../dates.js';
import type { DateRange } from '../state/store.js';
import type { DateWindow } from './windows.js';
import { addRange, formatRanges } from './coverage.js';

/** Days before the run's end date that every incremental run rechecks, unless `--recheck-days` says otherwise. */
export const DEFAULT_RECHECK_DAYS = 45;

/**
 * The horizon's first date: `days` before `end`, or by default the earlier of 45 days before it and
 * the first day of the previous UTC month (month-close corrections land there). Null: no recheck. Pure.
 */
export function horizonStart(end: string, days: number | null | undefined): string | null {
  if (days === 0) return null;
  if (days != null) return addDays(end, -days);
  const previousMonth = new Date(Date.UTC(Number(end.slice(0, 4)), Number(end.slice(5, 7)) - 2, 1)).toISOString().slice(0, 10);
  const back = addDays(end, -DEFAULT_RECHECK_DAYS);
  return previousMonth < back ? previousMonth : back;
}

/** `ranges` cut to `from..to`. Pure. */
export function clipRanges(ranges: readonly DateRange[], from: string, to: string): DateRange[] {
  return ranges
    .filter((r) => r.to >= from && r.from <= to)
    .map((r) => ({ from: r.from < from ? from : r.from, to: r.to > to ? to : r.to }));
}

/** `ranges` less the dates of `cut`. Pure. */
export function subtractRange(ranges: readonly DateRange[], cut: DateRange): DateRange[] {
  return ranges.flatMap((r) => {
    if (r.to < cut.from || r.from > cut.to) return [{ ...r }];
    const out: DateRange[] = [];
    if (r.from < cut.from) out.push({ from: r.from, to: addDays(cut.from, -1) });
    if (r.to > cut.to) out.push({ from: addDays(cut.to, 1), to: r.to });
    return out;
  });
}

/** Whether `date` falls in one of `ranges`. Pure. */
export function inRanges(ranges: readonly DateRange[], date: string): boolean {
  return ranges.some((r) => date >= r.from && date <= r.to);
}

/**
 * The windows that sync changed dates again: each run of adjacent dates one window (at most
 * `windowDays` long), newest first, so a stop leaves the oldest for the next run. Pure.
 */
export function changedWindows(dates: Iterable<string>, windowDays: number): DateWindow[] {
  const sorted = [...new Set(dates)].sort();
  const out: DateWindow[] = [];
  for (const date of sorted) {
    const last = out.at(-1);
    if (last !== undefined && addDays(last.end, 1) === date && dayCount(last) < windowDays) last.end = date;
    else out.push({ start: date, end: date });
  }
  return out.reverse();
}

function dayCount(w: DateWindow): number {
  return (Date.parse(`${w.end}T00:00:00Z`) - Date.parse(`${w.start}T00:00:00Z`)) / 86_400_000 + 1;
}

/** Dates as ranges for a person: `2026-10-01..2026-10-03, 2026-10-12`. Pure. */
export function summarizeDates(dates: Iterable<string>): string {
  return [...new Set(dates)]
    .reduce((ranges, d) => addRange(ranges, { from: d, to: d }), [] as DateRange[])
    .map((r) => (r.from === r.to ? r.from : formatRanges([r])))
    .join(', ');
}

/**
 * A run's older dates found changed, over its streams (a date two streams found counts once), and how
 * many were synced again: all of them when every stream synced all it found, else at least those no
 * stream left (each date a stream left may be one another also found). Pure.
 */
export function restatedCounts(streams: readonly { olderChanged: number; olderSynced: number; olderDates: readonly string[] }[]): {
  changed: number;
  synced: number;
  dates: string[];
} {
  const dates = [...new Set(streams.flatMap((s) => s.olderDates))].sort();
  const left = streams.reduce((n, s) => n + Math.max(0, s.olderChanged - s.olderSynced), 0);
  return { changed: dates.length, synced: Math.max(0, dates.length - left), dates };
}
