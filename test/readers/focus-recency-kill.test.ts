import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addDays, toDayNumber, utcDate } from '../../src/dates.js';
import type { Emulator } from '../../src/emulator/server.js';
import { ExitCode } from '../../src/errors.js';
import { cli, queryDb, run, spanFlags, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';

const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

/** Per date, the line items' total in cents: the API's now, and the warehouse's. */
function apiCents(emulator: Emulator, date: string): number {
  const ds = emulator.dataset;
  const day = toDayNumber(date);
  let total = 0;
  for (let i = 0; i < ds.slots(day); i++) total += ds.itemAt(day, i)?.record.net_amount_usd ?? 0;
  return Math.round(total * 100);
}

/** Each day focus_recency confirmed after `changedMs` whose warehouse total is not the API's: what it must never claim. */
async function falseClaims(db: string, emulator: Emulator, changedMs: number): Promise<string[]> {
  const rows = await queryDb<{ date: string; at: number; cents: number | null }>(
    db,
    `SELECT strftime(r.TimeSectorStart AT TIME ZONE 'UTC', '%Y-%m-%d') AS date, epoch_ms(r.TimeSectorLastUpdated)::DOUBLE AS at,
            (SELECT round(sum(net_amount_usd) * 100)::DOUBLE FROM line_items l WHERE l.usage_date = CAST(r.TimeSectorStart AT TIME ZONE 'UTC' AS DATE)) AS cents
     FROM focus_recency r`,
  );
  return rows
    .filter((r) => r.at > changedMs && (r.cents ?? 0) !== apiCents(emulator, r.date))
    .map((r) => `${r.date} at ${new Date(r.at).toISOString()}: held ${r.cents ?? 0}, API ${apiCents(emulator, r.date)}`);
}

describe('FOCUS Recency under SIGKILL', () => {
  it('a run killed after any of its commits never leaves a day confirmed after the API changed it unless it holds the change', async () => {
    const today = utcDate(Date.now());
    const span = { startDate: addDays(today, -29), endDate: today };
    await withEmulator({ ...span, rowsPerDay: 40, seed: 11 }, async (emulator) =>
      withTempDir(async (dir) => {
        const db = join(dir, 'c.duckdb');
        const args = syncCommand(emulator.url, dir, [...spanFlags(3, { span }), '--quiet']);
        const backfill = await run(args, env);
        expect(backfill.code, backfill.stderr).toBe(ExitCode.OK);
        // Two older days restated (the recheck finds them, then syncs them again) and the lookback's newest.
        const restated = [addDays(today, -8), addDays(today, -15)];
        for (const date of restated) emulator.dataset.restateDay(toDayNumber(date), { changeRate: 0.8, deleteRate: 0.2, addRows: 2 });
        emulator.dataset.restateDay(toDayNumber(today), { changeRate: 1, deleteRate: 0, addRows: 1 });
        const changedMs = Date.now();
        // Killed after its 1st commit, then its 2nd, ... each run going on from the last, until one runs to the end.
        let code: number | null = null;
        let kills = 0;
        for (let n = 1; code !== ExitCode.OK && n <= 40; n++) {
          const result = await cli(args, { ...env, COSTSYNC_FAILPOINT: `commit:${n}` });
          code = result.code;
          if (result.signal === 'SIGKILL') kills += 1;
          else expect(result.code, result.stderr).toBe(ExitCode.OK);
          expect(await falseClaims(db, emulator, changedMs), `after the run killed at commit ${n}`).toEqual([]);
        }
        expect(code).toBe(ExitCode.OK);
        expect(kills).toBeGreaterThan(2);
        // In the end every restated day is held as the API has it, confirmed after the change.
        const confirmed = await queryDb<{ date: string; at: number }>(
          db,
          "SELECT strftime(TimeSectorStart AT TIME ZONE 'UTC', '%Y-%m-%d') AS date, epoch_ms(TimeSectorLastUpdated)::DOUBLE AS at FROM focus_recency",
        );
        for (const date of [...restated, today]) expect(confirmed.find((r) => r.date === date)!.at, date).toBeGreaterThan(changedMs);
      }),
    );
  }, 240_000);
});
