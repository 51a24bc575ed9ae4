import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import { addDays } from '../../src/dates.js';
import { createRng } from '../../src/emulator/rng.js';
import { CLI, killRunner, tableDigest, withEmulator, withTempDir, SPAN } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
/** Kill points: 12 here (the slow tier), or COSTSYNC_KILLS. */
const KILLS = Number(process.env.COSTSYNC_KILLS ?? 12);
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
      const runner = killRunner(env, (entry) => entry.route === 'line-items');
      const keys = {
        keys: names.map((w) => ({ key: `k-${w}`, scopes: [...SCOPES], plan: 'business' as const, workspace: w })),
        connections: [],
      };
      await withEmulator({ ...SPAN, rowsPerDay: 150, clock, anomaliesPerDay: 2, keys, onRequest: runner.onRequest }, async ({ url }) => {
        await withTempDir(async (dir) => {
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
          const clean = await runner.run(args('clean'));
          expect(clean.code, clean.stderr).toBe(0);
          const expected = await tableDigest(join(dir, 'clean', 'c.duckdb'));
          expect(expected.line_items!.rows).toBe(3 * 150 * 10);

          const rng = createRng(SEED + 1);
          let killed = 0;
          for (let i = 0; i < KILLS; i++) {
            // 30 line-item requests a run (one page a window).
            const kill = i % 2 === 0 ? { atRequest: 2 + Math.floor(rng() * 27) } : { afterMs: 200 + Math.floor(rng() * 700) };
            const result = await runner.run(args('crashy'), kill);
            if (result.signal === 'SIGKILL') killed += 1;
            else expect(result.code, result.stderr).toBe(0);
          }
          const last = await runner.run(args('crashy'));
          expect(last.code, last.stderr).toBe(0);
          expect(killed).toBeGreaterThan(KILLS / 2);
          expect(await tableDigest(join(dir, 'crashy', 'c.duckdb'))).toEqual(expected);
        });
      });
    },
    60_000 + KILLS * 8_000,
  );
});
