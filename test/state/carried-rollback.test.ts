import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keyFingerprint } from '../../src/fingerprint.js';
import { carriedState, type CarriedState } from '../../src/state/carried.js';
import { StateStore } from '../../src/state/store.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { runSync } from '../../src/sync/runner.js';
import { FAST_CLIENT, memoryLogger, queryDb, testSyncConfig, withScriptedServer, withTempDir } from '../support/helpers.js';
import { decodeCarried } from '../../src/state/progress.js';

const clock = { now: () => Date.parse('2025-06-03T06:00:00Z'), sleep: async () => undefined };
const item = (id: string, date: string) => ({
  id,
  usage_date: date,
  provider_type: 'aws',
  provider_service: 'ec2',
  net_amount_usd: 1.5,
  currency_original: 'USD',
  project_id: 'p',
  user_email: 'u@x',
});
const page = (data: unknown[]) => ({ body: { data, error: null, meta: { has_more: false } } });

/** The windows a carried state says are done, by their first date. */
function carriedDone(state: CarriedState): string[] {
  return (state.line_items?.pending?.windows ?? [])
    .filter((w) => w.status === 'done')
    .map((w) => w.start)
    .sort();
}

describe('the state the warehouse carries names exactly the windows whose rows it committed', () => {
  it('after a group commit that fails and is stored again one by one: the window committed on its own is carried done, the failed one not', async () => {
    // An id with a lone surrogate passes the record checks, but DuckDB's JSON reader refuses its
    // spooled page: the second window's store fails, in the group and again on its own.
    await withScriptedServer(
      [page([item('a1', '2025-06-01'), item('a2', '2025-06-01')]), page([item('b\ud800', '2025-06-02')])],
      async (url, hits) => {
        await withTempDir(async (dir) => {
          // One window fetched at a time, neither stored before the other is fetched: both windows are
          // stored together, in one group commit, the good one first (its carry runs before the failure).
          const config = testSyncConfig(url, dir, {
            streams: ['line_items'],
            startDate: '2025-06-01',
            until: '2025-06-02',
            windowDays: 1,
            lookbackDays: 0,
            concurrency: 1,
            reconcile: 'off',
          });
          const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
          expect(summary.outcome).toBe('failed');
          expect((summary.error as Error).message).toMatch(/no low surrogate/);
          expect(hits()).toBe(2);

          for (const db of [workingCopyPath(config.stateDir, config.db), config.db]) {
            const committed = (
              await queryDb<{ d: string }>(
                db,
                "SELECT DISTINCT usage_date::VARCHAR AS d FROM line_items WHERE source = 'default' ORDER BY d",
              )
            ).map((r) => r.d);
            expect(committed).toEqual(['2025-06-01']);
            const [row] = await queryDb<{ state: string }>(
              db,
              "SELECT state::VARCHAR AS state FROM _costsync_sync_state WHERE source = 'default'",
            );
            const carried = decodeCarried(row!.state);
            expect({ db: basename(db), done: carriedDone(carried) }).toEqual({ db: basename(db), done: committed });
          }
          // The state file says the same: the next run, with it or from the warehouse alone, fetches only the failed window.
          const identity = { name: 'default', baseUrl: config.baseUrl, keyFingerprint: keyFingerprint(config.apiKey) };
          const file = new StateStore(config.stateDir, identity, basename(workingCopyPath(config.stateDir, config.db), '.duckdb')).load();
          const [row] = await queryDb<{ state: string }>(
            config.db,
            "SELECT state::VARCHAR AS state FROM _costsync_sync_state WHERE source = 'default'",
          );
          expect(decodeCarried(row!.state)).toEqual(carriedState(file));
        });
      },
    );
  });
});
