import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/emulator/rng.js';
import { CLI, tableDigest, SPAN, syncCommand, backfillFlags } from '../support/helpers.js';
import { storedAgainstApi } from '../support/api-truth.js';
import { alternatingPoint, cleanThenKilled, killCount, withKillRig } from '../support/kill-loop.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
/** Kill points: 3 in `npm test`, 12 in `npm run test:slow` (vitest.config.ts), 30 in `npm run test:chaos`. */
const KILLS = killCount();
const SEED = Number(process.env.COSTSYNC_KILL_SEED ?? 20251121);

describe('crash safety', () => {
  it(
    `SIGKILLed at ${KILLS} random points and re-run, ends with exactly the tables of a clean run, which equal the API`,
    async () => {
      await withKillRig({ ...SPAN, rowsPerDay: 400, clock, anomaliesPerDay: 5 }, async (rig) => {
        const args = (sub: string) => [CLI, ...syncCommand(rig.url, join(rig.dir, sub), [...backfillFlags(4), '--quiet'])];
        const rng = createRng(SEED);
        // Half the kill points after a number of requests, half at a step between them: the process start
        // (after DuckDB's recovery), a state write, a commit, a publish.
        const expected = await cleanThenKilled(rig, args, KILLS, (i) =>
          alternatingPoint(
            rng,
            i,
            [1, 12],
            [
              ['open', 1],
              ['state-save', 6],
              ['commit', 10],
              ['publish', 2],
            ],
          ),
        );
        expect(expected.line_items!.rows).toBe(400 * 30);
        const got = await tableDigest(join(rig.dir, 'crashy', 'c.duckdb'));
        expect(got).toEqual(expected);
        expect(got.duplicate_line_item_ids!.rows).toBe(0);
        // And the clean run (so the killed one too) holds what the API holds, every column.
        const api = {
          from: SPAN.startDate,
          to: SPAN.endDate,
          nowMs: clock.now(),
          anomalies: { window: [SPAN.startDate, SPAN.endDate] as const },
        };
        expect(await storedAgainstApi(join(rig.dir, 'clean', 'c.duckdb'), rig.emulator.dataset, api)).toEqual([]);
      });
    },
    60_000 + KILLS * 6_000,
  );
});
