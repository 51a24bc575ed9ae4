/**
 * When each stored date was last found equal to the API (FOCUS 1.3's Recency, docs/focus-and-push.md):
 * a window's commit, or a recheck that found its sums equal, confirms its dates at that time. Kept per
 * windowed stream as ranges of dates sharing a time (`WindowedStreamState.confirmed`), carried with the
 * rest of the progress. Small pure functions, like the coverage's.
 */
import { addDays } from '../dates.js';
import type { ConfirmedRange, DateRange } from './store.js';

export type { ConfirmedRange };

/** A confirmation: dates found equal to the API at `at`, under a run's `--lookback-days` (the days the API may still be filling). */
export interface Confirmation extends DateRange {
  readonly at: string;
  readonly lookbackDays: number;
}

/**
 * The first date that is not complete when confirmed at `at`: a date is complete once more than the
 * lookback's days have passed since it (the days every run syncs again because the API may still fill
 * them). Pure.
 */
export function firstIncomplete(at: string, lookbackDays: number): string {
  return addDays(at.slice(0, 10), -lookbackDays);
}

/** `confirmed` with the confirmation's dates taking its time (in place of any earlier one): sorted, like neighbours merged. Pure. */
export function confirmDates(confirmed: readonly ConfirmedRange[] | undefined, c: Confirmation): ConfirmedRange[] {
  if (c.from > c.to) return [...(confirmed ?? [])];
  const boundary = firstIncomplete(c.at, c.lookbackDays);
  const parts: ConfirmedRange[] = [];
  if (c.from < boundary) parts.push({ from: c.from, to: c.to < boundary ? c.to : addDays(boundary, -1), at: c.at, complete: true });
  if (c.to >= boundary) parts.push({ from: c.from > boundary ? c.from : boundary, to: c.to, at: c.at, complete: false });
  const kept = subtractRange(confirmed ?? [], c);
  return mergeConfirmed([...kept, ...parts]);
}

/** Ranges sorted by date, each touching neighbour of the same time and completeness merged. Pure. */
function mergeConfirmed(ranges: readonly ConfirmedRange[]): ConfirmedRange[] {
  const out: ConfirmedRange[] = [];
  for (const r of [...ranges].sort((a, b) => a.from.localeCompare(b.from))) {
    const last = out.at(-1);
    if (last !== undefined && last.at === r.at && last.complete === r.complete && addDays(last.to, 1) === r.from) out[out.length - 1] = { ...last, to: r.to };
    else out.push({ ...r });
  }
  return out;
}

/**
 * What a recheck found equal: the dates of `compared` but those that differ (`unequal`), each confirmed
 * at `at`. Pure.
 */
export function confirmCompared(
  confirmed: readonly ConfirmedRange[] | undefined,
  compared: readonly DateRange[],
  unequal: Iterable<string>,
  at: string,
  lookbackDays: number,
): ConfirmedRange[] {
  let equal: DateRange[] = compared.map((r) => ({ from: r.from, to: r.to }));
  for (const date of unequal) equal = subtractRange(equal, { from: date, to: date });
  let out = [...(confirmed ?? [])];
  for (const r of equal) out = confirmDates(out, { ...r, at, lookbackDays });
  return out;
}

/** `ranges` less the dates of `cut`. Pure. */
function subtractRange<R extends DateRange>(ranges: readonly R[], cut: DateRange): R[] {
  return ranges.flatMap((r) => {
    if (r.to < cut.from || r.from > cut.to) return [{ ...r }];
    const out: R[] = [];
    if (r.from < cut.from) out.push({ ...r, to: addDays(cut.from, -1) });
    if (r.to > cut.to) out.push({ ...r, from: addDays(cut.to, 1) });
    return out;
  });
}

/** `confirmed` less every date before `date` (`--drop-before`). Pure. */
export function confirmedFrom(confirmed: readonly ConfirmedRange[], date: string): ConfirmedRange[] {
  return confirmed.filter((r) => r.to >= date).map((r) => (r.from < date ? { ...r, from: date } : { ...r }));
}

/** `confirmed` less every date after `date` (a watermark pulled back to today). Pure. */
export function confirmedThrough(confirmed: readonly ConfirmedRange[], date: string): ConfirmedRange[] {
  return confirmed.filter((r) => r.from <= date).map((r) => (r.to > date ? { ...r, to: date } : { ...r }));
}
