import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { byHand, lakeDifferences, queryDb, run, SPAN, spanFlags, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

describe("the lakes' FOCUS 1.3 and 1.4 tables", () => {
  it('a lake a previous costsync wrote (focus only) gets focus_1_3 and focus_1_4 whole at the next run, every older date included', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 15, clock }, async (emulator) =>
      withTempDir(async (dir) => {
        const lake = join(dir, 'lake');
        const db = join(dir, 'c.duckdb');
        const sync = async (...extra: string[]) => {
          const result = await run(
            syncCommand(emulator.url, dir, [...spanFlags(10), '--quiet', '--format', 'parquet', '--out', lake, ...extra]),
            env,
            clock,
          );
          expect(result.code, result.stderr).toBe(ExitCode.OK);
        };
        await sync();
        expect(await lakeDifferences(db, lake)).toMatchObject({
          focus_1_3: { rows: 15 * 30, missing: 0, extra: 0 },
          focus_1_4: { rows: 15 * 30, missing: 0, extra: 0 },
        });
        // As the previous version left them: no change of the new tables recorded, no such tables in the lake.
        await byHand(db, ["DELETE FROM _costsync_partition_changes WHERE tbl IN ('focus_1_3', 'focus_1_4')"]);
        for (const table of ['focus_1_3', 'focus_1_4']) rmSync(join(lake, table), { recursive: true, force: true });
        // A nightly, whose lookback is three days: the lake's start finds the tables it lacks (lake.ts's
        // markMissing) and fills them for all thirty.
        await sync();
        const after = await lakeDifferences(db, lake);
        for (const table of ['focus', 'focus_1_3', 'focus_1_4', 'line_items'])
          expect(after[table], table).toEqual({ rows: 15 * 30, missing: 0, extra: 0 });
        // A nightly over the same data leaves the older dates' files as they are, in every table.
        const oldFile = (table: string) => statSync(join(lake, table, 'source=default', 'date=2025-06-01', 'data.parquet')).mtimeMs;
        const before = ['focus', 'focus_1_3', 'focus_1_4'].map(oldFile);
        await sync();
        expect(['focus', 'focus_1_3', 'focus_1_4'].map(oldFile)).toEqual(before);
        const [versions] = await queryDb<{ n: number }>(
          db,
          `SELECT count(*)::INT AS n FROM read_parquet('${lake}/focus_1_4/*/*/*.parquet', hive_partitioning = true) WHERE ServiceProviderName IS NULL`,
        );
        expect(versions).toEqual({ n: 0 });
      }),
    );
  });
});
