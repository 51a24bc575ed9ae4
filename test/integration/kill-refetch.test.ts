import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, killRunner, queryDb, SPAN, withEmulator, withTempDir } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

describe('what a SIGKILL costs the next run', () => {
  it.each([6, 9, 12])(
    'SIGKILLed at the %ith page of a fast backfill, the next run fetches at most 2 of its pages again',
    async (killAt) => {
      let pages = 0;
      const runner = killRunner({ COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' }, (e) => e.route === 'line-items');
      await withEmulator(
        {
          ...SPAN,
          rowsPerDay: 500,
          clock,
          onRequest: (e) => {
            if (e.route === 'line-items') pages += 1;
            runner.onRequest(e);
          },
        },
        async ({ url }) => {
          await withTempDir(async (dir) => {
            // One 30-day window of 15 pages, fetched one page after another, as fast as the emulator answers.
            const args = [
              CLI,
              'sync',
              '--base-url',
              url,
              '--db',
              join(dir, 'c.duckdb'),
              '--state-dir',
              join(dir, 'state'),
              '--streams',
              'line_items',
              '--start-date',
              SPAN.startDate,
              '--until',
              SPAN.endDate,
              '--window-days',
              '30',
              '--rate-limit',
              '100000',
              '--log-format',
              'json',
              '--quiet',
            ];
            expect((await runner.run(args, { atRequest: killAt })).signal).toBe('SIGKILL');
            pages = 0;
            expect((await runner.run(args)).code).toBe(0);
            // The killed request was never answered: pages killAt..15 are new, at most 2 more are fetched again.
            expect(pages).toBeLessThanOrEqual(15 - killAt + 1 + 2);
            const [rows] = await queryDb<{ n: number; ids: number }>(
              join(dir, 'c.duckdb'),
              'SELECT count(*)::INT AS n, count(DISTINCT id)::INT AS ids FROM line_items',
            );
            expect(rows).toEqual({ n: 30 * 500, ids: 30 * 500 });
          });
        },
      );
    },
  );
});
