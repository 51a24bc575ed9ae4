import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { expect, it } from 'vitest';
import { CLI, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';

// A sync told by the API to hold its requests for 50 s, then stopped: the run returned at once, but
// the hold's timer kept the process alive until the hold ended (a pod's grace period is 30 s).
it('SIGTERM during a rate-limit hold ends the process at once, not when the hold ends', async () => {
  await withEmulator({ rateLimit: 10, rowsPerDay: 50 }, async ({ url }) => {
    await withTempDir(async (dir) => {
      const child = spawn(process.execPath, [CLI, ...syncCommand(url, dir)], {
        env: { ...process.env, COSTSYNC_API_KEY: 'demo-key' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        const first = !/holding requests/.test(stderr);
        stderr += String(d);
        if (first && /holding requests/.test(stderr)) child.kill('SIGTERM');
      });
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(stderr).toMatch(/rate limited: holding requests for \d+ s/);
      expect(code).toBe(4);
    });
  });
});
