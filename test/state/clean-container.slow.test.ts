// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: Empty state directories: state-dirs (a second state directory adopts the published file and its state).
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addDays } from '../../src/dates.js';
import { CLI, SPAN, backfillFlags, killRunner, run, syncCommandFor, tableDigest, withEmulator, withTempDir } from '../support/helpers.js';
import { useRgw } from '../support/s3.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

const s3 = useRgw();

describe('nightly runs from a clean container: the warehouse carries its state', () => {
  it('every run from an empty --state-dir against the published warehouse in a bucket costs what a run that kept its state costs, and the tables equal the truth; the same after a run killed mid-window', async () => {
    await s3.createBucket('nightly');
    let onRequest = (_entry: { route: string }) => undefined as void;
    await withEmulator({ ...SPAN, rowsPerDay: 200, clock, anomaliesPerDay: 3, onRequest: (e) => onRequest(e) }, async (emulator) => {
      await withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() };
        const args = (db: string, stateDir: string, until: string) =>
          syncCommandFor(emulator.url, db, stateDir, backfillFlags(10, { span: { startDate: SPAN.startDate, endDate: until } }));
        const kept = join(dir, 'kept-state');
        const keptDb = join(dir, 'kept.duckdb');
        const cleanDb = 's3://nightly/wh/costs.duckdb';
        /** One night: the same data for both, the requests each cost. */
        const night = async (until: string): Promise<[number, number, string]> => {
          let before = emulator.requestLog.total;
          const a = await run(args(keptDb, kept, until), env);
          expect(a.code, a.stderr).toBe(0);
          const keptCost = emulator.requestLog.total - before;
          before = emulator.requestLog.total;
          const b = await run(args(cleanDb, mkdtempSync(join(dir, 'clean-')), until), env);
          expect(b.code, b.stderr).toBe(0);
          return [keptCost, emulator.requestLog.total - before, b.stderr];
        };
        const [backfillKept, backfillClean] = await night('2025-06-26');
        expect(backfillClean).toBe(backfillKept);
        let until = '2025-06-26';
        for (let i = 0; i < 2; i++) {
          until = addDays(until, 1);
          emulator.restate();
          const [keptCost, cleanCost, stderr] = await night(until);
          expect(cleanCost).toBe(keptCost);
          // A nightly run costs a lookback, not a backfill.
          expect(cleanCost).toBeLessThan(backfillKept / 2);
          expect(stderr).toContain('going on from the state the warehouse carries');
        }
        const truth = await tableDigest(keptDb);
        await s3.download('nightly', 'wh/', join(dir, 'published'));
        const published = await tableDigest(join(dir, 'published', 'costs.duckdb'));
        for (const table of ['line_items', 'rollups_daily', 'anomalies'])
          expect({ table, ...published[table] }).toEqual({ table, ...truth[table] });

        // A run killed mid-window, then a run from another empty state directory: the tables still equal the truth.
        until = addDays(until, 1);
        emulator.restate();
        expect((await run(args(keptDb, kept, until), env)).code).toBe(0);
        const runner = killRunner(env, (e) => e.route === 'line-items');
        onRequest = runner.onRequest;
        // The nightly window is one page: killed at it, before the window commits.
        const killed = await runner.run([CLI, ...args(cleanDb, mkdtempSync(join(dir, 'clean-')), until), '--publish-interval', '0'], {
          atRequest: 1,
        });
        expect(killed.signal).toBe('SIGKILL');
        const after = await run(args(cleanDb, mkdtempSync(join(dir, 'clean-')), until), env);
        expect(after.code, after.stderr).toBe(0);
        await s3.download('nightly', 'wh/', join(dir, 'published2'));
        const again = await tableDigest(join(dir, 'published2', 'costs.duckdb'));
        const truth2 = await tableDigest(keptDb);
        for (const table of ['line_items', 'rollups_daily', 'anomalies'])
          expect({ table, ...again[table] }).toEqual({ table, ...truth2[table] });
      });
    });
  }, 180_000);
});
