import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { withWarehouse } from '../../src/storage/duckdb.js';
import { storedAgainstApi } from '../support/api-truth.js';
import { SPAN, run, spanFlags, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

/**
 * The warehouse against the API itself: every stored column of line items, rollups (every grouping) and
 * anomalies (statuses included) equal to the emulator's own records, after a backfill and after the API
 * restates days and resolves alerts; and the comparison finds one column changed in one row.
 */
describe('every stored column equals the API', () => {
  it('after a backfill, after restatements and a status change, and not after a column is changed by hand', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 12, anomaliesPerDay: 2, clock, seed: 7 }, async (emulator) =>
      withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
        const db = join(dir, 'c.duckdb');
        const ds = emulator.dataset;
        const compare = () =>
          storedAgainstApi(db, ds, {
            from: SPAN.startDate,
            to: SPAN.endDate,
            nowMs: clock.now(),
            anomalies: { window: [SPAN.startDate, SPAN.endDate] },
          });
        const sync = async () => {
          const result = await run(syncCommand(emulator.url, dir, [...spanFlags(), '--quiet']), env, clock);
          expect(result.code, result.stderr).toBe(ExitCode.OK);
        };
        await sync();
        expect(await compare()).toEqual([]);

        // The API restates its last days and an older one, and resolves an alert: the next run takes them all.
        ds.restate();
        ds.restateDay(toDay('2025-06-10'), { changeRate: 0.5, deleteRate: 0.2, addRows: 2 });
        const resolved = ds.setAnomalyStatus({ day: toDay('2025-06-20') }, 'resolved', clock.now());
        await sync();
        expect(await compare()).toEqual([]);

        // One column of one row changed in the warehouse: the comparison names that row, and only it.
        await withWarehouse(db, async (wh) => {
          await wh.sql(`UPDATE anomalies SET status = 'open' WHERE id = '${resolved}'`);
          await wh.sql(`UPDATE line_items SET user_email = 'someone@else' WHERE id = (SELECT min(id) FROM line_items)`);
          await wh.sql(
            `DELETE FROM rollups_daily WHERE date = DATE '2025-06-05' AND group_by = 'service' AND service = (SELECT min(service) FROM rollups_daily WHERE date = DATE '2025-06-05' AND group_by = 'service')`,
          );
        });
        const found = await compare();
        expect(found).toHaveLength(3);
        expect(found).toEqual(
          expect.arrayContaining([
            expect.stringMatching(/^line item \S+: the warehouse holds .*someone@else/),
            expect.stringMatching(/^rollup 2025-06-05\|service\|.*: missing from the warehouse$/),
            expect.stringMatching(new RegExp(`^anomaly ${resolved}: the warehouse holds .*"open".*the API .*"resolved"`)),
          ]),
        );
      }),
    );
  });
});

function toDay(date: string): number {
  return Date.parse(`${date}T00:00:00Z`) / 86_400_000;
}
