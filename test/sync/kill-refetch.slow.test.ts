// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: A SIGKILL's refetch: sync-kill.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, backfillFlags, queryDb, SPAN, syncCommand } from '../support/helpers.js';
import { withKillRig } from '../support/kill-loop.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

describe('what a SIGKILL costs the next run', () => {
  it.each([6, 9, 12])(
    'SIGKILLed at the %ith page of a fast backfill, the next run fetches at most 2 of its pages again',
    async (killAt) => {
      let pages = 0;
      const onRequest = (e: { route: string }) => {
        if (e.route === 'line-items') pages += 1;
      };
      await withKillRig(
        { ...SPAN, rowsPerDay: 500, clock, onRequest },
        async ({ url, dir, runner }) => {
          // One 30-day window of 15 pages, fetched one page after another, as fast as the emulator answers.
          const args = [CLI, ...syncCommand(url, dir, ['--streams', 'line_items', ...backfillFlags(30), '--quiet'])];
          expect((await runner.run(args, { atRequest: killAt })).signal).toBe('SIGKILL');
          pages = 0;
          expect((await runner.finish(args)).code).toBe(0);
          // The killed request was never answered: pages killAt..15 are new, at most 2 more are fetched again.
          expect(pages).toBeLessThanOrEqual(15 - killAt + 1 + 2);
          const [rows] = await queryDb<{ n: number; ids: number }>(
            join(dir, 'c.duckdb'),
            'SELECT count(*)::INT AS n, count(DISTINCT id)::INT AS ids FROM line_items',
          );
          expect(rows).toEqual({ n: 30 * 500, ids: 30 * 500 });
        },
        { counts: (e) => e.route === 'line-items' },
      );
    },
  );
});
