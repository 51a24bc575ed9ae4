// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: The compacting publish: unit/publish-compact-decision.
import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { runSync } from '../../src/sync/runner.js';
import { FAST_CLIENT, memoryLogger, queryDb, tableDigest, testSyncConfig, withEmulator, withTempDir, SPAN } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };

describe('a compact warehouse', () => {
  it('when free blocks pile up (--drop-before dropped most rows), the publish rewrites compactly and the working copy takes its place, data intact', async () => {
    // Several of DuckDB's row groups (122,880 rows each): the dropped rows free whole row groups' blocks.
    await withEmulator({ ...SPAN, rowsPerDay: 10_000, clock, anomaliesPerDay: 0 }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { streams: ['line_items'], windowDays: 10 });
        const work = workingCopyPath(config.stateDir, config.db);
        expect((await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
        const big = statSync(work).size;
        const logger = memoryLogger();
        const refresh = { ...config, dropBefore: '2025-06-28', startDate: '2025-06-28' };
        expect((await runSync({ config: refresh, logger, clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
        const lines = logger.lines.map((l) => JSON.parse(l) as { msg: string; method?: string });
        expect(lines.filter((l) => l.msg.startsWith('published ')).at(-1)!.method).toBe('compact');
        expect(lines.some((l) => l.msg.startsWith('the working copy under --state-dir was replaced by the compact copy'))).toBe(true);
        // Compact: smaller, and hardly a free block left (a plain copy keeps the dropped rows' blocks free). Not
        // "under half": a file of a tenth of the rows is mostly its fixed size, which sits near half of `big`.
        for (const file of [work, config.db]) {
          expect(statSync(file).size).toBeLessThan(big);
          const [size] = await queryDb<{ free: number; total: number }>(
            file,
            'SELECT free_blocks::INT AS free, total_blocks::INT AS total FROM pragma_database_size()',
          );
          expect(size!.free / size!.total, file).toBeLessThan(0.1);
        }
        const [{ n }] = (await queryDb<{ n: number }>(config.db, 'SELECT count(*)::INT AS n FROM line_items')) as [{ n: number }];
        expect(n).toBe(3 * 10_000);
        // The rebuilt working copy is a working copy like any other: the next run goes on from it.
        const digest = await tableDigest(config.db);
        expect(
          (await runSync({ config: { ...refresh, dropBefore: undefined }, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT }))
            .outcome,
        ).toBe('success');
        expect((await tableDigest(config.db)).line_items).toEqual(digest.line_items);
      });
    });
  });
});
