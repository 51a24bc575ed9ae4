/**
 * The API's rollups a source's run already holds: the recheck asks each grouping once over the horizon
 * through the run's last date, and what it got serves the lookback's rollups windows and the line items'
 * checks of every window inside that span, instead of asking the same groupings again per window.
 * Each consumer takes a window once: a check asked again (its window was fetched again after a
 * mismatch) goes to the API, so a restatement that came after the recheck's answer is still seen. The
 * checks take only the dates the recheck compared (older ones, synced again because they differed):
 * the lookback's newest days may still be filling, and their check asks after the pages, as it always did.
 */
import type { GroupBy, RollupRow } from '../api/types.js';

/** Who takes a window's rows: the rollups stream stores them, the line items' check compares with them. */
export type OnHandConsumer = 'rollups' | 'check';

/** The span the recheck's answers cover, and the last date a check may take (the recheck's last compared date). */
export interface HeldSpan {
  from: string;
  to: string;
  checksTo: string;
}

interface Held extends HeldSpan {
  rows: readonly RollupRow[];
}

/** Whether `consumer` is served from `span` for a window of `start..end` (the dry run counts by it, as the run takes). Pure. */
export function servedFrom(span: HeldSpan, consumer: OnHandConsumer, start: string, end: string): boolean {
  return span.from <= start && end <= (consumer === 'check' ? span.checksTo : span.to);
}

export class RollupsOnHand {
  private readonly held = new Map<GroupBy, Held>();
  private readonly taken = new Set<string>();

  /** The API's answer for `groupBy` over `from..to` (every row of those dates); checks take from it up to `checksTo`. */
  put(groupBy: GroupBy, range: HeldSpan, rows: readonly RollupRow[]): void {
    this.held.set(groupBy, { ...range, rows });
  }

  /** Whether `consumer` may take `groupBy` over the whole of `window`. */
  covers(consumer: OnHandConsumer, groupBy: GroupBy, window: { start: string; end: string }): boolean {
    const h = this.held.get(groupBy);
    return h !== undefined && servedFrom(h, consumer, window.start, window.end);
  }

  /** The rows of `window` for `groupBy`, the first time `consumer` asks for that window; null: ask the API. */
  take(consumer: OnHandConsumer, groupBy: GroupBy, window: { start: string; end: string }): RollupRow[] | null {
    if (!this.covers(consumer, groupBy, window)) return null;
    const key = `${consumer}|${groupBy}|${window.start}..${window.end}`;
    if (this.taken.has(key)) return null;
    this.taken.add(key);
    return this.held.get(groupBy)!.rows.filter((r) => r.date >= window.start && r.date <= window.end);
  }
}
