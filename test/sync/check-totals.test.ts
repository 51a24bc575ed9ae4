// A window's check totals, gathered while its pages come (takePage), equal what the check would otherwise
// read back from the spool with DuckDB, for any pages: a window fetched whole in one run skips that read.
import fc from 'fast-check';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GROUP_BYS } from '../../src/api/types.js';
import { openWarehouse, type Warehouse } from '../../src/storage/duckdb.js';
import { clearSpool, pageGlob, writePage } from '../../src/storage/spool.js';
import { tableNames } from '../../src/storage/tables.js';
import { compareTotals, PagedTotals, type Total } from '../../src/sync/reconcile.js';
import { lineItemsStream, rollupsStream, type WindowedStreamSpec } from '../../src/sync/streams.js';
import { takePage } from '../../src/sync/window-fetch.js';
import { withTempDir } from '../support/helpers.js';

const WINDOW = { start: '2025-03-02', end: '2025-03-04', cursor: null };
// A day either side of the window too: those rows are neither stored nor counted.
const date = fc.constantFrom('2025-03-01', '2025-03-02', '2025-03-03', '2025-03-04', '2025-03-05');
const dim = fc.constantFrom(null, 'aws', 'gcp', 'compute');
const cents = fc.integer({ min: -5_000, max: 500_000 }).map((c) => c / 100);

const rollupRow = fc.record({
  date,
  group_by: fc.constantFrom(...GROUP_BYS),
  provider_type: dim,
  service: dim,
  category: dim,
  cost_usd: cents,
});
const lineItem = fc.record({ usage_date: date, provider_type: fc.constantFrom(null, 'aws', 'gcp'), net_amount_usd: cents });

/** Spools `pages` as a window's fetch does and returns the totals taken on the way and those the spool reads. */
async function bothWays(wh: Warehouse, dir: string, spec: WindowedStreamSpec, pages: Record<string, unknown>[][]) {
  await clearSpool(dir);
  const totals = new PagedTotals();
  for (const [i, records] of pages.entries()) {
    const taken = takePage({ records, nextCursor: null }, { spec, window: WINDOW, seenCursors: new Set(), totals });
    await writePage(dir, i + 1, taken.data);
  }
  const query = spec === rollupsStream ? 'sync/rollups_window_totals' : 'sync/line_items_window_totals';
  const read = await wh.query<Total>(query, [pageGlob(dir), WINDOW.start, WINDOW.end], tableNames(spec.table));
  return { paged: totals.totals(), read };
}

async function withWarehouse(fn: (wh: Warehouse, spoolDir: string) => Promise<void>): Promise<void> {
  await withTempDir(async (dir) => {
    const wh = await openWarehouse(join(dir, 'c.duckdb'));
    try {
      await fn(wh, join(dir, 'spool'));
    } finally {
      wh.close();
    }
  });
}

describe("a window's check totals taken from its pages agree with the spool's", () => {
  it('rollups: repeated rows (the same date, group_by and dimensions) count once, the last page winning', async () => {
    await withWarehouse(async (wh, dir) => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.array(rollupRow, { maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (pages) => {
          const { paged, read } = await bothWays(wh, dir, rollupsStream, pages);
          expect(compareTotals(paged, read)).toEqual([]);
        }),
        { numRuns: 25 },
      );
    });
  });

  it('line items with unique ids: every row counts, per date and provider', async () => {
    await withWarehouse(async (wh, dir) => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.array(lineItem, { maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (pages) => {
          let id = 0;
          const withIds = pages.map((page) => page.map((r) => ({ ...r, id: `li-${id++}` })));
          const { paged, read } = await bothWays(wh, dir, lineItemsStream, withIds);
          expect(compareTotals(paged, read)).toEqual([]);
        }),
        { numRuns: 25 },
      );
    });
  });
});
