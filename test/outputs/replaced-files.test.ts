import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openWarehouse } from '../../src/storage/duckdb.js';
import { withTempDir } from '../support/helpers.js';

// The Parquet lake writes each batch's rows to the same scratch path in a fresh directory, then reads
// each date back; spooled pages are replaced at their paths too. With DuckDB's external file cache on,
// 197 of 200 such reads saw the file before (same size and modification time), and a date read no rows.
it('a file replaced at the same path is read as it is now, not as DuckDB cached it', async () => {
  await withTempDir(async (dir) => {
    const wh = await openWarehouse(join(dir, 'w.duckdb'));
    try {
      const scratch = join(dir, 'scratch');
      const file = join(scratch, 'dates.parquet');
      const seen: number[] = [];
      for (let batch = 0; batch < 30; batch++) {
        rmSync(scratch, { recursive: true, force: true });
        mkdirSync(scratch);
        // Every batch has as many rows of as many dates, 31 days on from the one before.
        await wh.sql(`COPY (SELECT DATE '2026-01-01' + (r % 31 + ${batch * 31})::INT AS date, r AS v FROM range(170) t(r))
          TO '${file}' (FORMAT parquet, ROW_GROUP_SIZE_BYTES '8MB')`);
        const [row] = await wh.sql<{ n: number }>(
          `SELECT count(*)::INT AS n FROM read_parquet('${file}') WHERE date = DATE '2026-01-01' + ${batch * 31}`,
        );
        seen.push(row!.n);
      }
      expect(seen).toEqual(Array.from({ length: 30 }, () => 6));
    } finally {
      wh.close();
    }
  });
});
