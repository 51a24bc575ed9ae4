import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/emulator/rng.js';
import { CLI, killRunner, tableDigest, withEmulator, withTempDir, SPAN, type KillPoint, dbIn } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
/** Kill points: 3 in `npm test`, 12 in `npm run test:slow` (vitest.config.ts), 30 in `npm run test:chaos`. */
const KILLS = Number(process.env.COSTSYNC_KILLS ?? (process.env.COSTSYNC_SLOW_TIER === '1' ? 12 : 3));
const SEED = Number(process.env.COSTSYNC_KILL_SEED ?? 20251121);

describe('crash safety', () => {
  it(
    `SIGKILLed at ${KILLS} random points and re-run, ends with exactly the tables of a clean run`,
    async () => {
      const runner = killRunner({ COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' });
      await withEmulator(
        {
          ...SPAN,
          rowsPerDay: 400,
          clock,
          anomaliesPerDay: 5,
          onRequest: runner.onRequest,
        },
        async ({ url }) => {
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
              '--start-date',
              SPAN.startDate,
              '--until',
              SPAN.endDate,
              '--window-days',
              '4',
              '--rate-limit',
              '100000',
              '--log-format',
              'json',
              '--quiet',
            ];
            const run = (sub: string, point: KillPoint = {}) => runner.run(args(sub), point);

            const clean = await run('clean');
            expect(clean.code).toBe(0);
            const expected = await tableDigest(join(dir, 'clean', 'c.duckdb'));
            expect(expected.line_items!.rows).toBe(400 * 30);

            const rng = createRng(SEED);
            let killed = 0;
            for (let i = 0; i < KILLS; i++) {
              // Half the kill points after a number of requests, half after a delay (which lands
              // anywhere: process start, DuckDB recovery, a commit, a state write).
              const kill = i % 2 === 0 ? { atRequest: 1 + Math.floor(rng() * 12) } : { afterMs: 150 + Math.floor(rng() * 700) };
              const result = await run('crashy', kill);
              if (result.signal === 'SIGKILL') killed += 1;
              else expect(result.code).toBe(0);
            }
            const last = await run('crashy');
            expect(last.code).toBe(0);
            expect(killed).toBeGreaterThan(KILLS / 2);
            const got = await tableDigest(join(dir, 'crashy', 'c.duckdb'));
            expect(got).toEqual(expected);
            expect(got.duplicate_line_item_ids!.rows).toBe(0);
          });
        },
      );
    },
    60_000 + KILLS * 6_000,
  );
});
