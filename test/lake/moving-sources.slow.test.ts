// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: Run again at more points by test/lake/moving-sources-more.slow and test/slow/iceberg-catalog-kill.
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stateObjectKey } from '../../src/outputs/lake-seed.js';
import { lakeDifferences, queryDb, withEmulator, withTempDir } from '../support/helpers.js';
import { emulatorInput, expectSame, requestsOf, runners } from '../support/moving.js';

// Iceberg tables and lakes in a bucket or behind a catalog: test/lake/moving-sources-more.slow.test.ts.

/** Every run id the lake's run table holds for `source`. */
async function lakeRuns(db: string, lake: string, source: string): Promise<string[]> {
  const rows = await queryDb<{ run_id: string }>(
    db,
    `SELECT run_id FROM read_parquet('${lake}/sync_runs/source=${source}/data.parquet') ORDER BY run_id`,
  );
  return rows.map((r) => r.run_id);
}

describe('a source moved to another runner sharing the Parquet lake', () => {
  it("resumes where it was: the next run makes a nightly's requests, the lake's rows are unchanged, and the new warehouse holds its history", async () => {
    await withEmulator(emulatorInput, async (emulator) => {
      await withTempDir(async (dir) => {
        const { lake, a, b } = runners(emulator.url, dir);
        await a.sync(['s', 't']);
        const nightly = await a.sync(['s', 't']);
        expect(existsSync(join(lake, stateObjectKey('s')))).toBe(true);
        const runsBefore = await lakeRuns(a.db, lake, 's');

        // B takes s over; A's warehouse still holds s as the lake had it, value for value.
        const moved = await b.sync(['s']);
        expect(requestsOf(moved.summary, 's')).toEqual(requestsOf(nightly.summary, 's'));
        expect(moved.lines.join('\n')).toContain('going on from the state the lake carries');
        expectSame(await lakeDifferences(a.db, lake, ['s']));
        expectSame(await lakeDifferences(b.db, lake, ['s']));
        // The run history follows too: A's runs of s, and B's.
        const runsAfter = await lakeRuns(b.db, lake, 's');
        expect(runsAfter).toEqual(expect.arrayContaining(runsBefore));
        expect(runsAfter.length).toBe(runsBefore.length + 1);

        // Each runner goes on with its own: the lake is the union of both warehouses.
        await a.sync(['t']);
        const again = await b.sync(['s']);
        expect(requestsOf(again.summary, 's')).toEqual(requestsOf(nightly.summary, 's'));
        expectSame(await lakeDifferences(a.db, lake, ['t']));
        expectSame(await lakeDifferences(b.db, lake, ['s']));
        expect(readdirSync(join(lake, 'line_items')).sort()).toEqual(['source=s', 'source=t']);

        // Late data B syncs, then s moves back: A's rows of s are older than the lake's, and are replaced by them.
        emulator.restate();
        await b.sync(['s'], { lookbackDays: 5 });
        const runsOfB = await lakeRuns(b.db, lake, 's');
        // Lookback 0: the return fetches nothing restated, so only the lake can bring A up to date.
        const back = await a.sync(['s', 't'], { lookbackDays: 0 });
        expect(back.lines.join('\n')).toContain("s: its rows here are older than the lake's");
        expectSame(await lakeDifferences(b.db, lake, ['s']));
        expectSame(await lakeDifferences(a.db, lake, ['s', 't']));
        expect(await lakeRuns(a.db, lake, 's')).toEqual(expect.arrayContaining(runsOfB));
      });
    });
  });

  it('a state object listing a partition the lake lacks: the rows that are there are read back, and a backfill with a warning restores the rest', async () => {
    await withEmulator(emulatorInput, async ({ url }) => {
      await withTempDir(async (dir) => {
        const { lake, a, b } = runners(url, dir);
        const backfill = await a.sync(['s']);
        const object = JSON.parse(readFileSync(join(lake, stateObjectKey('s')), 'utf8')) as { tables: Record<string, string[]> };
        const lost = object.tables.line_items![3]!;
        rmSync(join(lake, `line_items/source=s/date=${lost}/data.parquet`));

        const moved = await b.sync(['s']);
        expect(requestsOf(moved.summary, 's')).toEqual(requestsOf(backfill.summary, 's'));
        const warnings = moved.lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'warn');
        expect(warnings.map((w) => w.msg).join('\n')).toContain(`lacks 1 partition(s) its state lists (line_items/${lost})`);
        // Nothing lost: the lake and B's warehouse again hold every row A had.
        expectSame(await lakeDifferences(a.db, lake, ['s']));
        expectSame(await lakeDifferences(b.db, lake, ['s']));
      });
    });
  });

  it('a warehouse that records a run of a source but holds no row of it reads the source back without adding that run twice', async () => {
    await withEmulator(emulatorInput, async ({ url }) => {
      await withTempDir(async (dir) => {
        const { lake, a, b } = runners(url, dir);
        // A's run of s stops before s's turn: A records the run, but holds no row and no state of s. The stop
        // writes nothing to the lake: the run's rows of the run tables wait in A's outbox.
        await a.sync(['s'], {}, { outcome: 'stopped', signal: AbortSignal.abort('stop requested') });
        expect(existsSync(join(lake, 'sync_runs/source=s/data.parquet'))).toBe(false);
        const [{ run_id: stopped } = { run_id: '' }] = await queryDb<{ run_id: string }>(a.db, 'SELECT run_id FROM sync_runs');
        expect(await queryDb(a.db, "SELECT key FROM _costsync_outbox WHERE kind = 'run_tables'")).toEqual([{ key: 's' }]);
        // B, a copy of A's warehouse (its outbox too), syncs s: the lake now holds s's rows, and both runs in its run table.
        mkdirSync(dirname(b.db), { recursive: true });
        copyFileSync(a.db, b.db);
        await b.sync(['s']);
        expect(await lakeRuns(b.db, lake, 's')).toContain(stopped);

        // s looks new to A, which reads it back: the lake's copy of the stopped run is the one A records already.
        const back = await a.sync(['s']);
        expect(back.lines.join('\n')).toContain('s: read back from the lake');
        // A records each run once: its stopped run, B's, and this one, as the lake's run table now has them.
        const runs = (await queryDb<{ run_id: string }>(a.db, `SELECT run_id FROM sync_runs WHERE source = 's' ORDER BY run_id`)).map(
          (r) => r.run_id,
        );
        expect(runs).toHaveLength(3);
        expect(runs).toContain(stopped);
        expect(await lakeRuns(a.db, lake, 's')).toEqual(runs);
        expectSame(await lakeDifferences(a.db, lake, ['s']));
      });
    });
  });
});
