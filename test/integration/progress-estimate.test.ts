import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createProgress, type ProgressFigures } from '../../src/progress.js';
import { runSync } from '../../src/sync/runner.js';
import type { ProgressListener } from '../../src/sync/context.js';
import { FAST_CLIENT, memoryLogger, testSyncConfig, withEmulator, withTempDir } from '../helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };

/** A progress display (injected clock) and the estimate it showed once `atPages` pages were fetched. */
function watch(atPages: (snapshot: ProgressFigures) => boolean) {
  let t = 0;
  const progress = createProgress({ live: false, requestsPerMinute: 60, now: () => (t += 1000), write: () => undefined, logger: createLogger({ format: 'json', level: 'error', write: () => undefined }) });
  const seen: { early?: ProgressFigures; planned?: ProgressFigures } = {};
  const listener: ProgressListener = {
    planned: (stream, info) => {
      progress.planned!(stream, info);
      seen.planned = progress.snapshot().find((f) => f.stream === 'line_items');
    },
    page: (stream, info) => {
      progress.page!(stream, info);
      const f = progress.snapshot().find((x) => x.stream === 'line_items');
      if (f && !seen.early && atPages(f)) seen.early = f;
    },
    windowDone: (stream, info) => progress.windowDone!(stream, info),
  };
  return { listener, seen, final: () => progress.snapshot().find((f) => f.stream === 'line_items')! };
}

describe('progress estimates on emulator data', () => {
  it('after a tenth of the pages of a first backfill, the estimate from rollups is within 1.5x of the truth; a re-sync is estimated from stored rows before its first page', async () => {
    await withEmulator({ startDate: '2025-05-01', endDate: '2025-06-30', rowsPerDay: 1000, clock, anomaliesPerDay: 0 }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { streams: ['line_items'], startDate: '2025-05-01', windowDays: 10, concurrency: 1 });
        const first = watch((f) => f.pages >= 7);
        expect((await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, progress: first.listener })).outcome).toBe('success');
        const truth = first.final().pages;
        expect(truth).toBeGreaterThanOrEqual(61);
        expect(first.seen.planned!.estimatedPages).toBeNull();
        const early = first.seen.early!.estimatedPages!;
        expect(early / truth).toBeGreaterThan(1 / 1.5);
        expect(early / truth).toBeLessThan(1.5);

        const again = watch(() => false);
        expect((await runSync({ config: { ...config, since: '2025-05-01' }, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, progress: again.listener })).outcome).toBe('success');
        const stored = again.seen.planned!.estimatedPages!;
        expect(stored / again.final().pages).toBeGreaterThan(1 / 1.5);
        expect(stored / again.final().pages).toBeLessThan(1.5);
      });
    });
  });
});
