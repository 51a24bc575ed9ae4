import { describe, expect, it } from 'vitest';
import type { RollupRow } from '../../src/api/types.js';
import { RollupsOnHand } from '../../src/sync/rollups-on-hand.js';

const row = (date: string, usd: number): RollupRow => ({ date, provider_type: 'aws', service: null, category: null, cost_usd: usd });

describe("the recheck's rollups on hand", () => {
  const onHand = () => {
    const held = new RollupsOnHand();
    // The recheck compared 06-01..06-20; its requests ran through the run's last date, 06-23.
    held.put('provider', { from: '2025-06-01', to: '2025-06-23', checksTo: '2025-06-20' }, [
      row('2025-06-01', 1),
      row('2025-06-05', 2),
      row('2025-06-06', 3),
      row('2025-06-22', 4),
    ]);
    return held;
  };

  it("serves a window inside the span with that window's rows only, once to each taker", () => {
    const held = onHand();
    const window = { start: '2025-06-05', end: '2025-06-06' };
    expect(held.take('rollups', 'provider', window)?.map((r) => r.cost_usd)).toEqual([2, 3]);
    expect(held.take('check', 'provider', window)?.map((r) => r.cost_usd)).toEqual([2, 3]);
    // A window fetched again after a mismatch is checked against the API as it is now.
    expect(held.take('check', 'provider', window)).toBeNull();
    expect(held.take('rollups', 'provider', window)).toBeNull();
  });

  it("gives the lookback's newest dates to the rollups stream, not to a check; nothing outside the span or of another grouping", () => {
    const held = onHand();
    const lookback = { start: '2025-06-21', end: '2025-06-23' };
    expect(held.take('check', 'provider', lookback)).toBeNull();
    expect(held.take('rollups', 'provider', lookback)?.map((r) => r.cost_usd)).toEqual([4]);
    expect(held.take('rollups', 'provider', { start: '2025-05-31', end: '2025-06-01' })).toBeNull();
    expect(held.take('rollups', 'provider', { start: '2025-06-23', end: '2025-06-24' })).toBeNull();
    expect(held.take('rollups', 'service', { start: '2025-06-05', end: '2025-06-05' })).toBeNull();
    // A window with no rows on hand is an answer too: the API has none for those dates.
    expect(held.take('rollups', 'provider', { start: '2025-06-10', end: '2025-06-11' })).toEqual([]);
  });
});
