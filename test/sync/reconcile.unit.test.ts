import { describe, expect, it } from 'vitest';
import { ProviderRollupExchange, compareTotals, describeMismatches, sameAmount } from '../../src/sync/reconcile.js';

describe('window reconciliation arithmetic', () => {
  it('a rounding-only difference is not a mismatch; a cent and more is', () => {
    expect(sameAmount(100.004, 100)).toBe(true);
    expect(sameAmount(0.1 + 0.2, 0.3)).toBe(true);
    expect(sameAmount(100.02, 100)).toBe(false);
    // Sums of a million float amounts: a part in a million of the larger is rounding.
    expect(sameAmount(2_500_000.9, 2_500_000)).toBe(true);
    expect(sameAmount(2_500_004, 2_500_000)).toBe(false);
  });

  it('compares per date and key, a key on one side only counting as zero on the other, sorted', () => {
    const line = [
      { date: '2025-06-02', key: 'aws', amount: 10 },
      { date: '2025-06-02', key: 'aws', amount: 5.004 },
      { date: '2025-06-01', key: 'gcp', amount: 7 },
      { date: '2025-06-01', key: 'zero', amount: 0.001 },
    ];
    const rollup = [
      { date: '2025-06-02', key: 'aws', amount: 15 },
      { date: '2025-06-01', key: 'azure', amount: 3 },
    ];
    expect(compareTotals(line, rollup)).toEqual([
      { date: '2025-06-01', key: 'azure', left: null, right: 3 },
      { date: '2025-06-01', key: 'gcp', left: 7, right: null },
    ]);
    expect(compareTotals(rollup, rollup)).toEqual([]);
  });

  it('describes the first few mismatches with amounts and says how many more', () => {
    const many = Array.from({ length: 7 }, (_, i) => ({ date: `2025-06-0${i + 1}`, key: 'aws', left: 1, right: null }));
    const text = describeMismatches(many, ['line items', 'provider rollup'], 2);
    expect(text).toBe(
      '2025-06-01 aws: line items $1.00, provider rollup none; 2025-06-02 aws: line items $1.00, provider rollup none; and 5 more',
    );
  });
});

describe('the provider rollups handed from line items to the rollups stream', () => {
  it('gives a window its rows only once the line-items check fetched them (after the last page), once', async () => {
    const exchange = new ProviderRollupExchange();
    const w = { start: '2025-06-01', end: '2025-06-07' };
    const order: string[] = [];
    const taken = exchange.take(w).then((rows) => {
      order.push('taken');
      return rows;
    });
    exchange.expect([w, { start: '2025-06-08', end: '2025-06-14' }]);
    for (let i = 0; i < 5; i++) await Promise.resolve();
    order.push('delivered');
    const rows = [{ date: '2025-06-01', cost_usd: 1, provider_type: 'aws', service: null, category: null }];
    exchange.deliver(w, rows);
    expect(await taken).toEqual(rows);
    expect(order).toEqual(['delivered', 'taken']);
    expect(await exchange.take(w)).toBeNull();
  });

  it('never keeps the rollups stream waiting once the line-items stream has ended', async () => {
    const exchange = new ProviderRollupExchange();
    const w = { start: '2025-06-01', end: '2025-06-07' };
    exchange.expect([w]);
    const taken = exchange.take(w);
    exchange.openAll();
    expect(await taken).toBeNull();
    // A window the line-items stream did not plan is not waited for.
    expect(await exchange.take({ start: '2025-07-01', end: '2025-07-07' })).toBeNull();
  });
});
