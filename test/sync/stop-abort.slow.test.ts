// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: A stop with every answer held: closed-pipe, first-day's bounded stops, stop-hold, sync-resume.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, backfillFlags, queryDb, SPAN, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

describe('a stop never waits on the network', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s while every answer is held: the run ends (exit 4, lock released, run recorded as stopped); the cut request is fetched again next run',
    async (signal) => {
      let hold = true;
      let held: (() => void) | null = null;
      const release: (() => void)[] = [];
      await withEmulator(
        {
          ...SPAN,
          rowsPerDay: 10,
          clock,
          // An API that does not answer (as one answering in 45 s): the reply waits until the test lets it go.
          beforeReply: async () => {
            if (!hold) return;
            await new Promise<void>((resolve) => {
              release.push(resolve);
              held?.();
            });
          },
        },
        async (emulator) => {
          await withTempDir(async (dir) => {
            const args = [CLI, ...syncCommand(emulator.url, dir, backfillFlags())];
            const env = { PATH: process.env.PATH ?? '', COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
            const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
            const exited = once(child, 'exit');
            let stderr = '';
            child.stderr.on('data', (d: Buffer) => {
              stderr += d.toString();
            });
            // The first request reached the API and waits for its answer: now stop.
            await new Promise<void>((resolve) => {
              held = resolve;
            });
            child.kill(signal);
            const [code] = (await exited) as [number | null];
            expect(code, stderr).toBe(4);
            expect(release.length).toBeGreaterThan(0);
            // line_items' start line waits for its estimate (a rollups request, held): a stopped run does not announce it.
            expect(stderr).not.toMatch(/line_items: syncing/);
            const [run] = await queryDb<{ outcome: string }>(join(dir, 'c.duckdb'), 'SELECT outcome FROM sync_runs');
            expect(run!.outcome).toBe('stopped');
            expect(existsSync(join(dir, 'state', 'costsync.lock'))).toBe(false);
            // Let the held answers go (to nobody), then run again: it completes, the cut page among what it fetches.
            hold = false;
            for (const r of release) r();
            const before = emulator.requestLog.count({ route: 'line-items' });
            const again = spawn(process.execPath, args, { env, stdio: 'ignore' });
            expect((await once(again, 'exit'))[0]).toBe(0);
            expect(emulator.requestLog.count({ route: 'line-items' }) - before).toBeGreaterThan(0);
            const [rows] = await queryDb<{ n: number }>(join(dir, 'c.duckdb'), 'SELECT count(*)::INT AS n FROM line_items');
            expect(rows!.n).toBe(30 * 10);
          });
        },
      );
    },
  );
});
