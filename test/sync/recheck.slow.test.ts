// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: Older dates restated: unit/recheck, first-day's dry run (the recheck's requests and what it compares).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { SyncConfig } from '../../src/config.js';
import type { Emulator } from '../../src/emulator/server.js';
import { storedAgainstApi } from '../support/api-truth.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import { runSync } from '../../src/sync/runner.js';
import { createApiClient } from '../../src/api/client.js';
import { verifyAgainstApi } from '../../src/verify-api.js';
import {
  byHand,
  FAST_CLIENT,
  FAST_SEND,
  fakeClock,
  lakeDifferences,
  memoryLogger,
  queryDb,
  testSyncConfig,
  withEmulator,
  withTempDir,
} from '../support/helpers.js';

// A nightly on 2025-06-30: the lookback is 06-28..06-30, the horizon 2025-05-01 (the previous month's first) to 06-27.
const END = '2025-06-30';
const clock = fakeClock(Date.parse(`${END}T12:00:00Z`));
const EMULATOR = { startDate: '2025-04-01', endDate: END, rowsPerDay: 60, anomaliesPerDay: 0, clock } as const;

function config(url: string, dir: string, over: Partial<SyncConfig> = {}): SyncConfig {
  return testSyncConfig(url, dir, { streams: ['line_items', 'rollups'], startDate: '2025-04-01', until: END, windowDays: 30, ...over });
}

async function sync(cfg: SyncConfig, logger = memoryLogger()) {
  // Each run a minute after the last, on the same day: the last run is the one the metrics show.
  clock.advance(60_000);
  const summary = await runSync({ config: cfg, logger, clock, clientOptions: FAST_CLIENT, sendOptions: FAST_SEND });
  return { summary, logger };
}

/** The rows of a table for some dates, as text, to compare two warehouses. */
async function rowsOf(db: string, table: 'line_items' | 'rollups_daily', where: string): Promise<string[]> {
  const date = table === 'line_items' ? 'usage_date' : 'date';
  const rows = await queryDb<{ t: string }>(
    db,
    `SELECT t::VARCHAR AS t FROM (SELECT * EXCLUDE (source) FROM ${table} WHERE ${date} ${where}) t ORDER BY 1`,
  );
  return rows.map((r) => r.t);
}

/** The line items and rollups of `db` dated `from`..`to` against the API's own records now: their differences, or none. */
async function againstApi(emulator: Emulator, db: string, from: string, to: string, tables: readonly ('line_items' | 'rollups_daily')[]) {
  return storedAgainstApi(db, emulator.dataset, { from, to, nowMs: clock.now(), tables });
}

interface RollupRecord {
  date: string;
  cost_usd: number;
}

/**
 * A server in front of the emulator whose daily rollups are what `alter` makes of the emulator's (per
 * request's `group_by`): a source whose rollups disagree with its line items, or lag behind them.
 */
async function withRollupsProxy<T>(
  upstream: string,
  alter: (rows: RollupRecord[], groupBy: string) => RollupRecord[],
  fn: (url: string) => Promise<T>,
): Promise<T> {
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', upstream);
      const key = req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer /, '') ?? '';
      const answer = await request(url, { method: 'GET', headers: { 'x-api-key': String(key) } });
      let body = await answer.body.text();
      if (url.pathname.endsWith('/rollups/daily') && answer.statusCode === 200) {
        const parsed = JSON.parse(body) as { data: RollupRecord[] };
        body = JSON.stringify({ ...parsed, data: alter(parsed.data, url.searchParams.get('group_by') ?? '') });
      }
      res.writeHead(answer.statusCode, { 'content-type': 'application/json' }).end(body);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** Adds `usd` to the first group of `date` in every grouping, so the three views still agree with each other. */
const plus = (date: string, usd: () => number) => (rows: RollupRecord[]) => {
  const first = rows.findIndex((r) => r.date === date);
  return rows.map((r, i) => (i === first ? { ...r, cost_usd: Math.round((r.cost_usd + usd()) * 1e6) / 1e6 } : r));
};

describe('the recheck of older dates', () => {
  it('after a backfill, the API restates old days, moves a line item and resolves an old alert: one plain nightly makes the warehouse and its lake equal the API, for a few more requests', async () => {
    await withEmulator({ ...EMULATOR, anomaliesPerDay: 1 }, async (emulator) => {
      await withTempDir(async (dir) => {
        const cfg = config(emulator.url, dir, {
          startDate: '2025-05-01',
          streams: ['line_items', 'rollups', 'anomalies'],
          format: 'parquet',
        });
        expect((await sync(cfg)).summary.outcome).toBe('success');
        emulator.requestLog.reset();
        const plain = await sync(cfg);
        const nightly = {
          lineItems: emulator.requestLog.count({ route: 'line-items' }),
          rollups: emulator.requestLog.count({ route: 'rollups' }),
        };
        expect(plain.summary.streams.line_items!.olderChanged).toBe(0);
        // The API changes older days (END is 2025-06-30).
        emulator.restateDay('2025-06-10', { changeRate: 0.6, deleteRate: 0, addRows: 0 }); // 20 days back: amounts corrected
        emulator.restateDay('2025-05-26', { changeRate: 0, deleteRate: 0.4, addRows: 0 }); // 35 days back: rows removed
        emulator.restateDay('2025-06-18', { changeRate: 0, deleteRate: 0, addRows: 10 }); // 12 days back: late rows
        const moved = emulator.moveLineItem('2025-06-05', '2025-06-29'); // 25 days back to yesterday
        const resolved = emulator.setAnomalyStatus({ date: '2025-05-21' }, 'resolved'); // an alert 40 days old
        emulator.requestLog.reset();
        const { summary } = await sync(cfg);
        expect(summary.outcome).toBe('success');
        expect(summary.streams.line_items!.olderDates.sort()).toEqual(['2025-05-26', '2025-06-05', '2025-06-10', '2025-06-18']);
        expect(summary.streams.line_items!.olderSynced).toBe(4);
        // About a nightly's cost: one page for each changed day (60 rows a day), one check for each of its three runs of
        // adjacent days, the recheck's 3 rollups requests and each changed day's rollups (2: the provider view is shared).
        expect(emulator.requestLog.count({ route: 'line-items' })).toBe(nightly.lineItems + 4);
        expect(emulator.requestLog.count({ route: 'rollups' })).toBeLessThanOrEqual(nightly.rollups + 3 + 4 + 4 * 2);
        expect(await againstApi(emulator, cfg.db, '2025-05-01', END, ['line_items', 'rollups_daily'])).toEqual([]);
        // The moved line item is stored once, at its new date.
        expect(await queryDb(cfg.db, `SELECT usage_date::VARCHAR AS d FROM line_items WHERE id = '${moved}'`)).toEqual([
          { d: '2025-06-29' },
        ]);
        expect(await queryDb(cfg.db, `SELECT status FROM anomalies WHERE id = '${resolved}'`)).toEqual([{ status: 'resolved' }]);
        // The lake follows through the outbox.
        for (const [table, d] of Object.entries(await lakeDifferences(cfg.db, cfg.out)))
          expect({ table, missing: d.missing, extra: d.extra }).toEqual({ table, missing: 0, extra: 0 });
      });
    });
  });

  it('a day deleted from the published warehouse by hand, and a grouping of another, are fetched again by the next nightly; the blind spots stay as they are', async () => {
    await withEmulator(EMULATOR, async (emulator) => {
      await withTempDir(async (dir) => {
        const cfg = config(emulator.url, dir);
        expect((await sync(cfg)).summary.outcome).toBe('success');
        const [one] = await queryDb<{ id: string; project_id: string }>(
          cfg.db,
          "SELECT id, project_id FROM line_items WHERE usage_date = '2025-06-01' ORDER BY id LIMIT 1",
        );
        const [pair] = await queryDb<{ a: string; b: string }>(
          cfg.db,
          "SELECT min(id) AS a, max(id) AS b FROM line_items WHERE usage_date = '2025-06-03' GROUP BY provider_service HAVING count(*) >= 2 ORDER BY 1 LIMIT 1",
        );
        await byHand(cfg.db, [
          // Found: every line item of a day, one grouping of another day's rollups.
          "DELETE FROM line_items WHERE usage_date = '2025-06-10'",
          "DELETE FROM rollups_daily WHERE date = '2025-05-20' AND group_by = 'service'",
          // Not found, as docs/guarantees.md says: older than the horizon; every total unchanged (a line item
          // re-attributed, an id changed, amounts offsetting within one group); a change below the tolerance.
          "DELETE FROM line_items WHERE usage_date = '2025-04-15'",
          `UPDATE line_items SET project_id = 'moved-by-hand' WHERE id = '${one!.id}'`,
          "UPDATE line_items SET id = id || '-renamed' WHERE id = (SELECT min(id) FROM line_items WHERE usage_date = '2025-06-02')",
          `UPDATE line_items SET net_amount_usd = net_amount_usd + 5 WHERE id = '${pair!.a}'`,
          `UPDATE line_items SET net_amount_usd = net_amount_usd - 5 WHERE id = '${pair!.b}'`,
          "UPDATE line_items SET net_amount_usd = net_amount_usd + 0.004 WHERE id = (SELECT min(id) FROM line_items WHERE usage_date = '2025-06-04')",
        ]);
        emulator.requestLog.reset();
        // A webhook nobody answers: the event waits in the outbox, where it can be read.
        const metricsFile = join(dir, 'costsync.prom');
        const { summary, logger } = await sync({ ...cfg, notify: ['http://127.0.0.1:9/hook'], metricsFile }, memoryLogger());
        expect(summary.outcome).toBe('success');
        // What costsync knows: the file changed since its working copy matched it; not a guess at who changed it.
        expect(logger.lines.join('\n')).toMatch(
          /changed since this working copy last matched it \(a run with another --state-dir published it, or it was changed by hand\)/,
        );
        expect(summary.streams.line_items).toMatchObject({ olderChanged: 1, olderSynced: 1, olderDates: ['2025-06-10'] });
        expect(summary.streams.rollups).toMatchObject({ olderChanged: 1, olderSynced: 1, olderDates: ['2025-05-20'] });
        // Said in the run's tables, its metrics and a notification.
        expect(
          await queryDb(
            cfg.db,
            'SELECT stream, older_changed::INT AS c, older_synced::INT AS s FROM sync_run_streams WHERE older_changed > 0 ORDER BY 1',
          ),
        ).toEqual([
          { stream: 'line_items', c: 1, s: 1 },
          { stream: 'rollups', c: 1, s: 1 },
        ]);
        expect(readFileSync(metricsFile, 'utf8')).toMatch(
          /costsync_last_run_older_dates\{source="default",stream="line_items",dates="synced"\} 1/,
        );
        const [event] = await queryDb<{ event: string }>(
          cfg.db,
          "SELECT event::VARCHAR AS event FROM _costsync_notifications WHERE kind = 'restated'",
        );
        expect(JSON.parse(event!.event)).toMatchObject({ changed: 2, synced: 2, dates: '2025-05-20, 2025-06-10' });
        // At a nightly's cost: the lookback's page and the deleted day's (60 rows a day: one page each).
        expect(emulator.requestLog.count({ route: 'line-items' })).toBe(2);
        for (const [from, to] of [
          ['2025-06-10', '2025-06-10'],
          ['2025-06-28', '2025-06-30'],
        ] as const)
          expect(await againstApi(emulator, cfg.db, from, to, ['line_items'])).toEqual([]);
        expect(await againstApi(emulator, cfg.db, '2025-04-01', END, ['rollups_daily'])).toEqual([]);
        // The blind spots are still there.
        expect(await queryDb(cfg.db, "SELECT count(*)::INT AS n FROM line_items WHERE usage_date = '2025-04-15'")).toEqual([{ n: 0 }]);
        expect(await queryDb(cfg.db, `SELECT project_id FROM line_items WHERE id = '${one!.id}'`)).toEqual([
          { project_id: 'moved-by-hand' },
        ]);
        expect(await queryDb(cfg.db, "SELECT count(*)::INT AS n FROM line_items WHERE id LIKE '%-renamed'")).toEqual([{ n: 1 }]);
        for (const date of ['2025-06-03', '2025-06-04'])
          expect(await againstApi(emulator, cfg.db, date, date, ['line_items'])).not.toEqual([]);
        // `verify --api` compares every synced date, the horizon's and older: it finds the old day.
        const wh = await openReadOnly(cfg.db);
        try {
          const client = createApiClient({ baseUrl: emulator.url, apiKey: 'demo-key' });
          const report = await verifyAgainstApi(wh, [{ name: 'default', client }], { tolerance: 0.01, fixCommand: () => 'fix' });
          await client.close();
          expect([...new Set(report.differences.map((d) => d.date))]).toEqual(['2025-04-15']);
        } finally {
          wh.close();
        }
      });
    });
  });

  it('a line item moved into the lookback leaves its old date, even with the recheck off', async () => {
    await withEmulator(EMULATOR, async (emulator) => {
      await withTempDir(async (dir) => {
        const cfg = config(emulator.url, dir, { startDate: '2025-05-01', recheckDays: 0 });
        expect((await sync(cfg)).summary.outcome).toBe('success');
        const moved = emulator.moveLineItem('2025-06-05', '2025-06-29');
        const { summary } = await sync(cfg);
        expect(summary.outcome).toBe('success');
        expect(summary.streams.line_items!.olderChanged).toBe(0);
        expect(await queryDb(cfg.db, `SELECT usage_date::VARCHAR AS d FROM line_items WHERE id = '${moved}'`)).toEqual([
          { d: '2025-06-29' },
        ]);
        // The same line item with another date: an update. No recheck reaches its old date, whose rollups
        // still count it: the warning names the date and the fix.
        expect(summary.streams.line_items).toMatchObject({ inserted: 0, updated: 1, deleted: 0 });
        expect(summary.warnings.join('\n')).toMatch(
          /moved here from 2025-06-05 .* costsync sync --since 2025-06-05 --until 2025-06-05 brings them up to date/,
        );
      });
    });
  });

  it('a date whose line items never equal its rollups is synced again once, then kept with a warning until the rollups change', async () => {
    await withEmulator(EMULATOR, async (emulator) => {
      await withTempDir(async (dir) => {
        let extra = 5;
        await withRollupsProxy(
          emulator.url,
          plus('2025-06-05', () => extra),
          async (url) => {
            const cfg = config(url, dir, { startDate: '2025-05-01' });
            const first = await sync(cfg);
            expect(first.summary.outcome).toBe('success');
            // Stored as the API gives it, with the window check's warning.
            expect(first.summary.warnings.join('\n')).toMatch(/2025-06-05/);
            const nightly = async () => {
              emulator.requestLog.reset();
              const { summary } = await sync(cfg);
              expect(summary.outcome).toBe('success');
              return { summary, lineItems: emulator.requestLog.count({ route: 'line-items' }) };
            };
            // Found by the recheck: fetched again (the window's own check fetches it up to 3 times).
            const second = await nightly();
            expect(second.summary.streams.line_items!.olderDates).toEqual(['2025-06-05']);
            expect(second.lineItems).toBeGreaterThan(1);
            // Then kept: only the lookback's page, and a warning naming the date.
            const third = await nightly();
            expect(third.summary.streams.line_items!.olderChanged).toBe(0);
            expect(third.lineItems).toBe(1);
            expect(third.summary.warnings.join('\n')).toMatch(
              /2025-06-05\) still differ from the API's provider rollups after they were synced again against them; kept as the API's line items give them, and not fetched again until those rollups change/,
            );
            // The rollups change: the date's rollups and line items are fetched again.
            extra = 7;
            const fourth = await nightly();
            expect(fourth.summary.streams.rollups!.olderDates).toEqual(['2025-06-05']);
            expect(fourth.summary.streams.line_items!.olderDates).toEqual(['2025-06-05']);
            expect(fourth.lineItems).toBeGreaterThan(1);
          },
        );
      });
    });
  });

  it('rollups that lag behind the line items hide a change from the recheck (a blind spot): only the lookback or a full refresh catches it', async () => {
    await withEmulator({ ...EMULATOR, restatement: { days: 40, changeRate: 0.5, deleteRate: 0.1 } }, async (emulator) => {
      await withTempDir(async (dir) => {
        const cfg = config(emulator.url, dir, { startDate: '2025-05-01' });
        expect((await sync(cfg)).summary.outcome).toBe('success');
        const before = await rowsOf(cfg.db, 'line_items', "= '2025-06-05'");
        // The rollups as they were, before the line items of the last 40 days were restated.
        const stale = new Map<string, RollupRecord[]>();
        for (const groupBy of ['provider', 'service', 'category']) {
          const answer = await request(
            `${emulator.url}/api/v1/public/rollups/daily?start_date=2025-05-01&end_date=${END}&group_by=${groupBy}`,
            {
              headers: { authorization: 'Bearer demo-key' },
            },
          );
          stale.set(groupBy, ((await answer.body.json()) as { data: RollupRecord[] }).data);
        }
        emulator.restate();
        await withRollupsProxy(
          emulator.url,
          (rows, groupBy) => [...rows.filter((r) => r.date >= '2025-06-28'), ...stale.get(groupBy)!.filter((r) => r.date < '2025-06-28')],
          async (url) => {
            const { summary } = await sync({ ...cfg, baseUrl: url });
            expect(summary.outcome).toBe('success');
            expect(summary.streams.line_items!.olderChanged).toBe(0);
          },
        );
        // The API's line items of 06-05 changed; the warehouse still holds the old ones.
        expect(await againstApi(emulator, cfg.db, '2025-06-05', '2025-06-05', ['line_items'])).not.toEqual([]);
        expect(await rowsOf(cfg.db, 'line_items', "= '2025-06-05'")).toEqual(before);
      });
    });
  });
});
