// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: The output kill loops at 12 kill points: sync-kill at 3.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/emulator/rng.js';
import { manifestKey } from '../../src/outputs/lake.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import { CLI, lakeDifferences, tableDigest, temporaryFiles, SPAN, syncCommand, backfillFlags } from '../support/helpers.js';
import { alternatingPoint, cleanThenKilled, killCount, withKillRig } from '../support/kill-loop.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
/** Kill points: 3 in `npm test`, 12 in `npm run test:slow` (vitest.config.ts), 30 in `npm run test:chaos`. */
const KILLS = killCount();
const SEED = Number(process.env.COSTSYNC_KILL_SEED ?? 20251123);

describe('crash safety of the published file and the Parquet lake', () => {
  it(
    `--format parquet SIGKILLed at ${KILLS} random points (fetching, committing, writing partitions, publishing): the lake equals the tables row for row`,
    async () => {
      await withKillRig({ ...SPAN, rowsPerDay: 300, clock, anomaliesPerDay: 5 }, async (rig) => {
        const { dir } = rig;
        const args = (sub: string) => [
          CLI,
          ...syncCommand(rig.url, join(dir, sub), [
            '--format',
            'parquet',
            '--out',
            join(dir, sub, 'lake'),
            '--publish-interval',
            '0',
            ...backfillFlags(3),
            '--quiet',
          ]),
        ];
        const rng = createRng(SEED);
        const expected = await cleanThenKilled(rig, args, KILLS, (i) =>
          alternatingPoint(
            rng,
            i,
            [1, 14],
            [
              ['open', 1],
              ['commit', 10],
              ['lake-put', 20],
              ['publish', 4],
            ],
          ),
        );
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
    },
    60_000 + KILLS * 8_000,
  );

  it(
    'SIGKILLed while publishing: the published file is always a complete snapshot that opens, never half a window',
    async () => {
      await withKillRig({ ...SPAN, rowsPerDay: 100, clock }, async ({ url, dir, runner }) => {
        const db = join(dir, 'c.duckdb');
        // One page a window (500 rows), published after every window.
        const args = [
          CLI,
          ...syncCommand(url, dir, [
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
          ]),
        ];
        const rng = createRng(SEED + 1);
        let previous = 0;
        let snapshots = 0;
        for (let i = 0; i < KILLS && previous < 3000; i++) {
          // Half at a request (after some windows were published), half at a step: a commit, a publish, a state write.
          await runner.run(
            args,
            alternatingPoint(
              rng,
              i,
              [2, 4],
              [
                ['commit', 6],
                ['publish', 3],
                ['state-save', 4],
              ],
            ),
          );
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
    },
    60_000 + KILLS * 5_000,
  );
});
