// Issue 81 item 12: a nightly asks each rollups grouping once (the recheck's requests serve the lookback's
// windows and the older dates' checks), and the anomalies as the last run found them (split by severity).
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { runSync } from '../../src/sync/runner.js';
import { planDryRun } from '../../src/sync/dry-run.js';
import { resolveSyncConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { withEmulator, withTempDir } from '../support/helpers.js';

const end = '2025-06-30';
// No request waits (no rate limit here): a sleep would be a bug, and ends at once.
const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
const quiet = createLogger({ format: 'json', level: 'error', write: () => undefined });

describe("a nightly's requests", () => {
  it('over unchanged data: 1 line items page, 3 rollups (one a grouping) and its check, 4 anomalies; restated older dates add their pages only', async () => {
    // 4 alerts a day: the horizon's overflow one response of 100.
    await withEmulator({ startDate: '2025-04-01', endDate: end, rowsPerDay: 20, anomaliesPerDay: 4, clock }, async (emulator) =>
      withTempDir(async (dir) => {
        const config = resolveSyncConfig({
          flags: {
            'base-url': emulator.url,
            db: join(dir, 'c.duckdb'),
            'state-dir': join(dir, 'state'),
            'start-date': '2025-04-01',
            until: end,
            'rate-limit': 100000,
          },
          env: { COSTSYNC_API_KEY: 'demo-key' },
          file: {},
          nowMs: clock.now(),
        });
        const night = async () => {
          emulator.requestLog.reset();
          const summary = await runSync({ config, logger: quiet, clock });
          expect(summary.outcome).toBe('success');
          const by = (route: string) => emulator.requestLog.count({ route });
          return {
            lineItems: by('line-items'),
            rollups: by('rollups'),
            anomalies: by('anomalies'),
            older: summary.streams.line_items?.olderSynced,
          };
        };
        await night();
        // The dry run counts what the run makes ("at least": a severity may overflow a response too, then split further).
        const [plan] = (await planDryRun(config, clock.now())).plans;
        expect({ requests: plan!.requests, atLeast: plan!.atLeast }).toEqual({ requests: 9, atLeast: true });
        expect(await night()).toEqual({ lineItems: 1, rollups: 4, anomalies: 4, older: 0 });
        // Two older dates apart from each other and from the lookback.
        emulator.restateDay('2025-06-10', { changeRate: 0.5, deleteRate: 0.1, addRows: 2 });
        emulator.restateDay('2025-06-20', { changeRate: 0.5, deleteRate: 0.1, addRows: 2 });
        expect(await night()).toEqual({ lineItems: 3, rollups: 4, anomalies: 4, older: 2 });
      }),
    );
  });
});
