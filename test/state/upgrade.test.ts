import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { SQL_DIR } from '../../src/paths.js';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { keyFingerprint } from '../../src/fingerprint.js';
import { legacyStateFileName, stateFileName } from '../../src/state/store.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { openReadOnly, withWarehouse } from '../../src/storage/duckdb.js';
import {
  emulatorLineItemIds,
  queryDb,
  run,
  spanFlags,
  syncCommandFor,
  tableDigest,
  withEmulator,
  withTempDir,
} from '../support/helpers.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/v0.1-warehouse/', import.meta.url));
// The emulator the fixture was synced from (test/fixtures/README.md).
const source = {
  startDate: '2025-06-01',
  endDate: '2025-06-30',
  rowsPerDay: 40,
  anomaliesPerDay: 3,
  clock: { now: () => Date.parse('2025-07-01T06:00:00Z') },
};
const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

describe('upgrade from a warehouse the previous version wrote', () => {
  it('adopts --db as the working copy: no data lost, nothing synced again, the same tables as a fresh sync', async () => {
    await withEmulator(source, async (emulator) => {
      await withTempDir(async (dir) => {
        const db = join(dir, 'costs.duckdb');
        const stateDir = join(dir, 'state');
        writeFileSync(db, gunzipSync(readFileSync(join(FIXTURE, 'costs.duckdb.gz'))));
        const state = JSON.parse(readFileSync(join(FIXTURE, 'state.json'), 'utf8'));
        state.source.baseUrl = emulator.url;
        mkdirSync(stateDir);
        writeFileSync(join(stateDir, legacyStateFileName(emulator.url, keyFingerprint('demo-key'))), JSON.stringify(state));
        const old = await tableDigest(db);
        expect(old.line_items!.rows).toBe(40 * 30);

        const args = (target: string, states: string) =>
          syncCommandFor(emulator.url, target, states, [...spanFlags(7, { span: source }), '--quiet']);
        emulator.requestLog.reset();
        expect((await run(args(db, stateDir), env)).code).toBe(0);
        // An incremental run: only the 3-day lookback (120 rows, one page), not the 30 days again.
        expect(emulator.requestLog.count({ route: 'line-items' })).toBe(1);
        expect(existsSync(workingCopyPath(stateDir, db))).toBe(true);

        const upgraded = await tableDigest(db);
        // Every row kept (now with source 'default', so the digests differ from the old file's).
        for (const table of Object.keys(old)) expect({ table, rows: upgraded[table]!.rows }).toEqual({ table, rows: old[table]!.rows });
        const wh = await openReadOnly(db);
        try {
          // Every migration applied, the newest included.
          expect((await wh.sql<{ n: number }>('SELECT max(version) AS n FROM _costsync_migrations'))[0]!.n).toBe(
            readdirSync(join(SQL_DIR, 'schema')).length,
          );
          expect(await wh.sql('SELECT DISTINCT source FROM line_items')).toEqual([{ source: 'default' }]);
          expect((await wh.sql<{ n: number }>('SELECT count(*) AS n FROM sync_runs'))[0]!.n).toBe(2);
          expect(
            (await wh.sql<{ n: number }>("SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = '_stage_anomalies'"))[0]!.n,
          ).toBe(0);
        } finally {
          wh.close();
        }

        // A fresh sync of the same source by this version gives the same tables.
        expect((await run(args(join(dir, 'fresh.duckdb'), join(dir, 'fresh-state')), env)).code).toBe(0);
        // The fixture's emulator named some rises spend_drop (the emulator names them by the deviation's sign now): alert types are compared apart.
        const { anomalies: freshAnomalies, ...fresh } = await tableDigest(join(dir, 'fresh.duckdb'));
        const { anomalies: upgradedAnomalies, ...kept } = upgraded;
        expect(fresh).toEqual(kept);
        expect(freshAnomalies!.rows).toBe(upgradedAnomalies!.rows);
        const withoutType =
          "SELECT md5(string_agg(t::VARCHAR, '|' ORDER BY t::VARCHAR)) AS d FROM (SELECT * EXCLUDE (alert_type, first_seen_at, last_seen_at) FROM anomalies) t";
        expect(await queryDb(join(dir, 'fresh.duckdb'), withoutType)).toEqual(await queryDb(db, withoutType));
      });
    });
  });

  it('status, query and verify read a warehouse the previous version published as it is (read-only, one migration behind), its pushes included', async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'costs.duckdb');
      // The previous version's warehouse: schema 013, before ingest_batches carried each request's outcome,
      // with a push it recorded.
      await withWarehouse(db, async (wh) => {
        await wh.sql('ALTER TABLE ingest_batches DROP COLUMN outcome');
        await wh.sql('DELETE FROM _costsync_migrations WHERE version >= 14');
        await wh.sql(`INSERT INTO ingest_batches (push_id, push_key, kind, connection_id, file, file_sha256, first_row, last_row,
          rows_sent, batch_id, accepted, row_count, cost_line_item_count, skipped, errors, response, sent_at)
          VALUES ('p1', 'k', 'focus', 'demo-connection', 'a.csv', 'sha', 1, 10, 10, 'b1', true, 10, 8, 2, '[]', '{}', '2025-07-01T06:00:00Z')`);
      });
      const status = await run(['status', '--db', db, '--state-dir', join(dir, 'state'), '--format', 'json']);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout).pushes).toEqual([
        expect.objectContaining({ push_id: 'p1', rows_sent: 10, created: 8, delivered: null, refused: null, unanswered: 0 }),
      ]);
      expect((await run(['query', '--db', db, '--format', 'csv', 'SELECT count(*) AS n FROM ingest_batches'])).stdout).toBe('n\n1\n');
      // verify reads it as it is: it holds nothing synced, so verify says so (exit 2), not "no differences".
      const verify = await run(['verify', '--db', db]);
      expect(verify.code).toBe(2);
      expect(verify.stderr).toContain('verify compared nothing: the warehouse holds no synced dates yet.');
      // A warehouse many migrations behind (0.1's, without the source columns) cannot be read as it is: the read
      // commands say why and what brings it up to date, rather than DuckDB's Binder error alone.
      const ancient = join(dir, 'v01.duckdb');
      writeFileSync(ancient, gunzipSync(readFileSync(join(FIXTURE, 'costs.duckdb.gz'))));
      for (const command of [['status', '--state-dir', join(dir, 'state')], ['verify'], ['report', '--out', join(dir, 'r.html')]]) {
        const refused = await run([...command, '--db', ancient]);
        expect(refused.code, command[0]).toBe(2);
        expect(refused.stderr).toMatch(
          /v01\.duckdb was written by an older costsync \(its schema lacks \d+ migration\(s\), 003_outbox_and_publish\.sql the first\)/,
        );
        expect(refused.stderr).toMatch(/hint: Run costsync sync once with this --db/);
      }
      // The next open migrates it: the column is there, the earlier push's outcome unknown.
      await withWarehouse(db, async (wh) => {
        expect(await wh.sql('SELECT push_id, outcome FROM ingest_batches')).toEqual([{ push_id: 'p1', outcome: null }]);
      });
    });
  });

  it('picks up a working copy and state file the previous version wrote (schema 005, before the warehouse carried its state): nothing lost, a lookback, then the state carried', async () => {
    const PREVIOUS = fileURLToPath(new URL('../fixtures/prev-warehouse/', import.meta.url));
    await withEmulator(source, async (emulator) => {
      await withTempDir(async (dir) => {
        const db = join(dir, 'costs.duckdb');
        const stateDir = join(dir, 'state');
        const work = workingCopyPath(stateDir, db);
        mkdirSync(dirname(work), { recursive: true });
        writeFileSync(work, gunzipSync(readFileSync(join(PREVIOUS, 'working-copy.duckdb.gz'))));
        const state = JSON.parse(readFileSync(join(PREVIOUS, 'state.json'), 'utf8'));
        state.source.baseUrl = emulator.url;
        writeFileSync(join(stateDir, stateFileName('default', basename(work, '.duckdb'))), JSON.stringify(state));
        const before = await tableDigest(work);
        expect(before.line_items!.rows).toBe(40 * 30);

        const args = (states: string) => syncCommandFor(emulator.url, db, states, [...spanFlags(7, { span: source }), '--quiet']);
        emulator.requestLog.reset();
        const nightly = await run(args(stateDir), env);
        expect(nightly.code, nightly.stderr).toBe(0);
        // A nightly run: the 3-day lookback only.
        expect(emulator.requestLog.count({ route: 'line-items' })).toBe(1);
        const after = await tableDigest(db);
        for (const table of Object.keys(before)) expect({ table, rows: after[table]!.rows }).toEqual({ table, rows: before[table]!.rows });
        const [carried] = await queryDb<{ n: number }>(db, "SELECT count(*)::INT AS n FROM _costsync_sync_state WHERE source = 'default'");
        expect(carried!.n).toBe(1);

        // From now on an empty state directory goes on from the warehouse: a lookback again.
        emulator.requestLog.reset();
        const clean = await run(args(join(dir, 'empty-state')), env);
        expect(clean.code, clean.stderr).toBe(0);
        expect(emulator.requestLog.count({ route: 'line-items' })).toBe(1);
      });
    });
  });

  it('finishes a window the previous version spooled (its pages as JSON lines) and was killed before storing: nothing fetched again, the same rows as a fresh sync', async () => {
    const SPOOLED = fileURLToPath(new URL('../fixtures/prev-spool/', import.meta.url));
    // The emulator the fixture was made with (test/fixtures/README.md).
    const made = { ...source, rowsPerDay: 400 };
    await withEmulator(made, async (emulator) => {
      await withTempDir(async (dir) => {
        const args = (db: string, states: string) =>
          syncCommandFor(emulator.url, db, states, [
            '--start-date',
            '2025-06-01',
            '--until',
            '2025-06-06',
            '--window-days',
            '3',
            '--concurrency',
            '1',
            '--rate-limit',
            '100000',
            '--quiet',
          ]);
        const db = join(dir, 'costs.duckdb');
        const stateDir = join(dir, 'state');
        const work = workingCopyPath(stateDir, db);
        mkdirSync(dirname(work), { recursive: true });
        writeFileSync(work, gunzipSync(readFileSync(join(SPOOLED, 'working-copy.duckdb.gz'))));
        writeFileSync(`${work}.wal`, gunzipSync(readFileSync(join(SPOOLED, 'working-copy.duckdb.wal.gz'))));
        const stateFile = stateFileName('default', basename(work, '.duckdb'));
        const state = JSON.parse(readFileSync(join(SPOOLED, 'state.json'), 'utf8'));
        state.source.baseUrl = emulator.url;
        writeFileSync(join(stateDir, stateFile), JSON.stringify(state));
        const pages = join(stateDir, 'spool', stateFile.replace(/\.json$/, ''), 'line_items', '2025-06-01');
        mkdirSync(pages, { recursive: true });
        for (const page of ['000001.json', '000002.json']) {
          const text = gunzipSync(readFileSync(join(SPOOLED, `line_items-2025-06-01-${page}.gz`)));
          expect(text.subarray(0, 6).toString()).toBe('{"o":0');
          writeFileSync(join(pages, page), text);
        }

        const resumed = await run(args(db, stateDir), env);
        expect(resumed.code, resumed.stderr).toBe(0);
        // Only the second window's two pages: the first was stored from the previous version's files.
        expect(emulator.requestLog.count({ route: 'line-items' })).toBe(2);
        const ids = await queryDb<{ id: string }>(db, 'SELECT id FROM line_items ORDER BY id');
        expect(ids.map((r) => r.id)).toEqual(emulatorLineItemIds(emulator, '2025-06-01', '2025-06-06'));

        const fresh = join(dir, 'fresh.duckdb');
        const again = await run(args(fresh, join(dir, 'fresh-state')), env);
        expect(again.code, again.stderr).toBe(0);
        expect((await tableDigest(db)).line_items).toEqual((await tableDigest(fresh)).line_items);
      });
    });
  });
});
