import { describe, expect, it } from 'vitest';
import { decode, done, encode, mark, markMany, pending, type OutboxItem, type OutboxStore } from '../../src/storage/outbox.js';

/** An outbox in memory, with the SQL files' meaning (pending: oldest key first, per stored kind). */
function memoryStore(rows: [string, string][] = []): OutboxStore & { rows: Set<string> } {
  const set = new Set(rows.map(([k, key]) => `${k}\u0000${key}`));
  return {
    rows: set,
    run: (name, params = []) => {
      const [kind, key] = params as [string, string];
      if (name === 'outbox/mark') set.add(`${kind}\u0000${key}`);
      else if (name === 'outbox/mark_many') for (const k of key.split('\n')) set.add(`${kind}\u0000${k}`);
      else if (name === 'outbox/done') set.delete(`${kind}\u0000${key}`);
      else throw new Error(name);
      return Promise.resolve(1);
    },
    query: <T>(name: string, params: unknown[] = []) => {
      if (name !== 'outbox/pending') throw new Error(name);
      const keys = [...set]
        .map((r) => r.split('\u0000') as [string, string])
        .filter(([k]) => k === params[0])
        .map(([, key]) => ({ key }))
        .sort((a, b) => a.key.localeCompare(b.key));
      return Promise.resolve(keys as T[]);
    },
  };
}

const ITEMS: OutboxItem[] = [
  { kind: 'partition', table: 'line_items', source: 'acme-eu', date: '2025-06-01' },
  { kind: 'iceberg-commit', table: 'focus', source: 'default', commitId: 'run-1.3', months: [664, 665] },
  { kind: 'iceberg-commit', table: 'sync_runs', source: 'default', commitId: 'run-1.4', months: null },
  { kind: 'iceberg-expiry', table: 'line_items', sources: ['a', 'b_2'], runId: 'run-1' },
  { kind: 'manifest', source: 'acme-eu' },
  { kind: 'manifest', source: null },
  { kind: 'run-tables', source: 'acme-eu' },
  { kind: 'publish' },
  { kind: 'upload' },
];

describe('the outbox (storage/outbox.ts): typed items, stored as (kind, key)', () => {
  it('every item decodes to itself', () => {
    for (const item of ITEMS) expect(decode(encode(item))).toEqual(item);
  });

  it('stores what earlier versions stored, so either reads the other', () => {
    expect(ITEMS.map(encode)).toEqual([
      // Both lakes take their pending dates from here, under the Parquet lake's kind.
      { kind: 'parquet', key: 'line_items/acme-eu/2025-06-01' },
      { kind: 'iceberg', key: 'focus/default/run-1.3/664,665' },
      { kind: 'iceberg', key: 'sync_runs/default/run-1.4/*' },
      { kind: 'iceberg', key: 'line_items/a,b_2/run-1.expire/' },
      { kind: 'manifest', key: 'acme-eu' },
      { kind: 'manifest', key: '' },
      // New in this version: earlier versions leave the rows alone (and write their run tables at every finish).
      { kind: 'run_tables', key: 'acme-eu' },
      { kind: 'publish', key: '' },
      { kind: 'publish', key: 'upload' },
    ]);
  });

  it("reads the forms of earlier versions: a partition without a source is the 'default' source's, '' the whole lake's manifest", () => {
    expect(decode({ kind: 'parquet', key: 'rollups_daily/2025-06-03' })).toEqual({
      kind: 'partition',
      table: 'rollups_daily',
      source: 'default',
      date: '2025-06-03',
    });
    expect(decode({ kind: 'manifest', key: '' })).toEqual({ kind: 'manifest', source: null });
    // A table this version does not know is still an item (its callers clear it).
    expect(decode({ kind: 'parquet', key: 'budgets/default/2025-06-03' })).toMatchObject({ kind: 'partition', table: 'budgets' });
  });

  it('leaves alone what it cannot read: an unknown kind, a malformed key', () => {
    expect(decode({ kind: 'webhook', key: 'x' })).toBeNull();
    expect(decode({ kind: 'parquet', key: 'line_items' })).toBeNull();
    expect(decode({ kind: 'parquet', key: 'line_items/default/June' })).toBeNull();
    expect(decode({ kind: 'iceberg', key: 'line_items/default/run-1.2/x,y' })).toBeNull();
  });

  it('pending reads the kinds asked for; done clears the row an item was read from, an earlier form included', async () => {
    const store = memoryStore([
      ['parquet', 'line_items/2025-06-01'],
      ['parquet', 'line_items/default/2025-06-01'],
      ['parquet', 'not a key'],
      ['publish', ''],
      ['manifest', ''],
    ]);
    const partitions = await pending(store, 'partition');
    expect(partitions.map(({ row: _row, ...item }) => item)).toEqual([
      { kind: 'partition', table: 'line_items', source: 'default', date: '2025-06-01' },
      { kind: 'partition', table: 'line_items', source: 'default', date: '2025-06-01' },
    ]);
    for (const p of partitions) await done(store, p);
    expect([...store.rows].sort()).toEqual(['manifest\u0000', 'parquet\u0000not a key', 'publish\u0000']);

    expect(await pending(store, 'publish', 'upload')).toHaveLength(1);
    await mark(store, { kind: 'upload' });
    await done(store, { kind: 'publish' });
    expect((await pending(store, 'publish', 'upload')).map((p) => p.kind)).toEqual(['upload']);

    await markMany(store, [
      { kind: 'partition', table: 'focus', source: 'a', date: '2025-06-02' },
      { kind: 'manifest', source: 'a' },
    ]);
    expect((await pending(store, 'manifest')).map((m) => m.source)).toEqual([null, 'a']);
    expect((await pending(store, 'partition')).map((p) => p.row)).toEqual([{ kind: 'parquet', key: 'focus/a/2025-06-02' }]);
  });
});
