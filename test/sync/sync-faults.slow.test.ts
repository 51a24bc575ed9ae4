// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: Faulty servers: client (500s, drops, cut-off and malformed bodies, 429 holds), sync-hostile, stop-hold.
import { describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/runner.js';
import { FAST_CLIENT, fakeClock, memoryLogger, tableDigest, testSyncConfig, withEmulator, withTempDir, SPAN } from '../support/helpers.js';

const fixed = Date.parse('2025-07-01T06:00:00Z');
const base = { ...SPAN, rowsPerDay: 300 };

async function cleanDigest(url: string) {
  return withTempDir(async (dir) => {
    const config = testSyncConfig(url, dir);
    const clock = { now: () => fixed, sleep: async () => undefined };
    const s = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
    expect(s.outcome).toBe('success');
    return tableDigest(config.db);
  });
}

describe('sync under faults', () => {
  it('ends with the same tables through a storm of 500s, drops, cut-off and malformed bodies', async () => {
    const clock = { now: () => fixed, sleep: async () => undefined };
    await withEmulator({ ...base, clock }, async (clean) => {
      const expected = await cleanDigest(clean.url);
      const faults = { errorRate: 0.15, dropRate: 0.05, truncateRate: 0.05, malformedRate: 0.05 };
      await withEmulator({ ...base, clock, faults, seed: 1 }, async (stormy) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(stormy.url, dir);
          const summary = await runSync({
            config,
            logger: memoryLogger(),
            clock,
            clientOptions: { retry: { retries: 10, minTimeoutMs: 1, maxTimeoutMs: 2 } },
          });
          expect(summary.outcome).toBe('success');
          expect(summary.retries).toBeGreaterThan(3);
          expect(stormy.requestLog.count({ status: 500 })).toBeGreaterThan(0);
          expect(await tableDigest(config.db)).toEqual(expected);
        });
      });
    });
  });

  it('holds and goes on through a 429 storm, counting the 429s in the run', async () => {
    const clock = fakeClock(fixed);
    await withEmulator({ ...base, clock }, async (emulator) => {
      const expected = await cleanDigest(emulator.url);
      emulator.faults.script(...Array.from({ length: 12 }, () => 'rateLimit' as const));
      await withTempDir(async (dir) => {
        const config = testSyncConfig(emulator.url, dir);
        const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(summary.outcome).toBe('success');
        expect(summary.rateLimited).toBe(12);
        expect(clock.sleeps.length).toBeGreaterThan(0);
        expect(clock.sleeps.every((ms) => ms <= 1000)).toBe(true);
        expect(await tableDigest(config.db)).toEqual(expected);
      });
    });
  });

  it('fails with a clear error when the server keeps failing, keeping progress', async () => {
    const clock = { now: () => fixed, sleep: async () => undefined };
    await withEmulator({ ...base, clock, faults: { errorRate: 1 } }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { streams: ['line_items'] });
        const summary = await runSync({
          config,
          logger: memoryLogger(),
          clock,
          clientOptions: { retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 2 } },
        });
        expect(summary.outcome).toBe('failed');
        expect((summary.error as { code: string }).code).toBe('CS_ERR_RETRIES_EXHAUSTED');
        const digest = await tableDigest(config.db);
        expect(digest.line_items!.rows).toBe(0);
      });
    });
  });
});
