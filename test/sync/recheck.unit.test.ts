import { describe, expect, it } from 'vitest';
import { changedWindows, clipRanges, horizonStart, restatedCounts, subtractRange, summarizeDates } from '../../src/plan/horizon.js';
import { planRun, remainingWindows, type WindowRequest } from '../../src/plan/windows.js';
import { coverageChecked, decideRecheck, recheckScope, type Comparison, type RecheckScope } from '../../src/sync/recheck.js';
import type { WindowedStreamState } from '../../src/state/store.js';
import type { RollupRow } from '../../src/api/types.js';

const req = (over: Partial<WindowRequest> = {}): WindowRequest => ({
  until: '2026-11-26',
  startDate: '2026-01-01',
  lookbackDays: 3,
  windowDays: 30,
  fullRefresh: false,
  ...over,
});

const synced = (from: string, to: string): WindowedStreamState => ({
  syncedFrom: from,
  syncedThrough: to,
  covered: [{ from, to }],
  lastSuccessAt: null,
  pending: null,
});

describe('the recheck horizon (pure)', () => {
  it('reaches 45 days back, or to the first of the previous month when that is earlier; a setting replaces it; 0 turns it off', () => {
    expect(horizonStart('2026-11-26', null)).toBe('2026-10-01');
    expect(horizonStart('2026-11-30', null)).toBe('2026-10-01');
    // Late in a month the previous month's first day is earlier than 45 days back; early in one, 45 days is.
    expect(horizonStart('2026-12-31', null)).toBe('2026-11-01');
    expect(horizonStart('2026-12-03', null)).toBe('2026-10-19');
    expect(horizonStart('2026-03-31', null)).toBe('2026-02-01');
    expect(horizonStart('2026-01-10', null)).toBe('2025-11-26');
    expect(horizonStart('2026-11-26', 10)).toBe('2026-11-16');
    expect(horizonStart('2026-11-26', 0)).toBeNull();
  });

  it('compares covered dates within the horizon, never those the run syncs anyway, nor gaps', () => {
    const scope = recheckScope(
      {
        line_items: synced('2026-06-01', '2026-11-26'),
        rollups: {
          ...synced('2026-06-01', '2026-11-26'),
          covered: [
            { from: '2026-06-01', to: '2026-10-20' },
            { from: '2026-10-25', to: '2026-11-26' },
          ],
        },
      },
      req(),
      { streams: ['line_items', 'rollups'], recheckDays: null },
    )!;
    // The lookback (3 days up to the watermark, then up to --until) is synced anyway.
    expect(scope.ranges.line_items).toEqual([{ from: '2026-10-01', to: '2026-11-23' }]);
    expect(scope.ranges.rollups).toEqual([
      { from: '2026-10-01', to: '2026-10-20' },
      { from: '2026-10-25', to: '2026-11-23' },
    ]);
    expect([scope.from, scope.to]).toEqual(['2026-10-01', '2026-11-23']);
    // Nothing to recheck: a full refresh, the setting at 0, a first run, a stream not synced.
    expect(
      recheckScope({ line_items: synced('2026-06-01', '2026-11-26') }, req({ fullRefresh: true }), {
        streams: ['line_items'],
        recheckDays: null,
      }),
    ).toBeNull();
    expect(recheckScope({ line_items: synced('2026-06-01', '2026-11-26') }, req(), { streams: ['line_items'], recheckDays: 0 })).toBeNull();
    expect(recheckScope({}, req(), { streams: ['line_items', 'rollups'], recheckDays: null })).toBeNull();
    expect(recheckScope({ line_items: synced('2026-06-01', '2026-11-26') }, req(), { streams: ['rollups'], recheckDays: null })).toBeNull();
    // Nothing before --drop-before.
    const dropped = recheckScope({ line_items: synced('2026-06-01', '2026-11-26') }, req({ dropBefore: '2026-11-01' }), {
      streams: ['line_items'],
      recheckDays: null,
    })!;
    expect(dropped.ranges.line_items).toEqual([{ from: '2026-11-01', to: '2026-11-23' }]);
    // A resumed plan's windows already stored are compared (the API may have changed since); those still to fetch are not.
    const pending = {
      from: '2026-10-10',
      to: '2026-11-26',
      fullRefresh: false,
      windows: [
        { start: '2026-10-10', end: '2026-11-08', status: 'done' as const, cursor: null, page: 0, fetched: false },
        { start: '2026-11-09', end: '2026-11-26', status: 'todo' as const, cursor: null, page: 0, fetched: false },
      ],
    };
    const resumed = recheckScope({ line_items: { ...synced('2026-06-01', '2026-10-09'), pending } }, req({ since: '2026-10-10' }), {
      streams: ['line_items'],
      recheckDays: null,
    })!;
    expect(resumed.ranges.line_items).toEqual([{ from: '2026-10-01', to: '2026-11-08' }]);
    // A backfill's own dates are not compared again.
    const backfill = recheckScope({ line_items: synced('2026-06-01', '2026-11-26') }, req({ since: '2026-11-01' }), {
      streams: ['line_items'],
      recheckDays: null,
    })!;
    expect(backfill.ranges.line_items).toEqual([{ from: '2026-10-01', to: '2026-10-31' }]);
  });

  it('range arithmetic: clip, subtract, runs of adjacent changed dates newest first, dates for a person', () => {
    expect(
      clipRanges(
        [
          { from: '2026-01-01', to: '2026-01-10' },
          { from: '2026-02-01', to: '2026-02-05' },
        ],
        '2026-01-05',
        '2026-02-02',
      ),
    ).toEqual([
      { from: '2026-01-05', to: '2026-01-10' },
      { from: '2026-02-01', to: '2026-02-02' },
    ]);
    expect(subtractRange([{ from: '2026-01-01', to: '2026-01-10' }], { from: '2026-01-04', to: '2026-01-05' })).toEqual([
      { from: '2026-01-01', to: '2026-01-03' },
      { from: '2026-01-06', to: '2026-01-10' },
    ]);
    expect(changedWindows(['2026-10-03', '2026-10-01', '2026-10-02', '2026-10-09', '2026-10-02'], 30)).toEqual([
      { start: '2026-10-09', end: '2026-10-09' },
      { start: '2026-10-01', end: '2026-10-03' },
    ]);
    expect(changedWindows(['2026-10-01', '2026-10-02', '2026-10-03'], 2)).toEqual([
      { start: '2026-10-03', end: '2026-10-03' },
      { start: '2026-10-01', end: '2026-10-02' },
    ]);
    expect(summarizeDates(['2026-10-03', '2026-10-01', '2026-10-02', '2026-10-09'])).toBe('2026-10-01..2026-10-03, 2026-10-09');
  });

  it('plans the changed dates after the lookback, newest first, and a resumed plan keeps them once', () => {
    const recheck = [
      { start: '2026-11-01', end: '2026-11-01' },
      { start: '2026-10-05', end: '2026-10-06' },
    ];
    const { plan } = planRun(synced('2026-06-01', '2026-11-25'), req({ recheck }));
    expect(remainingWindows(plan).map((w) => [w.start, w.end, w.recheck === true])).toEqual([
      ['2026-11-23', '2026-11-26', false],
      ['2026-11-01', '2026-11-01', true],
      ['2026-10-05', '2026-10-06', true],
    ]);
    // Stopped after the lookback: the next run resumes, the recheck finds the same dates, each is planned once.
    const stopped = { ...plan, windows: plan.windows.map((w, i) => (i === 0 ? { ...w, status: 'done' as const } : w)) };
    const resumed = planRun({ ...synced('2026-06-01', '2026-11-25'), pending: stopped }, req({ recheck }));
    expect(resumed.resumed).toBe(true);
    expect(remainingWindows(resumed.plan).map((w) => w.start)).toEqual(['2026-11-01', '2026-10-05']);
  });
});

const scope: RecheckScope = {
  horizon: '2026-10-01',
  from: '2026-10-01',
  to: '2026-10-31',
  ranges: { line_items: [{ from: '2026-10-01', to: '2026-10-31' }], rollups: [{ from: '2026-10-01', to: '2026-10-31' }] },
};
const row = (date: string, provider: string, usd: string): RollupRow =>
  ({ date, provider_type: provider, service: null, category: null, cost_usd: usd }) as unknown as RollupRow;

function comparison(apiUsd: string, storedLines: string, storedRollup = apiUsd): Comparison {
  const api = new Map([['provider' as const, [row('2026-10-05', 'aws', apiUsd)]]]);
  const stored = [
    { date: '2026-10-05', group_by: 'provider', provider_type: 'aws', service: null, category: null, usd: storedRollup },
    { date: '2026-10-05', group_by: 'line_items', provider_type: 'aws', service: null, category: null, usd: storedLines },
  ];
  const differences = [];
  if (storedRollup !== apiUsd)
    differences.push({ source: 's', date: '2026-10-05', check: 'provider', group: 'aws', stored_usd: 0, api_usd: 0, difference_usd: 0 });
  if (storedLines !== apiUsd)
    differences.push({ source: 's', date: '2026-10-05', check: 'line_items', group: 'aws', stored_usd: 0, api_usd: 0, difference_usd: 0 });
  return { differences, api, stored, requests: 1 };
}

describe('what the recheck syncs again (pure)', () => {
  it('a changed rollup group syncs the rollups; line items that differ from the provider rollups sync the line items', () => {
    const d = decideRecheck(comparison('10.00', '8.00', '9.00'), scope, {});
    expect(d.changed).toEqual({ line_items: ['2026-10-05'], rollups: ['2026-10-05'] });
    expect(d.accepted).toEqual([]);
  });

  it('a date still differing after it was synced again against the same rollups is kept, until the rollups or the stored rows change', () => {
    const first = decideRecheck(comparison('10.00', '8.00'), scope, {});
    expect(first.changed.line_items).toEqual(['2026-10-05']);
    // Not synced yet (the run stopped): found again.
    expect(decideRecheck(comparison('10.00', '8.00'), scope, first.rechecked).changed.line_items).toEqual(['2026-10-05']);
    const memory = { '2026-10-05': { ...first.rechecked['2026-10-05']!, synced: true } };
    const kept = decideRecheck(comparison('10.00', '8.00'), scope, memory);
    expect(kept.changed.line_items).toEqual([]);
    expect(kept.accepted).toEqual(['2026-10-05']);
    expect(decideRecheck(comparison('10.00', '8.00'), scope, kept.rechecked).accepted).toEqual(['2026-10-05']);
    // The rollups changed: fetched again.
    expect(decideRecheck(comparison('11.00', '8.00'), scope, kept.rechecked).changed.line_items).toEqual(['2026-10-05']);
    // The stored rows changed (deleted by hand): fetched again.
    expect(decideRecheck(comparison('10.00', '0.00'), scope, kept.rechecked).changed.line_items).toEqual(['2026-10-05']);
    // The date agrees now: its memory goes.
    expect(decideRecheck(comparison('10.00', '10.00'), scope, kept.rechecked).rechecked).toEqual({});
  });
});

describe('coverage an older costsync wrote (pure)', () => {
  it('is checked once the recheck compared all of it and found nothing to sync again', () => {
    // An older state: min..max only.
    const older: WindowedStreamState = { syncedFrom: '2026-10-05', syncedThrough: '2026-10-30', lastSuccessAt: null, pending: null };
    expect(coverageChecked(older, scope, [])).toMatchObject({ covered: [{ from: '2026-10-05', to: '2026-10-30' }] });
    expect(coverageChecked(older, scope, [])!.coverageUnchecked).toBeUndefined();
    // A date to sync again, or coverage older than the horizon: still unchecked.
    expect(coverageChecked(older, scope, ['2026-10-07'])).toBeNull();
    expect(coverageChecked({ ...older, syncedFrom: '2026-09-01' }, scope, [])).toBeNull();
    // Coverage recorded as synced needs nothing.
    expect(coverageChecked(synced('2026-10-05', '2026-10-30'), scope, [])).toBeNull();
  });
});

describe('the counts of the restated event (pure)', () => {
  it('counts a date two streams found once, and says at least how many were synced again', () => {
    const lineItems = { olderChanged: 2, olderSynced: 2, olderDates: ['2025-06-02', '2025-06-01'] };
    const rollups = { olderChanged: 2, olderSynced: 2, olderDates: ['2025-06-01', '2025-06-03'] };
    expect(restatedCounts([lineItems, rollups])).toEqual({ changed: 3, synced: 3, dates: ['2025-06-01', '2025-06-02', '2025-06-03'] });
    // Rollups left one date for the next run: which, the counts do not say, so at least 2 of 3 were synced.
    expect(restatedCounts([lineItems, { ...rollups, olderSynced: 1 }])).toMatchObject({ changed: 3, synced: 2 });
    expect(restatedCounts([])).toEqual({ changed: 0, synced: 0, dates: [] });
  });
});
