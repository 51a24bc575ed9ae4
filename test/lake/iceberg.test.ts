import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/api/resilience.js';
import { ExitCode } from '../../src/errors.js';
import type { TableMetadata } from '../../src/iceberg/metadata.js';
import { SUMMARY } from '../../src/iceberg/metadata.js';
import {
  COMMIT_ATTEMPTS,
  commitSource,
  directoryCatalog,
  expireTable,
  liveFiles,
  loadTable,
  repairTable,
  sourceTag,
} from '../../src/iceberg/table.js';
import { icebergLake } from '../../src/outputs/iceberg.js';
import { directoryTarget, type OutputTarget } from '../../src/outputs/target.js';
import { openWorkingCopy, workingCopyPath } from '../../src/storage/working-copy.js';
import {
  LAKE_CLOCK as clock,
  LAKE_ENV as ENV,
  expectEqualToWarehouse,
  lakeSyncArgs as syncArgs,
  metadataOf,
  bareDataFile,
  icebergDifferences,
  icebergFileCheck,
  placeholderCommit,
  readIceberg,
} from '../support/iceberg.js';
import { queryDb, run, SPAN, withEmulator, withTempDir } from '../support/helpers.js';
import { monthsToRewrite, sourceToRewrite } from '../../src/outputs/iceberg.js';

describe('--format iceberg (a directory)', () => {
  it('every table reads back through icebird equal to the warehouse; a restatement is one overwrite snapshot, and the snapshot before it still reads the old values', async () => {
    await withEmulator(
      { ...SPAN, rowsPerDay: 60, anomaliesPerDay: 2, clock, restatement: { days: 5, changeRate: 0.5, deleteRate: 0.1 } },
      async (emulator) => {
        await withTempDir(async (dir) => {
          const lake = join(dir, 'lake');
          expect(await run(syncArgs(emulator.url, dir), ENV)).toMatchObject({ code: 0 });
          expectEqualToWarehouse(await icebergDifferences(join(dir, 'c.duckdb'), pathToFileURL(lake).href));
          expect((await readIceberg(pathToFileURL(join(lake, 'sync_runs')).href)).map((r) => r.run_id)).toEqual(
            (await queryDb<{ run_id: string }>(join(dir, 'c.duckdb'), 'SELECT run_id FROM sync_runs')).map((r) => r.run_id),
          );

          // The file-system catalog's layout: a hint naming the newest metadata file, format version 2.
          const before = metadataOf(lake, 'line_items');
          const versionBefore = Number(readFileSync(join(lake, 'line_items', 'metadata', 'version-hint.text'), 'utf8'));
          expect(before).toMatchObject({ 'format-version': 2, location: pathToFileURL(join(lake, 'line_items')).href });
          expect(before.snapshots.at(-1)!.summary).toMatchObject({
            [SUMMARY.source]: 'default',
            [SUMMARY.runId]: expect.any(String),
            [SUMMARY.window]: expect.stringMatching(/^2025-06-\d\d\.\.2025-06-\d\d$/),
          });
          // One file per source and month.
          expect(readdirSync(join(lake, 'line_items', 'data', 'source=default'))).toEqual(['usage_date_month=2025-06']);
          const lastDays = "usage_date >= DATE '2025-06-26'";
          const [{ usd: oldUsd }] = (await queryDb<{ usd: number }>(
            join(dir, 'c.duckdb'),
            `SELECT round(sum(net_amount_usd), 2) AS usd FROM line_items WHERE ${lastDays}`,
          )) as [{ usd: number }];

          emulator.restate();
          expect(await run(syncArgs(emulator.url, dir, ['--lookback-days', '7']), ENV)).toMatchObject({ code: 0 });
          expectEqualToWarehouse(await icebergDifferences(join(dir, 'c.duckdb'), pathToFileURL(lake).href));
          const [{ usd: newUsd }] = (await queryDb<{ usd: number }>(
            join(dir, 'c.duckdb'),
            `SELECT round(sum(net_amount_usd), 2) AS usd FROM line_items WHERE ${lastDays}`,
          )) as [{ usd: number }];
          expect(newUsd).not.toBe(oldUsd);

          const after = metadataOf(lake, 'line_items');
          const restated = after.snapshots.at(-1)!;
          expect(restated.summary).toMatchObject({ operation: 'overwrite', 'deleted-data-files': '1', 'added-data-files': '1' });
          expect(restated.summary[SUMMARY.runId]).not.toBe(before.snapshots.at(-1)!.summary[SUMMARY.runId]);
          // Time travel: the metadata before the restatement still reads the old numbers.
          const sumOf = (rows: Record<string, unknown>[]) =>
            Math.round(
              rows
                .filter((r) => String((r.usage_date as Date).toISOString()) >= '2025-06-26')
                .reduce((n, r) => n + Number(r.net_amount_usd), 0) * 100,
            ) / 100;
          const tableUrl = pathToFileURL(join(lake, 'line_items')).href;
          expect(sumOf(await readIceberg(tableUrl, { metadataFileName: `v${versionBefore}.metadata.json` }))).toBe(oldUsd);
          expect(sumOf(await readIceberg(tableUrl))).toBe(newUsd);
        });
      },
    );
  });

  it('a warehouse pointed at a new --out fills every table from itself, dates outside the lookback included', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 60, anomaliesPerDay: 2, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect(await run(syncArgs(url, dir, [], true), ENV)).toMatchObject({ code: 0 });
        expect(existsSync(join(dir, 'lake'))).toBe(false);
        const filled = await run(
          syncArgs(url, dir).filter((a) => a !== '--quiet'),
          ENV,
        );
        expect(filled.code, filled.stderr).toBe(0);
        expectEqualToWarehouse(await icebergDifferences(join(dir, 'c.duckdb'), pathToFileURL(join(dir, 'lake')).href));
        // The run's JSON summary and `status` name each table's current metadata file.
        const current = (table: string) =>
          pathToFileURL(
            join(
              dir,
              'lake',
              table,
              'metadata',
              `v${readFileSync(join(dir, 'lake', table, 'metadata', 'version-hint.text'), 'utf8').trim()}.metadata.json`,
            ),
          ).href;
        const finished = (filled.stdout + filled.stderr)
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { msg: string; lakeTables?: Record<string, string> })
          .find((l) => l.msg === 'sync finished');
        expect(Object.keys(finished!.lakeTables!)).toHaveLength(9);
        expect(finished!.lakeTables!.line_items).toBe(current('line_items'));
        const status = await run(['status', '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state'), '--format', 'json'], ENV);
        const lakeTables = (JSON.parse(status.stdout) as { lakeTables: { table: string; metadata_file: string }[] }).lakeTables;
        expect(lakeTables.find((t) => t.table === 'focus')!.metadata_file).toBe(current('focus'));
      });
    });
  });
});

describe('one --out, one format', () => {
  it('a Parquet lake is refused to --format iceberg and Iceberg tables to --format parquet (exit 2, naming the fix; the dry run too), nothing written', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect(await run(syncArgs(url, dir, ['--format', 'parquet', '--streams', 'line_items']), ENV)).toMatchObject({ code: 0 });
        const refused = await run(syncArgs(url, dir, ['--streams', 'line_items']), ENV);
        expect(refused.code).toBe(2);
        expect(refused.stderr).toContain('holds a Parquet lake');
        expect(refused.stderr).toContain('new --out');
        expect(existsSync(join(dir, 'lake', 'line_items', 'metadata'))).toBe(false);

        const other = join(dir, 'other');
        expect(await run(syncArgs(url, other, ['--streams', 'line_items']), ENV)).toMatchObject({ code: 0 });
        const back = await run(syncArgs(url, other, ['--format', 'parquet', '--streams', 'line_items']), ENV);
        expect(back.code).toBe(2);
        expect(back.stderr).toContain('holds Iceberg tables');
        // The dry run refuses it too, rather than print a plan the run then refuses.
        const dry = await run(syncArgs(url, other, ['--format', 'parquet', '--streams', 'line_items', '--dry-run']), ENV);
        expect(dry).toMatchObject({ code: 2, stdout: '' });
        expect(dry.stderr).toContain('holds Iceberg tables');
      });
    });
  });
});

/** A lake whose next version-hint write fails: the commit has landed, the run fails before it records that. */
function failingAfterCommit(target: OutputTarget): OutputTarget & { armed: boolean } {
  const wrapped = Object.create(target) as OutputTarget & { armed: boolean };
  wrapped.armed = true;
  wrapped.putText = async (key, text) => {
    if (wrapped.armed && key.endsWith('version-hint.text')) {
      wrapped.armed = false;
      throw new Error('killed after the metadata file was created');
    }
    return target.putText(key, text);
  };
  return wrapped;
}

describe('a damaged, moved or contended table', () => {
  it("repairTable: the current snapshot's list lost, of two sources committing in turn: the newest readable list's manifests kept but the source that committed after it, whose rows its runner writes again; only the snapshot naming the missing file leaves the history", async () => {
    await withTempDir(async (dir) => {
      const target = directoryTarget(join(dir, 'lake'));
      const catalog = directoryCatalog(target);
      const now: Clock = { now: () => Date.now(), sleep: async () => undefined };
      for (const n of [1, 2]) for (const source of ['a', 'b']) await placeholderCommit(target, 't', source, n, now);
      const before = (await loadTable(target, 't')).metadata!;
      const lost = before.snapshots.at(-1)!;
      expect(lost.summary[SUMMARY.source]).toBe('b');
      expect(await repairTable(catalog, 't', { source: 'a', runId: 'r' }, now)).toBeNull();
      const aBefore = (await liveFiles(target, 't', before, 'a')).map((f) => f.file_path).sort();
      rmSync(new URL(lost['manifest-list']));
      const repair = await repairTable(catalog, 't', { source: 'a', runId: 'r' }, now);
      expect(repair).toMatchObject({ keptFrom: before.snapshots.at(-2)!['snapshot-id'], removed: [lost['snapshot-id']], rewrite: ['b'] });
      const after = (await loadTable(target, 't')).metadata!;
      expect(after.snapshots.map((x) => x['snapshot-id'])).toEqual(
        [...before.snapshots.slice(0, -1), { 'snapshot-id': repair!.snapshotId }].map((x) => x['snapshot-id']),
      );
      // Source a's files as they were; b's left for its runner.
      expect((await liveFiles(target, 't', after, 'a')).map((f) => f.file_path).sort()).toEqual(aBefore);
      expect(aBefore).toHaveLength(2);
      expect(await liveFiles(target, 't', after, 'b')).toEqual([]);
      expect(await icebergFileCheck(join(dir, 'lake'), target.location(''), ['t'])).toMatchObject({ missing: [] });
      // b's runner commits again on top.
      await placeholderCommit(target, 't', 'b', 3, now);
      expect((await liveFiles(target, 't', (await loadTable(target, 't')).metadata, 'b')).length).toBe(1);
    });
  });

  it('a commit or an expiry that loses every race gives up with CS_ERR_LAKE_CONFLICT, saying the change is pending', async () => {
    await withTempDir(async (dir) => {
      const target = directoryTarget(join(dir, 'lake'));
      const waits: number[] = [];
      const clock = {
        now: () => Date.now(),
        sleep: async (ms: number) => {
          waits.push(ms);
        },
      };
      for (const n of [1, 2, 3]) await placeholderCommit(target, 't', 'a', n, clock);
      // Another runner takes every version first.
      const contended = Object.create(target) as OutputTarget;
      contended.createText = async () => false;
      const commit = await placeholderCommit(contended, 't', 'a', 4, clock).catch((e: unknown) => e);
      expect(commit).toMatchObject({
        code: 'CS_ERR_LAKE_CONFLICT',
        exitCode: ExitCode.FAILED,
        message: `Gave up committing to the Iceberg table at ${target.location('t')} after ${COMMIT_ATTEMPTS} attempts: other runners committed first each time.`,
        hint: expect.stringMatching(/^Nothing is lost: the change stays pending and the next run makes it\./),
      });
      expect(waits).toHaveLength(COMMIT_ATTEMPTS - 1);
      // A day later, with no retention: snapshots 1 and 2 are to expire.
      const expiry = await expireTable(directoryCatalog(contended), 't', ['a'], 0, {
        now: () => Date.now() + 86_400_000,
        sleep: async () => undefined,
      }).catch((e: unknown) => e);
      expect(expiry).toMatchObject({
        code: 'CS_ERR_LAKE_CONFLICT',
        message: expect.stringMatching(/^Gave up expiring the snapshots of the Iceberg table at /),
      });
    });
  });
});

describe('the version hint', () => {
  /** A directory lake in `dir` whose table `t` holds source a's first commit, and where its hint is. */
  const firstCommit = async (dir: string) => {
    const target = directoryTarget(join(dir, 'lake'));
    const now = { now: () => Date.now(), sleep: async () => undefined };
    await placeholderCommit(target, 't', 'a', 1, now);
    return { target, now, hint: join(dir, 'lake', 't', 'metadata', 'version-hint.text') };
  };

  it('holds the bare version number, as the Java writer writes it; a hint ending in a newline (older lakes) still loads', async () => {
    await withTempDir(async (dir) => {
      const { target, now, hint } = await firstCommit(dir);
      expect(readFileSync(hint, 'utf8')).toBe('1');
      await placeholderCommit(target, 't', 'a', 2, now);
      expect(readFileSync(hint, 'utf8')).toBe('2');

      // An older lake: the hint ends in a newline, and v1 is gone, so only the hint finds v2.
      writeFileSync(hint, '2\n');
      rmSync(join(dir, 'lake', 't', 'metadata', 'v1.metadata.json'));
      const loaded = await loadTable(target, 't');
      expect(loaded.version).toBe(2);
      expect(loaded.metadata!.snapshots.map((s) => s.summary[SUMMARY.commitId])).toEqual(['a.1', 'a.2']);
      expect(await placeholderCommit(target, 't', 'a', 3, now)).toMatchObject({
        metadataLocation: target.location('t/metadata/v3.metadata.json'),
      });
      expect(readFileSync(hint, 'utf8')).toBe('3');
    });
  });

  it("names the newest version when a runner's hint lands after another runner's newer commit and hint", async () => {
    await withTempDir(async (dir) => {
      const { target, now, hint } = await firstCommit(dir);
      // Runner a creates v2; before its hint is written, runner b creates v3 and writes its hint.
      const slow = Object.create(target) as OutputTarget;
      let overtaken = false;
      slow.putText = async (key, text) => {
        if (!overtaken && key.endsWith('version-hint.text')) {
          overtaken = true;
          await placeholderCommit(target, 't', 'b', 1, now);
          expect(readFileSync(hint, 'utf8')).toBe('3');
        }
        return target.putText(key, text);
      };
      await placeholderCommit(slow, 't', 'a', 2, now);
      expect(overtaken).toBe(true);
      expect(readFileSync(hint, 'utf8')).toBe('3');
      expect(metadataOf(join(dir, 'lake'), 't').snapshots.map((s) => s.summary[SUMMARY.commitId])).toEqual(['a.1', 'a.2', 'b.1']);
    });
  });
});

describe('Iceberg commits through the outbox', () => {
  it('a commit that landed before the run died is recognised by its id and not made again; files nothing references are removed', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 40, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect(await run(syncArgs(url, dir, ['--streams', 'rollups'], true), ENV)).toMatchObject({ code: 0 });
        const lake = join(dir, 'lake');
        const target = directoryTarget(lake);
        const wh = await openWorkingCopy(join(dir, 'c.duckdb'), join(dir, 'state'), { lake: 'iceberg' });
        try {
          const first = icebergLake({
            runId: 'run-a',
            clock: { now: () => Date.now(), sleep: async () => undefined },
            sources: ['default'],
            retentionMs: 86_400_000,
          });
          await expect(first.drain(wh, failingAfterCommit(target))).rejects.toThrow(/killed after/);
          const landed = await loadTable(target, 'rollups_daily');
          expect(landed.metadata!.snapshots).toHaveLength(1);
          expect((await wh.query<{ key: string }>('outbox/pending', ['iceberg'])).map((r) => r.key)).toEqual([
            expect.stringMatching(/^rollups_daily\/default\/run-a\.1\//),
          ]);
          // What a killed writer leaves: a data file and a manifest no snapshot references.
          mkdirSync(join(lake, 'rollups_daily', 'data', 'source=default', 'date_month=2025-06'), { recursive: true });
          writeFileSync(join(lake, 'rollups_daily', 'data', 'source=default', 'date_month=2025-06', 'orphan.parquet'), 'x');
          writeFileSync(join(lake, 'rollups_daily', 'metadata', `${sourceTag('default')}-orphan-m0.avro`), 'x');
          writeFileSync(join(lake, 'rollups_daily', 'metadata', `${sourceTag('other')}-theirs-m0.avro`), 'x');

          const second = icebergLake({
            runId: 'run-b',
            clock: { now: () => Date.now(), sleep: async () => undefined },
            sources: ['default'],
            retentionMs: 86_400_000,
          });
          await second.drain(wh, target);
          const after = await loadTable(target, 'rollups_daily');
          // Not committed again: the line items' one snapshot is still the only one.
          expect(after.metadata!.snapshots.map((s) => s.summary[SUMMARY.commitId])).toEqual(['run-a.1']);
          expect(await wh.query('outbox/pending', ['iceberg'])).toEqual([]);
          expect(existsSync(join(lake, 'rollups_daily', 'data', 'source=default', 'date_month=2025-06', 'orphan.parquet'))).toBe(false);
          expect(existsSync(join(lake, 'rollups_daily', 'metadata', `${sourceTag('default')}-orphan-m0.avro`))).toBe(false);
          // Another source's files are another runner's business.
          expect(existsSync(join(lake, 'rollups_daily', 'metadata', `${sourceTag('other')}-theirs-m0.avro`))).toBe(true);
        } finally {
          wh.close();
        }
      });
    });
  });

  it('a column added by a migration: the table gets a new schema id, the rewritten month holds it, older files read it as null', async () => {
    await withEmulator({ startDate: '2025-05-20', endDate: '2025-06-10', rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const args = syncArgs(url, dir, ['--streams', 'line_items', '--start-date', '2025-05-20', '--until', '2025-06-10']);
        expect(await run(args, ENV)).toMatchObject({ code: 0 });
        const target = directoryTarget(join(dir, 'lake'));
        const wh = await openWorkingCopy(join(dir, 'c.duckdb'), join(dir, 'state'), { lake: 'iceberg' });
        try {
          await wh.sql('ALTER TABLE line_items ADD COLUMN region VARCHAR');
          await wh.transaction(async () => {
            await wh.sql("UPDATE line_items SET region = 'eu-west-1' WHERE usage_date >= DATE '2025-06-01'");
            await wh.changed('line_items', 'default', ['2025-06-01']);
          });
          await icebergLake({
            runId: 'run-m',
            clock: { now: () => Date.now(), sleep: async () => undefined },
            sources: ['default'],
            retentionMs: 86_400_000,
          }).drain(wh, target);
        } finally {
          wh.close();
        }
        const { metadata } = await loadTable(target, 'line_items');
        expect(metadata!['current-schema-id']).toBe(1);
        expect(metadata!.schemas.map((s) => s.fields.length)).toEqual([10, 11]);
        const rows = await readIceberg(pathToFileURL(join(dir, 'lake', 'line_items')).href);
        const may = rows.filter((r) => (r.usage_date as Date).toISOString() < '2025-06');
        const june = rows.filter((r) => (r.usage_date as Date).toISOString() >= '2025-06');
        expect(may.length).toBeGreaterThan(0);
        expect(may.every((r) => r.region === null || r.region === undefined)).toBe(true);
        expect(june.length).toBeGreaterThan(0);
        expect(june.every((r) => r.region === 'eu-west-1')).toBe(true);
      });
    });
  });

  it('a lookback that changed nothing makes no snapshot, nor does the expiry after it; a batch rewrites only the months that changed; intents and dates are cleared either way', async () => {
    await withEmulator({ startDate: '2025-05-20', endDate: '2025-06-10', rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect(
          await run(syncArgs(url, dir, ['--streams', 'line_items', '--start-date', '2025-05-20', '--until', '2025-06-10']), ENV),
        ).toMatchObject({ code: 0 });
        const lake = join(dir, 'lake');
        const target = directoryTarget(lake);
        const versions = async () =>
          Object.fromEntries(
            await Promise.all(['line_items', 'focus'].map(async (t) => [t, (await loadTable(target, t)).version] as const)),
          );
        const before = await versions();
        const files = () =>
          ['2025-05', '2025-06'].map((m) => readdirSync(join(lake, 'line_items', 'data', 'source=default', `usage_date_month=${m}`)));
        const filesBefore = files();
        const lakeRun = (runId: string) =>
          icebergLake({
            runId,
            clock: { now: () => Date.now(), sleep: async () => undefined },
            sources: ['default'],
            retentionMs: 86_400_000,
          });
        const wh = await openWorkingCopy(join(dir, 'c.duckdb'), join(dir, 'state'), { lake: 'iceberg' });
        const pending = async (kind: string) => (await wh.query<{ key: string }>('outbox/pending', [kind])).map((r) => r.key);
        try {
          // A lookback refetches its days and marks them changed, with the same rows.
          await wh.transaction(() => wh.changed('line_items', 'default', ['2025-05-25', '2025-06-05']));
          const nightly = lakeRun('run-same');
          await nightly.drain(wh, target);
          expect(await versions()).toEqual(before);
          expect(await pending('parquet')).toEqual([]);
          expect(await pending('iceberg')).toEqual([]);
          // The run tables still commit; the expiry finds nothing a day old and writes nothing.
          await nightly.finish(wh, target);
          expect(await versions()).toEqual(before);
          expect(await pending('iceberg')).toEqual([]);

          // What a run killed after a batch that made no snapshot leaves: its intent and its dates. The intent
          // is not found in any snapshot, so the dates are written again, make none again, and all is cleared.
          await wh.run('outbox/mark', ['iceberg', 'line_items/default/run-killed.1/664,665']);
          await wh.transaction(() => wh.changed('line_items', 'default', ['2025-05-25', '2025-06-05']));
          await lakeRun('run-after-kill').drain(wh, target);
          expect(await versions()).toEqual(before);
          expect(await pending('parquet')).toEqual([]);
          expect(await pending('iceberg')).toEqual([]);

          // June changes, May does not: one snapshot, replacing June's file only.
          await wh.transaction(async () => {
            await wh.sql("UPDATE line_items SET net_amount_usd = net_amount_usd + 1 WHERE usage_date = DATE '2025-06-05'");
            await wh.changed('line_items', 'default', ['2025-05-25', '2025-06-05']);
          });
          await lakeRun('run-june').drain(wh, target);
          expect(await versions()).toEqual({ line_items: before.line_items! + 1, focus: before.focus! + 1 });
          const june = (await loadTable(target, 'line_items')).metadata!.snapshots.at(-1)!;
          expect(june.summary).toMatchObject({
            operation: 'overwrite',
            'deleted-data-files': '1',
            'added-data-files': '1',
            [SUMMARY.runId]: 'run-june',
          });
          const [may, juneFiles] = files();
          expect(may).toEqual(filesBefore[0]);
          expect(juneFiles).not.toEqual(filesBefore[1]);

          // A run killed between creating a metadata file and writing the hint leaves the hint a version
          // behind; with nothing to commit, the next run must still point it at the newest, as readers follow it.
          const hint = join(lake, 'line_items', 'metadata', 'version-hint.text');
          const newest = readFileSync(hint, 'utf8');
          writeFileSync(hint, String(Number(newest) - 1));
          await wh.transaction(() => wh.changed('line_items', 'default', ['2025-06-05']));
          await lakeRun('run-after-hint').drain(wh, target);
          expect(readFileSync(hint, 'utf8')).toBe(newest);
        } finally {
          wh.close();
        }
        // The working copy holds the update (nothing published it to --db).
        expectEqualToWarehouse(
          await icebergDifferences(workingCopyPath(join(dir, 'state'), join(dir, 'c.duckdb')), pathToFileURL(lake).href, {
            tables: ['line_items', 'focus'],
          }),
        );
      });
    });
  });

  it('four shards committing to one table at once: every commit lands (lost races retried on the newest metadata), each source exact', async () => {
    await withTempDir(async (dir) => {
      const target = directoryTarget(join(dir, 'lake'));
      const sources = ['a', 'b', 'c', 'd'];
      const sleep = async () => {
        await new Promise((r) => setImmediate(r));
      };
      const results = await Promise.all(
        sources.flatMap((source) => [1, 2, 3].map((n) => placeholderCommit(target, 't', source, n, { now: () => Date.now(), sleep }))),
      );
      expect(results.every((r) => r.metadataLocation !== null)).toBe(true);
      expect(results.some((r) => r.attempts > 1)).toBe(true);
      const { version, metadata } = await loadTable(target, 't');
      expect(version).toBe(12);
      expect(metadata!.snapshots.at(-1)!.summary['total-records']).toBe(String(4 * (1 + 2 + 3)));
      // Nothing a lost attempt wrote is left.
      const avro = readdirSync(join(dir, 'lake', 't', 'metadata')).filter((f) => f.endsWith('.avro'));
      expect(avro.filter((f) => f.startsWith('snap-'))).toHaveLength(12);
    });
  });
});

/**
 * Commits `ids` as the whole of `source` in table `t`: one real Parquet file (field ids as the table's
 * schema numbers its two columns), replacing the source's files.
 */
async function commitRows(db: DuckDBConnection, target: OutputTarget, lake: string, source: string, ids: readonly string[], clock: Clock) {
  const key = `t/data/source=${source}/${ids[0]}.parquet`;
  mkdirSync(join(lake, 't', 'data', `source=${source}`), { recursive: true });
  await db.run(`COPY (SELECT * FROM (VALUES ${ids.map((id) => `('${id}', '${source}')`).join(', ')}) v(id, source) ORDER BY ALL)
    TO '${join(lake, key)}' (FORMAT parquet, FIELD_IDS {id: 1, source: 2})`);
  return commitSource(
    directoryCatalog(target),
    't',
    {
      source,
      columns: [
        { name: 'id', type: 'VARCHAR' },
        { name: 'source', type: 'VARCHAR' },
      ],
      partitioning: { source: 'source', month: null },
      add: [bareDataFile(target.location(key), { source }, ids.length, statSync(join(lake, key)).size)],
      replaces: () => true,
      summary: { [SUMMARY.source]: source, [SUMMARY.commitId]: ids[0]! },
    },
    clock,
  );
}

describe('snapshot expiry with shards', () => {
  it('two writers committing in turn, each expiring its own snapshots: every file a retained snapshot of either needs stays, each retained snapshot reads as it was, the snapshot log keeps what follows the last expired entry', async () => {
    const DAY = 86_400_000;
    await withTempDir(async (dir) => {
      const lake = join(dir, 'lake');
      const target = directoryTarget(lake);
      const tableUrl = pathToFileURL(join(lake, 't')).href;
      let nowMs = 0;
      const clock = { now: () => nowMs, sleep: async () => undefined };
      const instance = await DuckDBInstance.create(':memory:');
      const db = await instance.connect();
      try {
        // a1 b1 a2 b2 a3 b3 a4 b4, a day apart; each commit rewrites its source's one file.
        const live: Record<string, string[]> = {};
        const rowsAt = new Map<number, string[]>();
        const names = new Map<number, string>();
        for (let day = 1; day <= 8; day++) {
          nowMs = day * DAY;
          const source = day % 2 === 1 ? 'a' : 'b';
          const name = `${source}${Math.ceil(day / 2)}`;
          live[source] = [`${name}-x`, `${name}-y`];
          const { snapshotId } = await commitRows(db, target, lake, source, live[source], clock);
          rowsAt.set(snapshotId!, Object.values(live).flat().sort());
          names.set(snapshotId!, name);
        }
        const snapshotNames = (m: TableMetadata) => m.snapshots.map((s) => names.get(s['snapshot-id']));
        const logNames = (m: TableMetadata) => m['snapshot-log'].map((e) => names.get(e['snapshot-id']));
        const expectRetainedReadable = async (m: TableMetadata) => {
          expect(await icebergFileCheck(lake, pathToFileURL(lake).href, ['t'])).toEqual({ missing: [], unreferenced: [] });
          // Time travel to each retained snapshot, the oldest first, through an independent reader.
          for (const s of m.snapshots) {
            const rows = await readIceberg(tableUrl, { snapshotId: s['snapshot-id'] });
            expect({ snapshot: names.get(s['snapshot-id']), ids: rows.map((r) => String(r.id)).sort() }).toEqual({
              snapshot: names.get(s['snapshot-id']),
              ids: rowsAt.get(s['snapshot-id']),
            });
          }
        };

        // The cutoff falls between b3 and a4: b3 stays (the newest before it), a1 b1 a2 b2 a3 are past it.
        nowMs = 8.5 * DAY;
        const byA = await expireTable(directoryCatalog(target), 't', ['a'], 2 * DAY, clock);
        const afterA = (await loadTable(target, 't')).metadata!;
        expect(byA.metadataLocation).toBe(target.location('t/metadata/v9.metadata.json'));
        expect(snapshotNames(afterA)).toEqual(['b1', 'b2', 'b3', 'a4', 'b4']);
        // b1 and b2 are still there, but an entry for them would hide that a2 and a3 were current between.
        expect(logNames(afterA)).toEqual(['b3', 'a4', 'b4']);
        // b1 still reads a1's file and manifest, b2 a2's, b3 a3's manifest: only a's three manifest lists went.
        expect(byA.removed).toBe(3);
        await expectRetainedReadable(afterA);

        const byB = await expireTable(directoryCatalog(target), 't', ['b'], 2 * DAY, clock);
        const afterB = (await loadTable(target, 't')).metadata!;
        expect(snapshotNames(afterB)).toEqual(['b3', 'a4', 'b4']);
        expect(logNames(afterB)).toEqual(['b3', 'a4', 'b4']);
        // Nothing retained reaches a1's and a2's files now either, so b's expiry deletes them with its own:
        // two manifest lists, four manifests, four data files.
        expect(byB.removed).toBe(10);
        await expectRetainedReadable(afterB);
        expect(readdirSync(join(lake, 't', 'data', 'source=a')).sort()).toEqual(['a3-x.parquet', 'a4-x.parquet']);

        // An expiry with nothing to expire writes no metadata version.
        expect(await expireTable(directoryCatalog(target), 't', ['a', 'b'], 2 * DAY, clock)).toEqual({
          removed: 0,
          metadataLocation: null,
          snapshotId: null,
        });
        expect((await loadTable(target, 't')).version).toBe(10);
      } finally {
        db.closeSync();
        instance.closeSync();
      }
    });
  });
});

describe('a lake another state directory changed', () => {
  it('monthsToRewrite: every date of a month whose count differs, the first day of a month only the lake has (pure)', () => {
    const june = (d: number) => `2025-06-${String(d).padStart(2, '0')}`;
    const warehouse = [1, 2, 3].map((d) => ({ date: june(d), rows: 10 })).concat([{ date: '2025-07-01', rows: 5 }]);
    // June: 30 here, 20 in the lake; July equal; May only in the lake.
    const lake = new Map([
      [665, 20],
      [666, 5],
      [664, 7],
    ]);
    expect(monthsToRewrite(lake, warehouse)).toEqual(['2025-05-01', june(1), june(2), june(3)]);
    expect(
      monthsToRewrite(
        new Map([
          [665, 30],
          [666, 5],
        ]),
        warehouse,
      ),
    ).toEqual([]);
  });

  it("sourceToRewrite: a table with no month partition, every date when the count of the source differs, the lake's earliest when the warehouse has none, none when it is equal (pure)", () => {
    const rows = [
      { date: '2025-06-02', rows: 3 },
      { date: '2025-05-30', rows: 2 },
    ];
    expect(sourceToRewrite({ rows: 5, earliest: null }, rows)).toEqual([]);
    expect(sourceToRewrite({ rows: 4, earliest: '2025-01-01' }, rows)).toEqual(['2025-05-30', '2025-06-02']);
    expect(sourceToRewrite({ rows: 0, earliest: null }, [])).toEqual([]);
    // Rows only the lake has: its earliest date, or any date when its files give none (the whole file is rewritten).
    expect(sourceToRewrite({ rows: 3, earliest: '2025-04-07' }, [])).toEqual(['2025-04-07']);
    expect(sourceToRewrite({ rows: 3, earliest: null }, [])).toHaveLength(1);
  });
});
