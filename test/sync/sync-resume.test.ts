import { describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/runner.js';
import { basename } from 'node:path';
import { StateStore } from '../../src/state/store.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { keyFingerprint } from '../../src/fingerprint.js';
import { carriedState } from '../../src/state/carried.js';
import {
  FAST_CLIENT,
  memoryLogger,
  queryDb,
  tableDigest,
  testSyncConfig,
  withEmulator,
  withScriptedServer,
  withTempDir,
  SPAN,
  syncStoppedAt,
} from '../support/helpers.js';
import { decodeCarried } from '../../src/state/progress.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
const base = { ...SPAN, rowsPerDay: 400, clock };

describe('stopping and resuming', () => {
  it('stops cleanly with progress saved, and the next run resumes mid-window to the same tables', async () => {
    await withEmulator(base, async (emulator) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(emulator.url, dir, { windowDays: 15, concurrency: 1 });
        const { summary: first } = await syncStoppedAt(config, clock, 3, 'line_items');
        expect(first.outcome).toBe('stopped');
        const warehouse = basename(workingCopyPath(config.stateDir, config.db), '.duckdb');
        const state = new StateStore(
          config.stateDir,
          { name: 'default', baseUrl: config.baseUrl, keyFingerprint: keyFingerprint(config.apiKey) },
          warehouse,
        ).load();
        const active = state.streams.line_items!.pending!.windows.find((w) => w.status === 'active')!;
        // The stop came after the 3rd page was saved; a page fetched meanwhile is written and saved too,
        // unless the stop cut its request (then it is fetched again).
        const fetchedBefore = emulator.requestLog.count({ route: 'line-items' });
        expect([3, 4]).toContain(active.page);
        expect(fetchedBefore - active.page).toBeGreaterThanOrEqual(0);
        expect(fetchedBefore - active.page).toBeLessThanOrEqual(1);
        expect(active.cursor).not.toBeNull();

        emulator.requestLog.reset();
        const second = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(second.outcome).toBe('success');
        // 12,000 rows in 12 pages: those saved before the stop are not fetched again.
        expect(emulator.requestLog.count({ route: 'line-items' })).toBe(12 - active.page);

        await withTempDir(async (fresh) => {
          const clean = testSyncConfig(emulator.url, fresh, { windowDays: 15 });
          await runSync({ config: clean, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
          const [a, b] = [await tableDigest(config.db), await tableDigest(clean.db)];
          expect(a.line_items).toEqual(b.line_items);
          expect(a.rollups_daily).toEqual(b.rollups_daily);
          expect(a.anomalies).toEqual(b.anomalies);
        });
      });
    });
  });

  it('a run, stopped mid-window or finished, ends with the warehouse carrying what its state file says (the carry follows the file in the background)', async () => {
    await withEmulator(base, async (emulator) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(emulator.url, dir, { windowDays: 15, concurrency: 1 });
        const wh = workingCopyPath(config.stateDir, config.db);
        const store = () =>
          new StateStore(
            config.stateDir,
            { name: 'default', baseUrl: config.baseUrl, keyFingerprint: keyFingerprint(config.apiKey) },
            basename(wh, '.duckdb'),
          );
        const carried = async () =>
          decodeCarried(
            (await queryDb<{ state: string }>(wh, "SELECT state::VARCHAR AS state FROM _costsync_sync_state WHERE source = 'default'"))[0]!
              .state,
          );
        const { summary: first } = await syncStoppedAt(config, clock, 2, 'line_items');
        expect(first.outcome).toBe('stopped');
        const stopped = store().load();
        expect(stopped.streams.line_items!.pending).not.toBeNull();
        expect(await carried()).toEqual(carriedState(stopped));

        const second = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(second.outcome).toBe('success');
        const finished = store().load();
        expect(finished.streams.line_items!.pending).toBeNull();
        expect(await carried()).toEqual(carriedState(finished));
      });
    });
  });

  it('stops at --max-runtime by the injected clock', async () => {
    let now = Date.parse('2025-07-01T06:00:00Z');
    const moving = { now: () => now, sleep: async () => undefined };
    await withEmulator({ ...base, clock: moving }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir, { streams: ['line_items'], maxRuntimeMs: 60_000, windowDays: 5, concurrency: 1 });
        const summary = await runSync({
          config,
          logger: memoryLogger(),
          clock: moving,
          clientOptions: FAST_CLIENT,
          progress: {
            page: () => {
              now += 30_000;
            },
          },
        });
        expect(summary.outcome).toBe('stopped');
        expect(summary.stopReason).toMatch(/--max-runtime/);
        expect(summary.streams.line_items!.pages).toBe(2);
      });
    });
  });

  it('restarts a window whose cursor expired, with a warning, and ends with the right rows', async () => {
    await withEmulator(base, async (emulator) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(emulator.url, dir, { streams: ['line_items'], windowDays: 30 });
        emulator.faults.script({ kind: 'expireCursor', pathPrefix: '/api/v1/public/line-items' });
        // The first page has no cursor, so the expiry hits the second.
        const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(summary.outcome).toBe('success');
        expect(summary.warnings.some((w) => /refused the saved cursor/.test(w))).toBe(true);
        expect((await tableDigest(config.db)).line_items!.rows).toBe(400 * 30);
        expect(emulator.requestLog.count({ route: 'line-items', status: 400 })).toBe(1);
      });
    });
  });

  it('stops a server that returns the same cursor forever, keeping what it had', async () => {
    const item = (i: number) => ({
      id: `x${i}`,
      usage_date: '2025-06-01',
      provider_type: 'aws',
      provider_service: 's',
      net_amount_usd: 1,
      currency_original: 'USD',
      project_id: 'p',
      user_email: 'e',
    });
    let n = 0;
    await withScriptedServer(
      [{ body: { data: [item(n++)], error: null, meta: { next_cursor: 'same', has_more: true } } }],
      async (url, hits) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(url, dir, { streams: ['line_items'], startDate: '2025-06-01', until: '2025-06-01' });
          const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
          expect(summary.outcome).toBe('failed');
          expect((summary.error as { code: string }).code).toBe('CS_ERR_CURSOR_LOOP');
          expect(hits()).toBe(2);
        });
      },
    );
  });
});
