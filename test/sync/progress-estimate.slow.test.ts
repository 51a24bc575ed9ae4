// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: The ETA: unit/progress.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createProgress, type ProgressFigures } from '../../src/progress.js';
import { runSync } from '../../src/sync/runner.js';
import type { ProgressListener } from '../../src/sync/context.js';
import { FAST_CLIENT, memoryLogger, testSyncConfig, withEmulator, withTempDir } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };

/**
 * A progress display on an injected clock that moves `msPerPage` a page (as a rate limit would pace
 * them), and the figures it showed once `atPages` held.
 */
function watch(atPages: (snapshot: ProgressFigures) => boolean, requestsPerMinute = 60, onPlanned: () => void = () => undefined) {
  let t = 0;
  const msPerPage = 60_000 / requestsPerMinute;
  const progress = createProgress({
    live: false,
    requestsPerMinute,
    now: () => t,
    write: () => undefined,
    logger: createLogger({ format: 'json', level: 'error', write: () => undefined }),
  });
  const seen: { early?: ProgressFigures; planned?: ProgressFigures } = {};
  const listener: ProgressListener = {
    planned: (stream, info) => {
      progress.planned!(stream, info);
      seen.planned = progress.snapshot().find((f) => f.stream === 'line_items');
      if (stream === 'line_items') onPlanned();
    },
    page: (stream, info) => {
      t += msPerPage * (info.pages ?? 1);
      progress.page!(stream, info);
      const f = progress.snapshot().find((x) => x.stream === 'line_items');
      if (f && !seen.early && atPages(f)) seen.early = f;
    },
    windowDone: (stream, info) => progress.windowDone!(stream, info),
  };
  return { listener, seen, msPerPage, final: () => progress.snapshot().find((f) => f.stream === 'line_items')! };
}

describe('progress estimates on emulator data', () => {
  it('after a tenth of the pages of a first backfill, the estimate from rollups is within 1.5x of the truth; a re-sync is estimated from stored rows before its first page', async () => {
    // The plan is announced alongside the first pages: the line items' answers wait for it, so it is seen
    // before any page (a first backfill then has nothing to estimate from), however the machine times them.
    let announced = () => undefined as void;
    const planned = new Promise<void>((resolve) => (announced = resolve));
    const beforeReply = async ({ route }: { route: string }) => {
      if (route === 'line-items') await planned;
    };
    await withEmulator(
      { startDate: '2025-05-01', endDate: '2025-06-30', rowsPerDay: 1000, clock, anomaliesPerDay: 0, beforeReply },
      async ({ url }) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(url, dir, { streams: ['line_items'], startDate: '2025-05-01', windowDays: 10, concurrency: 1 });
          const first = watch((f) => f.pages >= 7, 60, announced);
          expect(
            (await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, progress: first.listener })).outcome,
          ).toBe('success');
          const truth = first.final().pages;
          expect(truth).toBeGreaterThanOrEqual(61);
          expect(first.seen.planned!.estimatedPages).toBeNull();
          const early = first.seen.early!.estimatedPages!;
          expect(early / truth).toBeGreaterThan(1 / 1.5);
          expect(early / truth).toBeLessThan(1.5);

          const again = watch(() => false);
          expect(
            (
              await runSync({
                config: { ...config, since: '2025-05-01' },
                logger: memoryLogger(),
                clock,
                clientOptions: FAST_CLIENT,
                progress: again.listener,
              })
            ).outcome,
          ).toBe('success');
          const stored = again.seen.planned!.estimatedPages!;
          expect(stored / again.final().pages).toBeGreaterThan(1 / 1.5);
          expect(stored / again.final().pages).toBeLessThan(1.5);
        });
      },
    );
  });

  it('a one-window first run (30 days at 300 requests a minute) shows an ETA within 1.5x of the truth 12 seconds in, from one rollups request', async () => {
    await withEmulator(
      { startDate: '2025-05-01', endDate: '2025-06-30', rowsPerDay: 5000, clock, anomaliesPerDay: 0 },
      async (emulator) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(emulator.url, dir, {
            streams: ['line_items'],
            startDate: '2025-06-01',
            windowDays: 30,
            concurrency: 1,
            reconcile: 'off',
          });
          // 12 s in at 300 a minute: the 60th page.
          const first = watch((f) => f.pages * 200 >= 12_000, 300);
          expect(
            (await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, progress: first.listener })).outcome,
          ).toBe('success');
          const truthPages = first.final().pages;
          expect(truthPages).toBe(150);
          const early = first.seen.early!;
          expect(early.estimatedPages).not.toBeNull();
          const truthEta = ((truthPages - early.pages) * first.msPerPage) / 1000;
          expect(early.etaSeconds! / truthEta).toBeGreaterThan(1 / 1.5);
          expect(early.etaSeconds! / truthEta).toBeLessThan(1.5);
          // The one request the estimate spends: with the window check off, the only rollups request.
          expect(emulator.requestLog.count({ route: 'rollups' })).toBe(1);

          // A nightly run of the same dates has stored rows to go on: no request for the estimate, only
          // the recheck's one (the provider view: rollups are not synced).
          const before = emulator.requestLog.count({ route: 'rollups' });
          const nightly = watch(() => false, 300);
          expect(
            (await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, progress: nightly.listener })).outcome,
          ).toBe('success');
          expect(emulator.requestLog.count({ route: 'rollups' })).toBe(before + 1);
          expect(nightly.seen.planned!.estimatedPages).not.toBeNull();
        });
      },
    );
  });
});
