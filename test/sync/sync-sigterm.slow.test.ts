// A spawned sync stopped by SIGTERM and run again, in the slow tier (a `.slow.test.ts`): in
// `npm test`, first-day's SIGTERM and closed-pipe stop real processes, and sync-resume resumes a stopped run.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { backfillFlags, run, startCli, tableDigest, withEmulator, withTempDir, SPAN, syncCommand } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

const syncArgs = (url: string, dir: string, extra: string[] = []) => syncCommand(url, dir, [...backfillFlags(), ...extra]);

describe('costsync sync (CLI) under SIGTERM', () => {
  it('stops cleanly on SIGTERM with exit code 4, and the next run finishes the job', async () => {
    let requests = 0;
    let onThird: (() => void) | null = null;
    await withEmulator(
      {
        ...SPAN,
        rowsPerDay: 300,
        clock,
        onRequest: () => {
          if (++requests === 3) onThird?.();
        },
      },
      async ({ url }) => {
        await withTempDir(async (dir) => {
          const args = syncArgs(url, dir, ['--streams', 'line_items', '--window-days', '2', '--concurrency', '1']);
          const { child, result } = startCli(args, { COSTSYNC_API_KEY: 'demo-key' });
          onThird = () => child.kill('SIGTERM');
          const { code, stderr } = await result;
          expect(code, stderr).toBe(ExitCode.STOPPED_EARLY);
          expect(stderr).toMatch(/SIGTERM/);
          const rest = await run(args, { COSTSYNC_API_KEY: 'demo-key' });
          expect(rest.code).toBe(0);
          expect((await tableDigest(join(dir, 'c.duckdb'))).line_items!.rows).toBe(300 * 30);
        });
      },
    );
  });
});
