import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addDays } from '../../src/dates.js';
import { addRange, coverageOf, dropRangesAfter, dropRangesBefore, formatRanges, gapsOf } from '../../src/plan/coverage.js';
import { completePlan, dropBefore } from '../../src/plan/windows.js';
import type { DateRange, PendingPlan } from '../../src/state/store.js';

const plan = (from: string, to: string, fullRefresh = false): PendingPlan => ({ from, to, fullRefresh, windows: [] });
const empty = { syncedFrom: null, syncedThrough: null, lastSuccessAt: null, pending: null };

describe('coverage: the dates a stream synced, as ranges with gaps', () => {
  it('row 4 of the issue: --start-date 11-01 --until 11-10, then --since 10-01 --until 10-05, then a nightly', () => {
    let st = completePlan(empty, plan('2026-11-01', '2026-11-10'), 'a');
    st = completePlan(st, plan('2026-10-01', '2026-10-05'), 'b');
    st = completePlan(st, plan('2026-11-08', '2026-11-26'), 'c');
    expect(coverageOf(st)).toEqual({
      ranges: [
        { from: '2026-10-01', to: '2026-10-05' },
        { from: '2026-11-01', to: '2026-11-26' },
      ],
      checked: true,
    });
    expect(formatRanges(gapsOf(coverageOf(st).ranges))).toBe('2026-10-06..2026-10-31');
    // The min..max stays, for what reads it.
    expect(st).toMatchObject({ syncedFrom: '2026-10-01', syncedThrough: '2026-11-26' });
  });

  it('an older state (min..max only) is one unchecked range until a full refresh syncs all of it again', () => {
    const old = { ...empty, syncedFrom: '2026-08-01', syncedThrough: '2026-11-20' };
    expect(coverageOf(old)).toEqual({ ranges: [{ from: '2026-08-01', to: '2026-11-20' }], checked: false });
    const nightly = completePlan(old, plan('2026-11-18', '2026-11-26'), 'n');
    expect(coverageOf(nightly).checked).toBe(false);
    const partial = completePlan(nightly, plan('2026-09-01', '2026-11-26', true), 'p');
    expect(coverageOf(partial).checked).toBe(false);
    const full = completePlan(nightly, plan('2026-08-01', '2026-11-26', true), 'f');
    expect(coverageOf(full)).toEqual({ ranges: [{ from: '2026-08-01', to: '2026-11-26' }], checked: true });
  });

  it('--drop-before clips the ranges; the watermark starts at the first date left', () => {
    let st = completePlan(empty, plan('2026-10-01', '2026-10-05'), 'a');
    st = completePlan(st, plan('2026-11-01', '2026-11-26'), 'b');
    expect(dropBefore(st, '2026-10-03')).toMatchObject({
      syncedFrom: '2026-10-03',
      covered: [
        { from: '2026-10-03', to: '2026-10-05' },
        { from: '2026-11-01', to: '2026-11-26' },
      ],
    });
    expect(dropBefore(st, '2026-10-20')).toMatchObject({ syncedFrom: '2026-11-01', covered: [{ from: '2026-11-01', to: '2026-11-26' }] });
    expect(dropRangesAfter(st.covered!, '2026-11-10')).toEqual([
      { from: '2026-10-01', to: '2026-10-05' },
      { from: '2026-11-01', to: '2026-11-10' },
    ]);
  });

  it('addRange: any ranges added in any order cover exactly the days of their union, sorted, apart', () => {
    const day = fc.integer({ min: 0, max: 60 }).map((n) => addDays('2026-01-01', n));
    const range = fc.tuple(day, day).map(([a, b]): DateRange => (a <= b ? { from: a, to: b } : { from: b, to: a }));
    fc.assert(
      fc.property(fc.array(range, { maxLength: 8 }), (ranges) => {
        const merged = ranges.reduce<DateRange[]>((acc, r) => addRange(acc, r), []);
        const days = (rs: readonly DateRange[]) => {
          const set = new Set<string>();
          for (const r of rs) for (let d = r.from; d <= r.to; d = addDays(d, 1)) set.add(d);
          return [...set].sort();
        };
        expect(days(merged)).toEqual(days(ranges));
        for (const [i, r] of merged.entries()) if (i > 0) expect(r.from > addDays(merged[i - 1]!.to, 1)).toBe(true);
        expect(dropRangesBefore(merged, '2026-01-20').every((r) => r.from >= '2026-01-20')).toBe(true);
      }),
    );
  });
});
