import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/runner.js';
import { openWarehouse } from '../../src/storage/duckdb.js';
import { CostsyncError } from '../../src/errors.js';
import { FAST_CLIENT, SPAN, memoryLogger, queryDb, testSyncConfig, withEmulator, withTempDir } from '../support/helpers.js';

describe('a heap that runs short', () => {
  it('stops the run cleanly with CS_ERR_MEMORY (exit 1) and its progress saved, and the next run goes on from it', async () => {
    let lineItemPages = 0;
    let short = false;
    let looked: () => void = () => undefined;
    const lookedAfterShort = new Promise<void>((resolve) => {
      looked = resolve;
    });
    // The heap reads as short from the third line-items page on; that page's reply waits until the
    // run has looked at the heap since (an event, not a delay).
    const heap = () => {
      if (short) looked();
      return { used: short ? 95e6 : 10e6, limit: 100e6 };
    };
    await withEmulator(
      {
        ...SPAN,
        rowsPerDay: 100,
        beforeReply: async ({ route }) => {
          if (route !== 'line-items' || ++lineItemPages !== 3) return;
          short = true;
          await lookedAfterShort;
        },
      },
      async ({ url }) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(url, dir, { streams: ['line_items'], windowDays: 30, concurrency: 1 });
          const logger = memoryLogger();
          const summary = await runSync({ config, logger, clientOptions: FAST_CLIENT, heap });
          expect(summary.outcome).toBe('failed');
          expect(summary.error).toMatchObject({ code: 'CS_ERR_MEMORY', exitCode: 1 });
          expect(logger.lines.join('\n')).toContain('the heap ran short (95 MB of its 100 MB)');
          // Stopped at a page boundary, well before the 3,000 rows: nothing committed, the cursor saved.
          expect(lineItemPages).toBeLessThan(6);
          // The run's record says what its summary and exit code say.
          const records = await queryDb<{ outcome: string; error: string }>(
            join(dir, 'costs.duckdb'),
            `SELECT outcome, error FROM sync_runs WHERE run_id = '${summary.runId}'`,
          );
          expect(records).toEqual([{ outcome: 'failed', error: expect.stringContaining('the heap ran short') }]);

          short = false;
          const pagesBefore = lineItemPages;
          const again = await runSync({ config, logger: memoryLogger(), clientOptions: FAST_CLIENT, heap });
          expect(again.outcome).toBe('success');
          const [{ n }] = (await queryDb<{ n: number }>(join(dir, 'costs.duckdb'), 'SELECT count(*) AS n FROM line_items')) as [
            { n: number },
          ];
          expect(n).toBe(30 * 100);
          // The second run went on from the saved cursor: fewer than the window's 3 pages fetched again.
          expect(lineItemPages - pagesBefore).toBeLessThan(3);
        });
      },
    );
  });

  it("a statement past DuckDB's memory limit fails with costsync's memory error, and the warehouse goes on working", async () => {
    await withTempDir(async (dir) => {
      const wh = await openWarehouse(join(dir, 'w.duckdb'));
      try {
        // A list aggregate cannot spill: 3 million values do not fit in 2 MB.
        await wh.sql("SET memory_limit = '2MB'");
        const failed = await wh.sql('SELECT length(list(range)) AS n FROM range(3000000)').then(
          () => null,
          (error: unknown) => error,
        );
        expect(failed).toBeInstanceOf(CostsyncError);
        expect(failed).toMatchObject({ code: 'CS_ERR_MEMORY', exitCode: 1 });
        expect((failed as CostsyncError).message).toMatch(/^DuckDB ran out of memory at its limit of 64MB: failed to allocate/);
        expect((failed as CostsyncError).hint).toMatch(/COSTSYNC_DUCKDB_MEMORY_LIMIT/);
        await wh.sql("SET memory_limit = '64MB'");
        expect(await wh.sql<{ n: number }>('SELECT count(*) AS n FROM range(10)')).toEqual([{ n: 10 }]);
      } finally {
        wh.close();
      }
    });
  });
});
