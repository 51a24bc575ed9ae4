import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addDays } from '../../src/dates.js';
import { confirmCompared, confirmDates, confirmedFrom, confirmedThrough, firstIncomplete } from '../../src/state/recency.js';
import { carriedState } from '../../src/state/carried.js';
import type { ConfirmedRange, SyncState } from '../../src/state/store.js';

const AT = '2026-12-08T02:00:00.000Z';
const LATER = '2026-12-09T02:00:00.000Z';

/** Each date of `ranges` with its time and completeness. */
function perDate(ranges: readonly ConfirmedRange[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of ranges) for (let d = r.from; d <= r.to; d = addDays(d, 1)) out.set(d, `${r.at} ${r.complete}`);
  return out;
}

describe('when each date was last found equal to the API', () => {
  it('calls a date complete once more than the lookback has passed since it', () => {
    expect(firstIncomplete(AT, 3)).toBe('2026-12-05');
    expect(firstIncomplete(AT, 0)).toBe('2026-12-08');
  });

  it('splits a confirmation at the lookback: older dates complete, the newest not', () => {
    expect(confirmDates(undefined, { from: '2026-11-30', to: '2026-12-08', at: AT, lookbackDays: 3 })).toEqual([
      { from: '2026-11-30', to: '2026-12-04', at: AT, complete: true },
      { from: '2026-12-05', to: '2026-12-08', at: AT, complete: false },
    ]);
  });

  it('gives a later confirmation its dates and keeps the earlier time of the others', () => {
    const first = confirmDates(undefined, { from: '2026-11-01', to: '2026-11-30', at: AT, lookbackDays: 3 });
    const second = confirmDates(first, { from: '2026-11-10', to: '2026-11-12', at: LATER, lookbackDays: 3 });
    expect(second).toEqual([
      { from: '2026-11-01', to: '2026-11-09', at: AT, complete: true },
      { from: '2026-11-10', to: '2026-11-12', at: LATER, complete: true },
      { from: '2026-11-13', to: '2026-11-30', at: AT, complete: true },
    ]);
  });

  it('confirms what a recheck compared, but the dates that differ', () => {
    const out = confirmCompared(undefined, [{ from: '2026-11-01', to: '2026-11-05' }], ['2026-11-03'], AT, 3);
    expect([...perDate(out).keys()]).toEqual(['2026-11-01', '2026-11-02', '2026-11-04', '2026-11-05']);
  });

  it('drops the dates --drop-before drops and those after a watermark pulled back', () => {
    const all = confirmDates(undefined, { from: '2026-11-01', to: '2026-11-30', at: AT, lookbackDays: 3 });
    expect(confirmedFrom(all, '2026-11-10')[0]!.from).toBe('2026-11-10');
    expect(confirmedThrough(all, '2026-11-20').at(-1)!.to).toBe('2026-11-20');
  });

  it('holds, for any confirmations in any order, each date at the time of the last one that took it', () => {
    const day = fc.integer({ min: 0, max: 40 }).map((n) => addDays('2026-11-01', n));
    const confirmation = fc.record({ a: day, b: day, hour: fc.integer({ min: 0, max: 23 }), lookbackDays: fc.integer({ min: 0, max: 5 }) });
    fc.assert(
      fc.property(fc.array(confirmation, { maxLength: 12 }), (steps) => {
        let ranges: ConfirmedRange[] = [];
        const expected = new Map<string, string>();
        steps.forEach((s, i) => {
          const from = s.a < s.b ? s.a : s.b;
          const to = s.a < s.b ? s.b : s.a;
          const at = new Date(Date.UTC(2026, 11, 1 + i, s.hour)).toISOString();
          ranges = confirmDates(ranges, { from, to, at, lookbackDays: s.lookbackDays });
          for (let d = from; d <= to; d = addDays(d, 1)) expected.set(d, `${at} ${d < firstIncomplete(at, s.lookbackDays)}`);
        });
        expect(perDate(ranges)).toEqual(expected);
        // Sorted, apart, and no two touching neighbours alike (the shortest list).
        ranges.slice(1).forEach((r, i) => {
          const prev = ranges[i]!;
          expect(r.from > prev.to).toBe(true);
          expect(addDays(prev.to, 1) === r.from && prev.at === r.at && prev.complete === r.complete).toBe(false);
        });
      }),
    );
  });

  it('is carried with the commit of a window, as the state has it after', () => {
    const planned: SyncState = {
      version: 2,
      source: { name: 'eu', baseUrl: 'http://x', keyFingerprint: 'abc' },
      updatedAt: null,
      streams: {
        line_items: {
          syncedFrom: null,
          syncedThrough: null,
          lastSuccessAt: null,
          pending: {
            from: '2026-11-01',
            to: '2026-11-10',
            fullRefresh: false,
            windows: [{ start: '2026-11-01', end: '2026-11-10', status: 'active', cursor: null, page: 1, fetched: true }],
          },
        },
      },
    };
    const carried = carriedState(planned, [
      { stream: 'line_items', start: '2026-11-01', end: '2026-11-10', confirm: { at: AT, lookbackDays: 3 } },
    ]);
    expect(carried.line_items!.confirmed).toEqual([{ from: '2026-11-01', to: '2026-11-10', at: AT, complete: true }]);
    expect(carriedState(planned).line_items!.confirmed).toBeUndefined();
  });
});
