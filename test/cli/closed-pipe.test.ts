import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli-app.js';
import type { CommandIo } from '../../src/commands/common.js';
import { CLI, queryDb, run, SPAN, withEmulator, withTempDir, syncCommand, backfillFlags, spanFlags } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

/** Runs `costsync ARGS 2>&1 | head -N` in bash; costsync's own exit code (PIPESTATUS) and what head printed. */
async function throughHead(args: string[], lines: number): Promise<{ code: number; out: string }> {
  const script = `"$0" "${CLI}" "$@" 2>&1 | head -${lines}; exit \${PIPESTATUS[0]}`;
  const child = spawn('bash', ['-c', script, process.execPath, ...args], {
    env: { PATH: process.env.PATH ?? '', COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const [code] = (await once(child, 'exit')) as [number];
  return { code, out };
}

describe('a closed stdout or stderr', () => {
  it('`sync … 2>&1 | head -3` stops the run as SIGTERM does: exit 4, the run recorded as stopped, the lock released; the next run goes on', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const args = syncCommand(emulator.url, dir, [...backfillFlags(1)]);
        const cut = await throughHead(args, 3);
        expect(cut.out.trim().split('\n')).toHaveLength(3);
        expect(cut.code).toBe(4);
        expect(existsSync(join(dir, 'state', 'costsync.lock'))).toBe(false);
        const runs = await queryDb<{ outcome: string }>(join(dir, 'c.duckdb'), 'SELECT outcome FROM sync_runs');
        expect(runs.map((r) => r.outcome)).toEqual(['stopped']);
        // The next run (in this process: no pipe is closed on it) goes on from the stopped one.
        const next = await run(args, { COSTSYNC_API_KEY: 'demo-key' });
        expect(next.code).toBe(0);
        expect(JSON.parse(next.stdout.trim())).toMatchObject({ msg: 'sync finished', outcome: 'success' });
        // A read-only command keeps ending quietly with 0.
        const status = await throughHead(['status', '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state')], 1);
        expect(status.code).toBe(0);
      });
    });
  });

  it('a reader gone while the run has nothing to print stops it at once, not at its next line (the request count tells)', async () => {
    let cut = { atRequest: 0, reader: 0 };
    const onRequest = () => {
      // The reader goes away at the sixth request: mid-backfill, between two of the run's lines.
      if (emulatorRequests() === 6 && cut.reader > 0) {
        cut.atRequest = 6;
        process.kill(cut.reader);
      }
    };
    let emulatorRequests = () => 0;
    await withEmulator({ ...SPAN, rowsPerDay: 400, clock, onRequest }, async (emulator) => {
      emulatorRequests = () => emulator.requestLog.total;
      await withTempDir(async (dir) => {
        // Twelve thousand line items at two requests a second: a score of requests with no line written
        // between one stream's start and its end. The reader (cat) reads all and is killed by the test.
        const args = syncCommand(emulator.url, dir, [
          ...spanFlags(undefined, { rateLimit: false }),
          '--rate-limit',
          '120',
          '--log-format',
          'json',
        ]);
        const codeFile = join(dir, 'code');
        const script = `{ "$0" "${CLI}" "$@" 2>&1; echo $? > "${codeFile}"; } | cat > /dev/null & echo $!; wait`;
        const child = spawn('bash', ['-c', script, process.execPath, ...args], {
          env: { PATH: process.env.PATH ?? '', COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' },
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        child.stdout.once('data', (d: Buffer) => {
          cut = { ...cut, reader: Number(d.toString().trim()) };
        });
        await once(child, 'exit');
        expect(cut.atRequest).toBe(6);
        expect(Number(readFileSync(codeFile, 'utf8'))).toBe(4);
        // At most the requests in flight or already let through when the reader went: not the backfill's rest.
        expect(emulator.requestLog.total - cut.atRequest).toBeLessThanOrEqual(2);
        const runs = await queryDb<{ outcome: string; error: string }>(join(dir, 'c.duckdb'), 'SELECT outcome, error FROM sync_runs');
        expect(runs).toEqual([{ outcome: 'stopped', error: expect.stringMatching(/^stopped: stdout and stderr \(one pipe\) was closed/) }]);
      });
    });
  });

  it('a reader that goes away after the run finished its work (at the summary) leaves exit 0, as sync_runs and the metrics record it', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async (emulator) =>
      withTempDir(async (dir) => {
        // stdout closes at the summary's second line (an event, as `2>/dev/null | head -1` would close it).
        let onClosed: ((which: string) => void) | null = null;
        let lines = 0;
        const io: CommandIo = {
          env: { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' },
          stdout: () => {
            if (++lines === 2) onClosed?.('stdout');
          },
          stderr: () => undefined,
          isTTY: false,
          now: () => Date.now(),
          onClosedPipe: (handler) => {
            onClosed = handler;
            return () => {
              onClosed = null;
            };
          },
        };
        const metrics = join(dir, 'm.prom');
        const code = await runCli(syncCommand(emulator.url, dir, [...spanFlags(), '--metrics-file', metrics]), io);
        expect(lines).toBeGreaterThanOrEqual(2);
        expect(code).toBe(0);
        const runs = await queryDb<{ outcome: string }>(join(dir, 'c.duckdb'), 'SELECT outcome FROM sync_runs');
        expect(runs.map((r) => r.outcome)).toEqual(['success']);
        expect(readFileSync(metrics, 'utf8')).toMatch(/outcome="success"/);
      }),
    );
  });
});
