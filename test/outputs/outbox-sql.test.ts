import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/storage/duckdb.js';
import { done, doneMany, markMany, pending, type OutboxItem } from '../../src/storage/outbox.js';
import { withTempDir } from '../support/helpers.js';

const rows = async (wh: Awaited<ReturnType<typeof openWarehouse>>) =>
  (await wh.sql<{ kind: string; key: string }>('SELECT kind, key FROM _costsync_outbox ORDER BY kind, key')).map(
    (r) => `${r.kind} ${r.key}`,
  );

describe("the outbox's SQL on a warehouse (sql/outbox/)", () => {
  it('doneMany clears in one statement a kind what done clears one by one: an earlier form of a row and the whole lake\'s manifest ("") included', async () => {
    await withTempDir(async (dir) => {
      const wh = await openWarehouse(join(dir, 'o.duckdb'));
      try {
        const items: OutboxItem[] = ['2025-06-01', '2025-06-02', '2025-06-03'].map((date) => ({
          kind: 'partition',
          table: 'line_items',
          source: 'a',
          date,
        }));
        await markMany(wh, [...items, { kind: 'manifest', source: 'a' }]);
        // Rows an earlier version wrote: a partition without its source, the one manifest of the whole lake.
        await wh.sql("INSERT INTO _costsync_outbox VALUES ('parquet', 'focus/2025-06-01', now()), ('manifest', '', now())");
        const before = await rows(wh);
        expect(before).toHaveLength(6);

        const read = await pending(wh, 'partition', 'manifest');
        const keep = read.find((p) => p.kind === 'partition' && p.date === '2025-06-02')!;
        await doneMany(
          wh,
          read.filter((p) => p !== keep),
        );
        expect(await rows(wh)).toEqual(['parquet line_items/a/2025-06-02']);
        await doneMany(wh, []);
        await done(wh, keep);
        expect(await rows(wh)).toEqual([]);
      } finally {
        wh.close();
      }
    });
  });

  it("migration 013 removes the keys earlier versions recorded that no version reads ('<table>/<source>/0NaN-NaN-01'), and nothing else", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, 'o.duckdb');
      let wh = await openWarehouse(path);
      try {
        // As a warehouse before 013 holds them: the junk beside readable dates of the same tables.
        await wh.sql(`INSERT INTO _costsync_outbox VALUES
          ('parquet', 'anomalies/default/0NaN-NaN-01', now()), ('parquet', 'anomaly_status_history/a/0NaN-NaN-01', now()),
          ('parquet', 'anomalies/default/2025-06-01', now()), ('run_tables', 'a', now())`);
        await wh.sql('DELETE FROM _costsync_migrations WHERE version = 13');
      } finally {
        wh.close();
      }
      wh = await openWarehouse(path);
      try {
        expect(await rows(wh)).toEqual(['parquet anomalies/default/2025-06-01', 'run_tables a']);
      } finally {
        wh.close();
      }
    });
  });
});
