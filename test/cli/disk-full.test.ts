// Issue 52 row 10: a full disk during a backfill is one error with its own code and a hint stating the
// space a run needs. The run needs a real full file system: a 4 MB tmpfs, mounted in a mount namespace of
// its own (unshare -m, as the lock tests use unshare), under the process that syncs.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DISK_MB } from '../../src/errors.js';
import { CLI, withEmulator, withTempDir, SPAN, syncCommand, backfillFlags } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

describe('a full disk', () => {
  it('ends the run with exit 1 and CS_ERR_DISK_FULL on every error line, its hint naming the space a run needs', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 2_000, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const disk = join(dir, 'disk');
        const sync = [CLI, ...syncCommand(url, disk)];
        const args = [...sync, ...backfillFlags()];
        const child = spawn(
          'unshare',
          ['-m', 'sh', '-c', 'mount -t tmpfs -o size=4m tmpfs "$0" && exec "$@"', disk, process.execPath, ...args],
          {
            env: { PATH: process.env.PATH ?? '', COSTSYNC_API_KEY: 'demo-key' },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d));
        child.stdout.resume();
        const [code] = (await once(child, 'exit')) as [number | null];
        const errors = stderr
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { level: string; msg: string; code?: string })
          .filter((l) => l.level === 'error');
        expect({ code, errors: errors.length > 0 }, stderr.slice(-2000)).toEqual({ code: 1, errors: true });
        for (const e of errors) expect(e.code, e.msg).toBe('CS_ERR_DISK_FULL');
        const first = errors[0]!.msg;
        expect(first).toMatch(/The disk is full: /);
        expect(first).toContain(`about ${DISK_MB.keptPerMillionHeld} MB a million line items the warehouse holds`);
        expect(stderr).not.toContain('code=undefined');
        // Said once a line, where it happened, even when a publish error quotes the write that failed.
        for (const line of stderr.split('\n')) expect(line.split('The disk is full').length, line).toBeLessThanOrEqual(2);
      });
    });
  });
});
