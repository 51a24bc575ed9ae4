// The Iceberg lake's slower cases, run by the slow tier only (a `.slow.test.ts`): a lake
// damaged or moved (mended by --iceberg-repair), and lakes another state directory changed. The fast tier's
// test/lake/iceberg.test.ts keeps the round trip through icebird, repairTable and the rewrite arithmetic.
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { SUMMARY } from '../../src/iceberg/metadata.js';
import { loadTable } from '../../src/iceberg/table.js';
import { directoryTarget } from '../../src/outputs/target.js';
import { openWorkingCopy } from '../../src/storage/working-copy.js';
import {
  LAKE_CLOCK as clock,
  LAKE_ENV as ENV,
  expectEqualToWarehouse,
  lakeSyncArgs as syncArgs,
  metadataOf,
  icebergDifferences,
  icebergFileCheck,
} from '../support/iceberg.js';
import {
  cli,
  queryDb,
  run,
  SPAN,
  withEmulator,
  withTempDir,
  syncCommand,
  backfillFlags,
  syncStoppedAt,
  testSyncConfig,
} from '../support/helpers.js';
import { gatherStatus } from '../../src/commands/status.js';
import { ICEBERG_TABLES } from '../../src/storage/tables.js';

describe('a damaged or moved table', () => {
  it('a deleted manifest list, or a lake moved elsewhere: the sync names the table and the fix (CS_ERR_LAKE_DAMAGED); --iceberg-repair mends the table from what it can read and the warehouse, its readable history kept', async () => {
    await withEmulator(
      { ...SPAN, rowsPerDay: 10, anomaliesPerDay: 2, clock, restatement: { days: 5, changeRate: 0.5 } },
      async (emulator) =>
        withTempDir(async (dir) => {
          const { url } = emulator;
          const lake = join(dir, 'lake');
          expect(await run(syncArgs(url, dir), ENV)).toMatchObject({ code: 0 });
          emulator.restate();
          expect(await run(syncArgs(url, dir, ['--since', SPAN.endDate]), ENV)).toMatchObject({ code: 0 });
          const lakeFellBehind = (stderr: string) =>
            stderr
              .split('\n')
              .filter(Boolean)
              .map((l) => JSON.parse(l) as { msg: string; code?: string })
              .find((l) => l.msg.startsWith('the lake fell behind'));

          // A copy elsewhere: its metadata still names the files where they were written.
          cpSync(lake, join(dir, 'moved'), { recursive: true });
          const moved = await run(
            syncArgs(url, dir).map((a) => (a === lake ? join(dir, 'moved') : a)),
            ENV,
          );
          expect(moved.code).toBe(ExitCode.FAILED);
          expect(lakeFellBehind(moved.stderr)).toMatchObject({ code: 'CS_ERR_LAKE_DAMAGED' });
          expect(lakeFellBehind(moved.stderr)!.msg).toMatch(
            new RegExp(
              `The Iceberg table at ${pathToFileURL(join(dir, 'moved')).href}/\\w+ names ${pathToFileURL(lake).href}/\\S+, outside itself: it was moved or copied from where it was written\\.\\n  hint: Point --out at where the lake was written\\.`,
            ),
          );

          const table = pathToFileURL(join(lake, 'line_items')).href;
          const metadataOf = () => loadTable(directoryTarget(lake), 'line_items').then((t) => t.metadata!);
          const before = await metadataOf();
          const lost = before.snapshots.find((x) => x['snapshot-id'] === before['current-snapshot-id'])!;
          expect(before.snapshots.length).toBeGreaterThan(1);
          rmSync(new URL(lost['manifest-list']));
          const damaged = await run(syncArgs(url, dir), ENV);
          expect(damaged.code).toBe(ExitCode.FAILED);
          expect(lakeFellBehind(damaged.stderr)).toMatchObject({ code: 'CS_ERR_LAKE_DAMAGED' });
          expect(lakeFellBehind(damaged.stderr)!.msg).toMatch(
            new RegExp(
              `The Iceberg table at ${table} lacks ${table}/metadata/snap-\\S+\\.avro, the manifest list of its snapshot ${lost['snapshot-id']}: it was deleted outside costsync\\.\\n  hint: Run the same sync with --iceberg-repair: `,
            ),
          );
          // The fix the hint names works: a new snapshot, the rows written again, the readable history kept.
          const mended = await run(syncArgs(url, dir, ['--iceberg-repair']), ENV);
          expect(mended.code, mended.stderr).toBe(0);
          expect(mended.stderr).toContain('repaired the Iceberg table');
          expectEqualToWarehouse(await icebergDifferences(join(dir, 'c.duckdb'), pathToFileURL(lake).href));
          expect(await icebergFileCheck(lake, pathToFileURL(lake).href)).toMatchObject({ missing: [] });
          const after = await metadataOf();
          const ids = after.snapshots.map((x) => x['snapshot-id']);
          expect(ids).not.toContain(lost['snapshot-id']);
          for (const kept of before.snapshots.filter((x) => x !== lost)) expect(ids).toContain(kept['snapshot-id']);
          expect(after.snapshots.some((x) => x.summary[SUMMARY.repairedFrom] === String(lost['snapshot-id']))).toBe(true);
          // A table that reads whole is left as it is.
          const again = await run(syncArgs(url, dir, ['--iceberg-repair']), ENV);
          expect(again.code, again.stderr).toBe(0);
          expect(again.stderr).not.toContain('repaired');
        }),
    );
  });
});

describe('a lake another state directory changed', () => {
  it('the months whose rows differ from the warehouse are rewritten: a run of another state directory that committed --drop-before to the lake and was killed before it published leaves nothing missing for the next run of the first', async () => {
    await withEmulator({ ...SPAN, startDate: '2025-05-20', rowsPerDay: 10, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const lake = join(dir, 'lake');
        const args = (state: string, extra: string[] = []) => [
          ...syncCommand(url, dir, ['--format', 'iceberg', '--out', lake, '--start-date', '2025-05-20', '--until', SPAN.endDate]),
          '--state-dir',
          join(dir, state),
          '--rate-limit',
          '100000',
          '--streams',
          'line_items',
          ...extra,
        ];
        expect(await run(args('a'), { COSTSYNC_API_KEY: 'demo-key' })).toMatchObject({ code: 0 });
        // The other state directory drops May's first days, commits that to the lake, and dies before it publishes;
        // the next nightly's lookback changes only June.
        const killed = await cli(args('b', ['--drop-before', '2025-05-25']), {
          COSTSYNC_API_KEY: 'demo-key',
          COSTSYNC_FAILPOINT: 'iceberg-commit:1',
        });
        expect(killed.signal).toBe('SIGKILL');
        const [{ n }] = (await queryDb<{ n: number }>(
          join(dir, 'c.duckdb'),
          "SELECT count(*)::INTEGER AS n FROM line_items WHERE usage_date < DATE '2025-05-25'",
        )) as [{ n: number }];
        expect(n).toBe(50);
        expect(await run(args('a'), { COSTSYNC_API_KEY: 'demo-key' })).toMatchObject({ code: 0 });
        expectEqualToWarehouse(
          await icebergDifferences(join(dir, 'c.duckdb'), pathToFileURL(lake).href, { tables: ['line_items', 'focus'] }),
        );
      });
    });
  });

  it('a second run over a lake holding anomalies leaves nothing pending: the tables with no month partition are compared whole, and no key it cannot read is recorded; anomalies only the lake holds are removed', async () => {
    await withEmulator({ ...SPAN, startDate: '2025-06-20', rowsPerDay: 5, anomaliesPerDay: 2, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const args = syncArgs(url, dir, ['--start-date', '2025-06-20', '--until', SPAN.endDate]);
        for (let i = 0; i < 2; i++) expect(await run(args, ENV)).toMatchObject({ code: 0 });
        const wh = await openWorkingCopy(join(dir, 'c.duckdb'), join(dir, 'state'), { lake: 'iceberg' });
        try {
          expect(await wh.sql('SELECT kind, key FROM _costsync_outbox')).toEqual([]);
          expect(Number((await wh.sql<{ n: number }>('SELECT count(*) AS n FROM anomalies'))[0]!.n)).toBeGreaterThan(0);
          // The warehouse holds none of the source's anomalies, the lake all of them (what another state directory's killed run leaves).
          await wh.sql('DELETE FROM anomalies');
        } finally {
          wh.close();
        }
        expect(await run([...args, '--streams', 'line_items'], ENV)).toMatchObject({ code: 0 });
        // The current snapshot holds no row (icebird reads no snapshot without a data manifest).
        const metadata = metadataOf(join(dir, 'lake'), 'anomalies');
        const current = metadata.snapshots.find((x) => x['snapshot-id'] === metadata['current-snapshot-id']);
        expect(current?.summary['total-records']).toBe('0');
      });
    });
  });

  it("the metrics count an Iceberg lake's pending work as the lake's: a stopped run's run tables under lake, no manifest (an Iceberg lake has none); a complete run leaves none, nor does a run with no lake", async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 10, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const metrics = join(dir, 'costsync.prom');
        const pending = () =>
          Object.fromEntries(
            [...readFileSync(metrics, 'utf8').matchAll(/costsync_outbox_pending\{output="(\w+)"\} (\d+)/g)].map((m) => [
              m[1],
              Number(m[2]),
            ]),
          );
        // The warehouse and state directory the spawned runs below (syncArgs) use.
        const config = testSyncConfig(url, dir, {
          db: join(dir, 'c.duckdb'),
          format: 'iceberg',
          out: join(dir, 'lake'),
          metricsFile: metrics,
          windowDays: 3,
        });
        const { summary } = await syncStoppedAt(config, { ...clock, sleep: async () => undefined }, 2, 'line_items');
        expect(summary.outcome).toBe('stopped');
        const stopped = pending();
        expect(stopped.manifest).toBe(0);
        expect(stopped.lake).toBeGreaterThan(0);
        // Status names the lake, stopped in its first run (how much it lacks depends on how far its drains got
        // before the stop: they move its mark); once caught up, with nothing to write.
        const lakes = async () => (await gatherStatus(config.db, config.stateDir)).lakes;
        expect(await lakes()).toEqual([expect.objectContaining({ lake: join(dir, 'lake'), format: 'iceberg', source: 'default' })]);
        const wh = await openWorkingCopy(config.db, config.stateDir);
        try {
          const kinds = await wh.sql<{ kind: string }>('SELECT DISTINCT kind FROM _costsync_outbox ORDER BY kind');
          expect(kinds.map((k) => k.kind)).not.toContain('manifest');
          expect(kinds.map((k) => k.kind)).toContain('run_tables');
        } finally {
          wh.close();
        }
        expect(await run(syncArgs(url, dir, ['--metrics-file', metrics]), ENV)).toMatchObject({ code: 0 });
        expect(pending()).toEqual({ lake: 0, manifest: 0, notify: 0, publish: 0 });
        expect(await lakes()).toEqual([expect.objectContaining({ lake: join(dir, 'lake'), partitions_to_write: 0, dates: null })]);
        // With no lake, the run tables' mark waits for a lake a later run writes: no work of this run's.
        expect(await run(syncArgs(url, dir, ['--metrics-file', metrics], true), ENV)).toMatchObject({ code: 0 });
        expect(pending()).toEqual({ lake: 0, manifest: 0, notify: 0, publish: 0 });
      });
    });
  });

  it("status's record of the lake's tables names this run's lake: after a run into another --out, every table is recorded as it is in the lake the last run wrote", async () => {
    await withEmulator({ ...SPAN, startDate: '2025-06-20', rowsPerDay: 5, anomaliesPerDay: 2, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const into = (lake: string) =>
          syncCommand(url, dir, [
            '--format',
            'iceberg',
            '--out',
            join(dir, lake),
            ...backfillFlags(7),
            '--start-date',
            '2025-06-20',
            '--quiet',
          ]);
        for (const lake of ['lake', 'lake2', 'lake']) expect(await run(into(lake), ENV)).toMatchObject({ code: 0 });
        const recorded = await queryDb<{ t: string; f: string }>(
          join(dir, 'c.duckdb'),
          'SELECT table_name AS t, metadata_file AS f FROM _costsync_lake_tables',
        );
        expect(recorded.map((r) => r.t).sort()).toEqual(Object.keys(ICEBERG_TABLES).sort());
        for (const { t, f } of recorded) expect({ t, f }).toEqual({ t, f: expect.stringContaining(`${join(dir, 'lake')}/${t}/metadata/`) });
      });
    });
  });
});
