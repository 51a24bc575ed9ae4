/**
 * Which dates a windowed stream has synced, as ranges with their gaps: `--since 10-01 --until 10-05`
 * after `--start-date 11-01` covers two ranges, not `10-01..11-26`. Small pure functions over
 * `WindowedStreamState.covered`; a state an older costsync wrote has only its min..max, taken as one
 * range and called unchecked until a full refresh, or a recheck that finds it whole, covers it.
 */
import { addDays } from '../dates.js';
import type { DateRange, WindowedStreamState } from '../state/store.js';

/** A stream's coverage: its ranges (sorted, apart), and whether they were recorded as synced or inferred from an older state's min..max. Pure. */
export function coverageOf(state: WindowedStreamState): { ranges: readonly DateRange[]; checked: boolean } {
  if (state.covered !== undefined) return { ranges: state.covered, checked: state.coverageUnchecked !== true };
  if (state.syncedFrom === null || state.syncedThrough === null) return { ranges: [], checked: true };
  return { ranges: [{ from: state.syncedFrom, to: state.syncedThrough }], checked: false };
}

/** `ranges` with `range` added: sorted, and ranges that overlap or touch merged. Pure. */
export function addRange(ranges: readonly DateRange[], range: DateRange): DateRange[] {
  const all = [...ranges, range].sort((a, b) => a.from.localeCompare(b.from));
  const out: { from: string; to: string }[] = [];
  for (const r of all) {
    const last = out.at(-1);
    if (last !== undefined && r.from <= addDays(last.to, 1)) {
      if (r.to > last.to) last.to = r.to;
    } else out.push({ ...r });
  }
  return out;
}

/** `ranges` less every date before `date` (`--drop-before`). Pure. */
export function dropRangesBefore(ranges: readonly DateRange[], date: string): DateRange[] {
  return ranges.filter((r) => r.to >= date).map((r) => (r.from < date ? { from: date, to: r.to } : { ...r }));
}

/** `ranges` less every date after `date` (a watermark pulled back to today). Pure. */
export function dropRangesAfter(ranges: readonly DateRange[], date: string): DateRange[] {
  return ranges.filter((r) => r.from <= date).map((r) => (r.to > date ? { from: r.from, to: date } : { ...r }));
}

/** The dates between the ranges. Pure. */
export function gapsOf(ranges: readonly DateRange[]): DateRange[] {
  return ranges.slice(1).map((r, i) => ({ from: addDays(ranges[i]!.to, 1), to: addDays(r.from, -1) }));
}

/** Whether `ranges` hold every date of `range`. Pure. */
export function coversRange(ranges: readonly DateRange[], range: DateRange): boolean {
  return ranges.some((r) => r.from <= range.from && r.to >= range.to);
}

/** Ranges as people read them: `2026-10-01..2026-10-05, 2026-11-01..2026-11-26`. Pure. */
export function formatRanges(ranges: readonly DateRange[]): string {
  return ranges.map((r) => `${r.from}..${r.to}`).join(', ');
}
