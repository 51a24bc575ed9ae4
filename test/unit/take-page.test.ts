import { describe, expect, it } from 'vitest';
import { lineItemsStream } from '../../src/sync/streams.js';
import { HashSet52 } from '../../src/sync/id-set.js';
import { totalKey, totalsOf } from '../../src/sync/reconcile.js';
import { takePage } from '../../src/sync/windowed.js';

const WINDOW = { start: '2025-01-01', end: '2025-01-07', cursor: null };
const item = (id: string, date: string, provider: string | null, usd: number | null) => ({ id, usage_date: date, provider_type: provider, net_amount_usd: usd });

describe('takePage (pure)', () => {
  it('sums the amounts inside the window per date and provider, as the spool\'s totals query groups them', () => {
    const totals = new Map<string, number>();
    const records = [
      item('a', '2025-01-02', 'aws', 1.25), item('b', '2025-01-02', 'aws', 2), item('c', '2025-01-02', null, 5),
      item('d', '2025-01-09', 'aws', 100), item('e', '2025-01-03', 'gcp', null),
    ];
    const taken = takePage(lineItemsStream, { records, nextCursor: 'n1' }, WINDOW, new Set(), new HashSet52(), totals);
    expect(taken).toMatchObject({ rows: 4, outside: 1, nextCursor: 'n1', loop: false, repeatedId: false });
    expect(totalsOf(totals).sort((x, y) => (x.date + x.key).localeCompare(y.date + y.key))).toEqual([
      { date: '2025-01-02', key: '', amount: 5 },
      { date: '2025-01-02', key: 'aws', amount: 3.25 },
      { date: '2025-01-03', key: 'gcp', amount: 0 },
    ]);
    expect(totalKey('2025-01-02', undefined)).toBe(totalKey('2025-01-02', null));
  });

  it('sums nothing when given no totals, and flags an id seen before', () => {
    const ids = new HashSet52();
    takePage(lineItemsStream, { records: [item('a', '2025-01-02', 'aws', 1)], nextCursor: 'n1' }, WINDOW, new Set(), ids);
    const again = takePage(lineItemsStream, { records: [item('a', '2025-01-02', 'aws', 1)], nextCursor: null }, WINDOW, new Set(), ids, null);
    expect(again.repeatedId).toBe(true);
  });
});
