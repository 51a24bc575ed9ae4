import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CostsyncError, ExitCode } from '../../src/errors.js';
import { acquireLock } from '../../src/state/lock.js';
import { lockPaths, runSync } from '../../src/sync/runner.js';
import { FAST_CLIENT, memoryLogger, testSyncConfig, withEmulator, withTempDir, SPAN } from '../helpers.js';
import { mkdirSync } from 'node:fs';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };

describe('run lock', () => {
  it('refuses a second run while one holds the lock, naming the holder (exit code 5)', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 10, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir);
        mkdirSync(config.stateDir, { recursive: true });
        for (const path of lockPaths(config)) {
          const held = acquireLock(path, 'test holder');
          try {
            const error = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT }).catch((e: unknown) => e);
            expect(error).toBeInstanceOf(CostsyncError);
            expect((error as CostsyncError).exitCode).toBe(ExitCode.LOCKED);
            expect((error as CostsyncError).message).toContain(`pid ${process.pid}`);
            expect((error as CostsyncError).message).toContain('test holder');
          } finally {
            held.release();
          }
        }
        expect((await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
      });
    });
  });

  it('recovers a lock left by a dead process, or left empty or half-written', async () => {
    await withTempDir(async (dir) => {
      const path = `${dir}/x.lock`;
      for (const leftover of [
        JSON.stringify({ pid: 2 ** 22 + 12345, hostname: (await import('node:os')).hostname(), startedAt: 'then', command: 'dead' }),
        '',
        '{"pid": 12',
      ]) {
        writeFileSync(path, leftover);
        const lock = acquireLock(path, 'me');
        expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ pid: process.pid, command: 'me' });
        lock.release();
        expect(existsSync(path)).toBe(false);
      }
    });
  });

  it('lets exactly one of two contenders take a free lock', async () => {
    await withTempDir(async (dir) => {
      const path = `${dir}/y.lock`;
      const first = acquireLock(path, 'one');
      expect(() => acquireLock(path, 'two')).toThrow(/holds the lock/);
      first.release();
      acquireLock(path, 'three').release();
    });
  });
});
