import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addDays } from '../../src/dates.js';
import { createRng } from '../../src/emulator/rng.js';
import { CLI, tableDigest, SPAN } from '../support/helpers.js';
import { alternatingPoint, cleanThenKilled, killCount, withKillRig, workspaceKeys } from '../support/kill-loop.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
/** Kill points: 12 here (the slow tier), or COSTSYNC_KILLS. */
const KILLS = killCount(12);
const SEED = Number(process.env.COSTSYNC_KILL_SEED ?? 20251121);

// Grouped commits under kills, in the slow tier: `npm test` checks the grouping itself
// (group-commit.test.ts) and kills one source (sync-kill.test.ts).
describe('crash safety of grouped window commits (slow tier)', () => {
  it(
    `several sources whose windows share commits (a group commit), SIGKILLed at ${KILLS} random points: exactly the tables of a clean run`,
    async () => {
      const names = ['eu', 'us', 'apac'];
      const START = addDays(SPAN.endDate, -9);
      const env: Record<string, string> = { TZ: 'UTC' };
      for (const w of names) env[`KEY_${w.toUpperCase()}`] = `k-${w}`;
      await withKillRig(
        { ...SPAN, rowsPerDay: 150, clock, anomaliesPerDay: 2, keys: workspaceKeys(names) },
        async (rig) => {
          const { url, dir } = rig;
          // Ten one-day windows, four at a time for each of three sources: stores finish together and share
          // commits (a run of this makes about 40 commits for its 60 windows, 20 carries and 3 sources' runs).
          const args = (sub: string) => {
            mkdirSync(join(dir, sub), { recursive: true });
            const config = join(dir, sub, 'costsync.config.json');
            writeFileSync(
              config,
              JSON.stringify({
                sources: names.map((w) => ({ name: `acme-${w}`, 'base-url': url, 'api-key-env': `KEY_${w.toUpperCase()}` })),
                db: join(dir, sub, 'c.duckdb'),
                'state-dir': join(dir, sub, 'state'),
              }),
            );
            return [
              CLI,
              'sync',
              '--config',
              config,
              '--start-date',
              START,
              '--until',
              SPAN.endDate,
              '--window-days',
              '1',
              '--concurrency',
              '4',
              '--rate-limit',
              '100000',
              '--log-format',
              'json',
              '--quiet',
            ];
          };
          const rng = createRng(SEED + 1);
          // 30 line-item requests a run (one page a window).
          const expected = await cleanThenKilled(rig, args, KILLS, (i) =>
            alternatingPoint(
              rng,
              i,
              [2, 27],
              [
                ['open', 1],
                ['commit', 20],
                ['state-save', 20],
                ['publish', 2],
              ],
            ),
          );
          expect(expected.line_items!.rows).toBe(3 * 150 * 10);
          expect(await tableDigest(join(dir, 'crashy', 'c.duckdb'))).toEqual(expected);
        },
        { env, counts: (entry) => entry.route === 'line-items' },
      );
    },
    60_000 + KILLS * 8_000,
  );
});
