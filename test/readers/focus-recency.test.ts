import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addDays, toDayNumber as toDay, utcDate } from '../../src/dates.js';
import { ExitCode } from '../../src/errors.js';
import { focusDateTime, metadataFileOf } from '../../src/focus/export.js';
import { firstIncomplete } from '../../src/state/recency.js';
import { queryDb, run, spanFlags, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';

const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

interface Sector {
  day: string;
  complete: boolean;
  at: string;
}

const sectors = (db: string) =>
  queryDb<Sector>(
    db,
    `SELECT strftime(TimeSectorStart AT TIME ZONE 'UTC', '%Y-%m-%d') AS day, TimeSectorComplete AS complete,
            strftime(TimeSectorLastUpdated AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') AS at
     FROM focus_recency ORDER BY day`,
  );

/** The days `from..to`. */
const daysOf = (from: string, to: string): string[] => {
  const out: string[] = [];
  for (let d = from; d <= to; d = addDays(d, 1)) out.push(d);
  return out;
};

/** Whether each sector's time lies in `during` (a run's start and end) and its completeness follows from that time. */
const confirmedDuring = (found: readonly Sector[], during: readonly [number, number]) =>
  found.map((s) => ({
    day: s.day,
    during: Date.parse(s.at) >= during[0] && Date.parse(s.at) <= during[1],
    complete: s.complete === s.day < firstIncomplete(s.at, 3),
  }));

describe("FOCUS 1.3's Recency (focus_recency, focus_dataset_instances, export --focus-version)", () => {
  it('says per day when a run last found it equal to the API, moves only for the days a run fetched or rechecked, and goes out with the export', async () => {
    // Dates up to today, so the lookback's days are the newest (the times recorded are the system's).
    const today = utcDate(Date.now());
    const span = { startDate: addDays(today, -29), endDate: today };
    await withEmulator({ ...span, rowsPerDay: 20, seed: 3 }, async (emulator) =>
      withTempDir(async (dir) => {
        const db = join(dir, 'c.duckdb');
        const sync = async (): Promise<[number, number]> => {
          const started = Date.now();
          const result = await run(syncCommand(emulator.url, dir, [...spanFlags(5, { span }), '--recheck-days', '10', '--quiet']), env);
          expect(result.code, result.stderr).toBe(ExitCode.OK);
          return [started, Date.now()];
        };
        const first = await sync();
        const all = daysOf(span.startDate, today);
        const backfill = await sectors(db);
        // Every day held, at the backfill's time; complete but for the lookback's days (three before the run's day, and it).
        expect(confirmedDuring(backfill, first)).toEqual(all.map((day) => ({ day, during: true, complete: true })));
        expect(backfill.filter((s) => !s.complete).map((s) => s.day)).toEqual(daysOf(addDays(today, -3), today));

        // The API restates an old day beyond the recheck's ten days and one within them.
        emulator.dataset.restateDay(toDay(addDays(today, -20)), { changeRate: 1, deleteRate: 0, addRows: 1 });
        emulator.dataset.restateDay(toDay(addDays(today, -6)), { changeRate: 1, deleteRate: 0, addRows: 1 });
        const second = await sync();
        const after = await sectors(db);
        // The lookback's days were fetched again and the recheck's compared (the one found changed synced
        // again): all confirmed by this run. The older ones were not looked at: their time stays, and the
        // restatement 20 days back is not seen, as its older time says.
        const horizon = addDays(today, -10);
        expect(
          confirmedDuring(
            after.filter((s) => s.day >= horizon),
            second,
          ),
        ).toEqual(daysOf(horizon, today).map((day) => ({ day, during: true, complete: true })));
        expect(after.filter((s) => s.day < horizon)).toEqual(backfill.filter((s) => s.day < horizon));
        const [instance] = await queryDb<{ id: string; dataset: string; last: string }>(
          db,
          "SELECT DatasetInstanceId AS id, FocusDatasetId AS dataset, strftime(DatasetInstanceLastUpdated AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') AS last FROM focus_dataset_instances",
        );
        expect(instance).toEqual({
          id: 'default',
          dataset: 'CostAndUsage',
          last: after
            .map((s) => s.at)
            .sort()
            .at(-1),
        });

        // The export: the rows of the version's view, and beside them the same Recency in the specification's form.
        const out = join(dir, 'export', 'focus.parquet');
        const exported = await run(['export', '--db', db, '--focus-version', '1.4', '--out', out], env);
        expect(exported.code, exported.stderr).toBe(ExitCode.OK);
        const metadata = JSON.parse(readFileSync(metadataFileOf(out), 'utf8')) as {
          DatasetInstance: { DatasetInstanceId: string; FocusDatasetId: string }[];
          Recency: { DatasetInstanceId: string; DatasetInstanceLastUpdated: string; TimeSectors: Record<string, unknown>[] }[];
          Schema: { FocusVersion: string; ColumnDefinition: { ColumnName: string }[] }[];
          x_DataFile: { Name: string; Rows: number };
        };
        expect(metadata.DatasetInstance).toEqual([
          expect.objectContaining({ DatasetInstanceId: 'default', FocusDatasetId: 'CostAndUsage' }),
        ]);
        expect(metadata.Recency[0]!.DatasetInstanceLastUpdated).toBe(focusDateTime(instance!.last));
        expect(metadata.Recency[0]!.TimeSectors.map((s) => [s.TimeSectorStart, s.TimeSectorLastUpdated, s.TimeSectorComplete])).toEqual(
          after.map((s) => [`${s.day}T00:00:00Z`, focusDateTime(s.at), s.complete]),
        );
        expect(metadata.Schema[0]!.FocusVersion).toBe('1.4');
        expect(metadata.Schema[0]!.ColumnDefinition.map((c) => c.ColumnName)).not.toContain('ProviderName');
        const [read] = await queryDb<{ n: number }>(db, `SELECT count(*)::INT AS n FROM read_parquet('${out}')`);
        const [held] = await queryDb<{ n: number }>(db, 'SELECT count(*)::INT AS n FROM line_items');
        expect(metadata.x_DataFile).toEqual(expect.objectContaining({ Name: 'focus.parquet', Rows: held!.n }));
        expect(read!.n).toBe(held!.n);
      }),
    );
  });
});
