// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: Several sources: shards (four runners sharing sources), the sources benchmark's smoke.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import type { SourceConfig } from '../../src/sources.js';
import type { EmulatorInput } from '../../src/emulator/server.js';
import { runSync } from '../../src/sync/runner.js';
import {
  FAST_CLIENT,
  memoryLogger,
  run,
  syncStoppedAt,
  testSyncConfig,
  withEmulator,
  withTempDir,
  SPAN,
  queryDb,
} from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
const key = (k: string, workspace: string, extra: Record<string, unknown> = {}) => ({
  key: k,
  scopes: [...SCOPES],
  plan: 'business' as const,
  workspace,
  ...extra,
});
/** The three workspaces' sources (`acme-eu`, `acme-us`, `acme-apac`) at `url`, each with its own key. */
function acmeSources(url: string): SourceConfig[] {
  return ['eu', 'us', 'apac'].map((w) => ({ name: `acme-${w}`, baseUrl: url, apiKey: `k-${w}`, rateLimit: 100_000 }));
}

/** The warehouse `db` holds each of the three sources' 3,000 line items. */
async function expectEverySourceWhole(db: string) {
  const perSource = await queryDb<{ source: string; n: number }>(
    db,
    'SELECT source, count(*)::INT AS n FROM line_items GROUP BY source ORDER BY source',
  );
  expect(perSource).toEqual([
    { source: 'acme-apac', n: 3000 },
    { source: 'acme-eu', n: 3000 },
    { source: 'acme-us', n: 3000 },
  ]);
}

const workspaces: EmulatorInput = {
  ...SPAN,
  rowsPerDay: 100,
  clock,
  anomaliesPerDay: 4,
  keys: {
    keys: [key('k-eu', 'eu'), key('k-us', 'us'), key('k-apac', 'apac'), key('k-eu-new', 'eu'), key('k-old', 'us', { revoked: true })],
    connections: [],
  },
};

describe('several sources in one warehouse', () => {
  it('three workspaces on one emulator sync side by side into one warehouse; the same ids in two sources are different rows', async () => {
    await withEmulator(workspaces, async (emulator) => {
      await withTempDir(async (dir) => {
        const sources = acmeSources(emulator.url);
        const config = testSyncConfig(emulator.url, dir, { sources, windowDays: 10 });
        const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(summary.outcome).toBe('success');
        expect(summary.sources.map((s) => [s.source, s.outcome])).toEqual([
          ['acme-eu', 'success'],
          ['acme-us', 'success'],
          ['acme-apac', 'success'],
        ]);
        const perSource = await queryDb<{ source: string; n: number; ids: number; usd: number }>(
          config.db,
          'SELECT source, count(*)::INT AS n, count(DISTINCT id)::INT AS ids, round(sum(net_amount_usd), 2) AS usd FROM line_items GROUP BY source ORDER BY source',
        );
        expect(perSource.map((r) => [r.source, r.n, r.ids])).toEqual([
          ['acme-apac', 3000, 3000],
          ['acme-eu', 3000, 3000],
          ['acme-us', 3000, 3000],
        ]);
        // Each workspace has its own data: same ids, other amounts.
        expect(new Set(perSource.map((r) => r.usd)).size).toBe(3);
        const [shared] = await queryDb<{ n: number }>(
          config.db,
          'SELECT count(*)::INT AS n FROM (SELECT id FROM line_items GROUP BY id HAVING count(*) = 3)',
        );
        expect(shared!.n).toBe(3000);
        const runs = await queryDb<{ source: string; outcome: string }>(config.db, 'SELECT source, outcome FROM sync_runs ORDER BY source');
        expect(runs).toEqual([
          { source: 'acme-apac', outcome: 'success' },
          { source: 'acme-eu', outcome: 'success' },
          { source: 'acme-us', outcome: 'success' },
        ]);
        const views = await queryDb<{ source: string }>(config.db, 'SELECT DISTINCT source FROM daily_spend_by_provider ORDER BY 1');
        expect(views.map((v) => v.source)).toEqual(['acme-apac', 'acme-eu', 'acme-us']);
        const verify = await run(['verify', '--db', config.db, '--format', 'json']);
        expect(verify.code).toBe(0);
        // The report shows spend by source when there are several, and reports on one with --source.
        const html = join(dir, 'r.html');
        expect((await run(['report', '--db', config.db, '--out', html])).code).toBe(0);
        expect(readFileSync(html, 'utf8')).toMatch(/<h2>Spend by source<\/h2>[\s\S]*acme-apac[\s\S]*acme-eu[\s\S]*acme-us/);
        expect((await run(['report', '--db', config.db, '--out', html, '--source', 'acme-eu'])).code).toBe(0);
        const one = readFileSync(html, 'utf8');
        expect(one).not.toMatch(/Spend by source/);
        expect(one).toMatch(/source acme-eu ·/);
        // A re-sync of one source replaces only its own rows.
        emulator.datasetOf('eu').restate();
        const again = await runSync({
          config: { ...config, sources: [sources[0]!] },
          logger: memoryLogger(),
          clock,
          clientOptions: FAST_CLIENT,
        });
        expect(again.outcome).toBe('success');
        const after = await queryDb<{ source: string; n: number; usd: number }>(
          config.db,
          'SELECT source, count(*)::INT AS n, round(sum(net_amount_usd), 2) AS usd FROM line_items GROUP BY source ORDER BY source',
        );
        expect(after.filter((r) => r.source !== 'acme-eu')).toEqual(
          perSource.filter((r) => r.source !== 'acme-eu').map(({ source, n, usd }) => ({ source, n, usd })),
        );
      });
    });
  });

  it('--sources-at-once 1: each source syncs in its turn (no key asks while another source is syncing), every one in full', async () => {
    await withEmulator(workspaces, async (emulator) => {
      await withTempDir(async (dir) => {
        const sources = acmeSources(emulator.url);
        const config = testSyncConfig(emulator.url, dir, { sources, windowDays: 10, sourcesAtOnce: 1 });
        const logger = memoryLogger();
        const summary = await runSync({ config, logger, clock, clientOptions: FAST_CLIENT });
        expect(logger.lines.join('\n')).toContain('3 sources, 1 at once (--sources-at-once); the others wait their turn');
        expect(summary.sources.map((s) => [s.source, s.outcome])).toEqual([
          ['acme-eu', 'success'],
          ['acme-us', 'success'],
          ['acme-apac', 'success'],
        ]);
        // The workspaces in the order their requests came, runs of one collapsed: one run each.
        const order = emulator.requestLog
          .recent()
          .map((r) => r.workspace)
          .filter((w) => w !== undefined);
        expect(order.length).toBeGreaterThan(9);
        expect(order.filter((w, i) => w !== order[i - 1])).toEqual(['eu', 'us', 'apac']);
        await expectEverySourceWhole(config.db);
      });
    });
  });

  it('a stop while the first source syncs leaves those still waiting their turn untouched (recorded as stopped); the next run syncs every one', async () => {
    await withEmulator(workspaces, async (emulator) => {
      await withTempDir(async (dir) => {
        const sources = acmeSources(emulator.url);
        const config = testSyncConfig(emulator.url, dir, { sources, windowDays: 10, sourcesAtOnce: 1 });
        const { summary: first } = await syncStoppedAt(config, clock, 2);
        expect(first.sources.map((s) => [s.source, s.outcome])).toEqual([
          ['acme-eu', 'stopped'],
          ['acme-us', 'stopped'],
          ['acme-apac', 'stopped'],
        ]);
        expect(
          new Set(
            emulator.requestLog
              .recent()
              .map((r) => r.workspace)
              .filter((w) => w !== undefined),
          ),
        ).toEqual(new Set(['eu']));
        // No state file for the sources that never started.
        expect(readdirSync(config.stateDir).filter((n) => /acme-(us|apac)/.test(n))).toEqual([]);
        expect(readdirSync(config.stateDir).some((n) => n.includes('acme-eu'))).toBe(true);
        const runs = await queryDb<{ source: string; outcome: string }>(config.db, 'SELECT source, outcome FROM sync_runs ORDER BY source');
        expect(runs).toEqual([
          { source: 'acme-apac', outcome: 'stopped' },
          { source: 'acme-eu', outcome: 'stopped' },
          { source: 'acme-us', outcome: 'stopped' },
        ]);
        const again = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
        expect(again.sources.map((s) => s.outcome)).toEqual(['success', 'success', 'success']);
        await expectEverySourceWhole(config.db);
      });
    });
  });

  it('sources on two emulators, from a config file: one with a revoked key fails (exit 3) while the others finish and are published', async () => {
    await withEmulator(workspaces, async (one) => {
      await withEmulator({ ...workspaces, seed: 7 }, async (two) => {
        await withTempDir(async (dir) => {
          writeFileSync(join(dir, 'eu.key'), 'k-eu\n');
          writeFileSync(
            join(dir, 'costsync.config.json'),
            JSON.stringify({
              db: join(dir, 'c.duckdb'),
              'state-dir': join(dir, 'state'),
              'rate-limit': 100000,
              sources: [
                { name: 'eu', 'base-url': one.url, 'api-key-file': join(dir, 'eu.key') },
                { name: 'us-old', 'base-url': one.url, 'api-key-env': 'OLD_KEY' },
                { name: 'other', 'base-url': two.url, 'api-key-env': 'OTHER_KEY', 'rate-limit': 50000 },
              ],
            }),
          );
          const env = { OLD_KEY: 'k-old', OTHER_KEY: 'k-us', TZ: 'UTC' };
          const args = [
            'sync',
            '--config',
            join(dir, 'costsync.config.json'),
            '--start-date',
            '2025-06-21',
            '--until',
            SPAN.endDate,
            '--log-format',
            'json',
          ];
          const result = await run(args, env);
          expect(result.code).toBe(3);
          expect(result.stderr).toMatch(/us-old: .*revoked/);
          for (const secret of ['k-eu', 'k-old', 'k-us']) expect(result.stderr).not.toContain(secret);
          const runs = await queryDb<{ source: string; outcome: string }>(
            join(dir, 'c.duckdb'),
            'SELECT source, outcome FROM sync_runs ORDER BY source',
          );
          expect(runs).toEqual([
            { source: 'eu', outcome: 'success' },
            { source: 'other', outcome: 'success' },
            { source: 'us-old', outcome: 'failed' },
          ]);
          const rows = await queryDb<{ source: string; n: number }>(
            join(dir, 'c.duckdb'),
            'SELECT source, count(*)::INT AS n FROM line_items GROUP BY source ORDER BY source',
          );
          expect(rows).toEqual([
            { source: 'eu', n: 1000 },
            { source: 'other', n: 1000 },
          ]);
          // --source runs only the ones named.
          const only = await run([...args, '--source', 'eu'], env);
          expect(only.code).toBe(0);
          const unknown = await run([...args, '--source', 'nope'], env);
          expect(unknown.code).toBe(2);
          expect(unknown.stderr).toMatch(/--source names unknown source\(s\): nope[\s\S]*eu, us-old, other/);
        });
      });
    });
  });

  it('a config file with a key written into it is refused with exit 2, naming the fix', async () => {
    await withTempDir(async (dir) => {
      writeFileSync(
        join(dir, 'c.json'),
        JSON.stringify({ sources: [{ name: 'eu', 'base-url': 'https://api.example.com', 'api-key': 'sk-secret-123' }] }),
      );
      const result = await run(['sync', '--config', join(dir, 'c.json'), '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state')]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/sources\[0\] in the config file holds the API key itself[\s\S]*api-key-file[\s\S]*api-key-env/);
      expect(result.stderr).not.toContain('sk-secret-123');
    });
  });

  it('a rotated key goes on where the last run stopped: mid-backfill it fetches only the pages left, and a nightly run costs a lookback', async () => {
    await withEmulator({ ...workspaces, rowsPerDay: 1000 }, async (emulator) => {
      await withTempDir(async (dir) => {
        const source = (apiKey: string): SourceConfig[] => [{ name: 'acme-eu', baseUrl: emulator.url, apiKey, rateLimit: 100_000 }];
        const base = testSyncConfig(emulator.url, dir, { streams: ['line_items'], windowDays: 30, concurrency: 1, reconcile: 'off' });
        const { summary: first, pages: kept } = await syncStoppedAt({ ...base, sources: source('k-eu') }, clock, 12);
        expect(first.outcome).toBe('stopped');
        // The stop came after the 12th page was saved. A page asked for meanwhile is kept when its answer
        // came before the stop dropped the request, and asked for again otherwise: the pages kept decide.
        expect(kept).toBeGreaterThanOrEqual(12);
        expect(kept).toBeLessThanOrEqual(13);
        const fetchedBefore = emulator.requestLog.count({ route: 'line-items' });
        expect(fetchedBefore).toBeGreaterThanOrEqual(kept);
        expect(fetchedBefore).toBeLessThanOrEqual(kept + 1);
        emulator.requestLog.reset();
        const logger = memoryLogger();
        const resumed = await runSync({ config: { ...base, sources: source('k-eu-new') }, logger, clock, clientOptions: FAST_CLIENT });
        expect(resumed.outcome).toBe('success');
        // 30,000 rows in 30 pages: those kept with the old key are not fetched again.
        expect(emulator.requestLog.count({ route: 'line-items' })).toBe(30 - kept);
        expect(logger.lines.join('\n')).toMatch(/the key for acme-eu changed since the last run/);
        expect(logger.lines.join('\n')).not.toContain('k-eu-new');

        emulator.requestLog.reset();
        const nightly = await runSync({
          config: { ...base, sources: source('k-eu') },
          logger: memoryLogger(),
          clock,
          clientOptions: FAST_CLIENT,
        });
        expect(nightly.outcome).toBe('success');
        // The 3-day lookback: 3,000 rows, 3 pages.
        expect(emulator.requestLog.count({ route: 'line-items' })).toBe(3);
        const [{ n }] = (await queryDb<{ n: number }>(base.db, 'SELECT count(*)::INT AS n FROM line_items')) as [{ n: number }];
        expect(n).toBe(30_000);
      });
    });
  });
});
