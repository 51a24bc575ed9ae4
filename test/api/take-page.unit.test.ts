import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { lineItemsStream, rollupsStream } from '../../src/sync/streams.js';
import { IdHashes, hash52 } from '../../src/sync/id-set.js';
import { PagedTotals, totalKey, type Total } from '../../src/sync/reconcile.js';
import { takePage } from '../../src/sync/window-fetch.js';

const WINDOW = { start: '2025-01-01', end: '2025-01-07', cursor: null };
const item = (id: string, date: string, provider: string | null, usd: number | null) => ({
  id,
  usage_date: date,
  provider_type: provider,
  net_amount_usd: usd,
});

const sorted = (totals: Total[]) => totals.sort((x, y) => (x.date + x.key).localeCompare(y.date + y.key));

describe('takePage (pure)', () => {
  it("sums the amounts inside the window per date and provider, as the spool's totals query groups them", () => {
    const totals = new PagedTotals();
    const records = [
      item('a', '2025-01-02', 'aws', 1.25),
      item('b', '2025-01-02', 'aws', 2),
      item('c', '2025-01-02', null, 5),
      item('d', '2025-01-09', 'aws', 100),
      item('e', '2025-01-03', 'gcp', null),
    ];
    const taken = takePage(
      { records, nextCursor: 'n1' },
      { spec: lineItemsStream, window: WINDOW, seenCursors: new Set(), idHashes: new IdHashes(), totals },
    );
    expect(taken).toMatchObject({ rows: 4, outside: 1, nextCursor: 'n1', loop: false });
    expect(sorted(totals.totals())).toEqual([
      { date: '2025-01-02', key: '', amount: 5 },
      { date: '2025-01-02', key: 'aws', amount: 3.25 },
      { date: '2025-01-03', key: 'gcp', amount: 0 },
    ]);
    expect(totalKey('2025-01-02', undefined)).toBe(totalKey('2025-01-02', null));
  });

  it("adds every id's hash, so an id seen on an earlier page shows as a repeat", () => {
    const ids = new IdHashes();
    takePage(
      { records: [item('a', '2025-01-02', 'aws', 1), item('b', '2025-01-09', 'aws', 1)], nextCursor: 'n1' },
      { spec: lineItemsStream, window: WINDOW, seenCursors: new Set(), idHashes: ids },
    );
    expect(ids.size).toBe(2);
    expect(ids.hasRepeat()).toBe(false);
    takePage(
      { records: [item('a', '2025-01-02', 'aws', 1)], nextCursor: null },
      { spec: lineItemsStream, window: WINDOW, seenCursors: new Set(), idHashes: ids, totals: null },
    );
    expect(ids.size).toBe(3);
    expect(ids.hasRepeat()).toBe(true);
    const alone = new IdHashes();
    alone.add(hash52('a'));
    expect(alone.hasRepeat()).toBe(false);
  });

  it('sums rollups per date and group_by, a repeated row replacing the earlier one as the staging keeps the last', () => {
    const totals = new PagedTotals();
    const row = (date: string, groupBy: string, service: string | null, usd: number) => ({
      date,
      group_by: groupBy,
      provider_type: null,
      service,
      category: null,
      cost_usd: usd,
    });
    const take = (records: Record<string, unknown>[]) =>
      takePage({ records, nextCursor: null }, { spec: rollupsStream, window: WINDOW, seenCursors: new Set(), totals });
    take([row('2025-01-02', 'service', 'ec2', 4), row('2025-01-02', 'service', 's3', 1), row('2025-01-08', 'service', 'ec2', 50)]);
    take([row('2025-01-02', 'service', 'ec2', 6), row('2025-01-02', 'provider', null, 7)]);
    expect(sorted(totals.totals())).toEqual([
      { date: '2025-01-02', key: 'provider', amount: 7 },
      { date: '2025-01-02', key: 'service', amount: 7 },
    ]);
  });

  it("deduplicates rollups on the fields the spool's staging query partitions by", () => {
    const staged = readFileSync(new URL('../../sql/sync/rollups_staged.sql', import.meta.url), 'utf8');
    const partition = /PARTITION BY ([\w, ]+?)\s+ORDER BY/.exec(staged)?.[1]?.split(/,\s*/);
    expect(partition).toEqual(rollupsStream.check.paged?.distinctBy);
  });
});
