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
});
