import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/emulator/rng.js';
import { manifestKey } from '../../src/outputs/lake.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import {
  CLI,
  killRunner,
  lakeDifferences,
  tableDigest,
  temporaryFiles,
  withEmulator,
  withTempDir,
  SPAN,
  type KillPoint,
  dbIn,
} from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
/** Kill points: 3 in `npm test`, 12 in `npm run test:slow` (vitest.config.ts), 30 in `npm run test:chaos`. */
const KILLS = Number(process.env.COSTSYNC_KILLS ?? (process.env.COSTSYNC_SLOW_TIER === '1' ? 12 : 3));
const SEED = Number(process.env.COSTSYNC_KILL_SEED ?? 20251123);

describe('crash safety of the published file and the Parquet lake', () => {
  it(
    `--format parquet SIGKILLed at ${KILLS} random points (fetching, committing, writing partitions, publishing): the lake equals the tables row for row`,
    async () => {
      const runner = killRunner({ COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' });
      await withEmulator({ ...SPAN, rowsPerDay: 300, clock, anomaliesPerDay: 5, onRequest: runner.onRequest }, async ({ url }) => {
        await withTempDir(async (dir) => {
          const args = (sub: string) => [
            CLI,
            'sync',
            '--base-url',
            url,
            '--db',
            dbIn(join(dir, sub)),
            '--state-dir',
            join(dir, sub, 'state'),
            '--format',
            'parquet',
            '--out',
            join(dir, sub, 'lake'),
            '--publish-interval',
            '0',
            '--start-date',
            SPAN.startDate,
            '--until',
            SPAN.endDate,
            '--window-days',
            '3',
            '--rate-limit',
            '100000',
            '--log-format',
            'json',
            '--quiet',
          ];
          const run = (sub: string, point: KillPoint = {}) => runner.run(args(sub), point);
          expect(await run('clean')).toMatchObject({ code: 0 });
          const expected = await tableDigest(join(dir, 'clean', 'c.duckdb'));

          const rng = createRng(SEED);
          let killed = 0;
          for (let i = 0; i < KILLS; i++) {
            const kill = i % 2 === 0 ? { atRequest: 1 + Math.floor(rng() * 14) } : { afterMs: 200 + Math.floor(rng() * 900) };
            const result = await run('crashy', kill);
            if (result.signal === 'SIGKILL') killed += 1;
            else expect(result).toMatchObject({ code: 0 });
          }
          expect(await run('crashy')).toMatchObject({ code: 0 });
          expect(killed).toBeGreaterThan(KILLS / 2);
          const db = join(dir, 'crashy', 'c.duckdb');
          expect(await tableDigest(db)).toEqual(expected);
          const lake = await lakeDifferences(db, join(dir, 'crashy', 'lake'));
          for (const [table, diff] of Object.entries(lake)) {
            expect({ table, ...diff }).toEqual({ table, rows: diff.rows, missing: 0, extra: 0 });
            expect(diff.rows).toBeGreaterThan(0);
          }
          expect(temporaryFiles(join(dir, 'crashy'))).toEqual([]);
          const manifest = JSON.parse(readFileSync(join(dir, 'crashy', 'lake', manifestKey('default')), 'utf8'));
          expect(manifest.tables.line_items).toEqual(expect.objectContaining({ rows: expected.line_items!.rows, partitions: 30 }));
          expect(manifest.tables.anomalies.rows).toBe(lake.anomalies!.rows);
        });
      });
    },
    60_000 + KILLS * 8_000,
  );

  it(
    'SIGKILLed while publishing: the published file is always a complete snapshot that opens, never half a window',
    async () => {
      const runner = killRunner({ COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' });
      await withEmulator({ ...SPAN, rowsPerDay: 100, clock, onRequest: runner.onRequest }, async ({ url }) => {
        await withTempDir(async (dir) => {
          const db = join(dir, 'c.duckdb');
          // One page a window (500 rows), published after every window.
          const args = [
            CLI,
            'sync',
            '--base-url',
            url,
            '--db',
            db,
            '--state-dir',
            join(dir, 'state'),
            '--streams',
            'line_items',
            '--publish-interval',
            '0',
            '--start-date',
            SPAN.startDate,
            '--until',
            SPAN.endDate,
            '--window-days',
            '5',
            '--concurrency',
            '1',
            '--rate-limit',
            '100000',
            '--quiet',
          ];
          const rng = createRng(SEED + 1);
          let previous = 0;
          let snapshots = 0;
          for (let i = 0; i < KILLS && previous < 3000; i++) {
            // Half at a request (after some windows were published), half after a delay (landing anywhere, publishing included).
            await runner.run(args, i % 2 === 0 ? { atRequest: 2 + Math.floor(rng() * 4) } : { afterMs: 250 + Math.floor(rng() * 600) });
            if (!existsSync(db)) continue;
            const wh = await openReadOnly(db);
            try {
              const [{ n }] = (await wh.sql<{ n: number }>('SELECT count(*) AS n FROM line_items')) as [{ n: number }];
              expect(n % 500).toBe(0);
              expect(n).toBeGreaterThanOrEqual(previous);
              previous = n;
              snapshots += 1;
            } finally {
              wh.close();
            }
          }
          expect(snapshots).toBeGreaterThan(0);
          expect((await runner.run(args)).code).toBe(0);
          expect((await tableDigest(db)).line_items!.rows).toBe(3000);
          expect(temporaryFiles(dir)).toEqual([]);
        });
      });
    },
    60_000 + KILLS * 5_000,
  );
});
