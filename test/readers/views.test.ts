import { describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/runner.js';
import { join } from 'node:path';
import { openReadOnly, withWarehouse } from '../../src/storage/duckdb.js';
import { gatherReport } from '../../src/report/data.js';
import { monthTrend } from '../../src/report/charts.js';
import { FAST_CLIENT, memoryLogger, testSyncConfig, withEmulator, withTempDir } from '../support/helpers.js';
import { encodeCarried } from '../../src/state/progress.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
const span = { startDate: '2025-05-01', endDate: '2025-06-30' };

/** A warehouse synced from the emulator over May and June 2025. */
async function withSyncedDb<T>(fn: (db: string) => Promise<T>): Promise<T> {
  return withEmulator({ ...span, rowsPerDay: 40, anomaliesPerDay: 4, clock }, async ({ url }) =>
    withTempDir(async (dir) => {
      const config = testSyncConfig(url, dir, { startDate: span.startDate, until: span.endDate, windowDays: 31 });
      expect((await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
      return fn(config.db);
    }),
  );
}

const near = (a: number, b: number) => expect(Math.abs(a - b)).toBeLessThan(0.011);

describe('analyst views (sql/views), created by every sync', () => {
  it('daily spend by provider, service and category with a 7-day moving average; line items fill days without rollups', async () => {
    await withSyncedDb(async (db) => {
      const wh = await openReadOnly(db);
      try {
        const [li] = await wh.sql<{ usd: number }>('SELECT sum(net_amount_usd) AS usd FROM line_items');
        for (const view of ['daily_spend_by_provider', 'daily_spend_by_service', 'daily_spend_by_category']) {
          const [v] = await wh.sql<{ usd: number; days: number }>(`SELECT sum(cost_usd) AS usd, count(DISTINCT date) AS days FROM ${view}`);
          near(v!.usd / 100, li!.usd / 100);
          expect(v!.days).toBe(61);
        }
        const daily = await wh.sql<{ date: string; cost_usd: number; cost_7d_avg: number }>(
          "SELECT strftime(date, '%Y-%m-%d') AS date, cost_usd, cost_7d_avg FROM daily_spend_by_provider WHERE provider = 'aws' ORDER BY date",
        );
        const at = daily.findIndex((d) => d.date === '2025-06-15');
        near(daily[at]!.cost_7d_avg, daily.slice(at - 6, at + 1).reduce((s, d) => s + d.cost_usd, 0) / 7);
      } finally {
        wh.close();
      }
      // Without the provider rollups of a day, that day comes from the line items.
      await withWarehouse(db, (wh) => wh.sql("DELETE FROM rollups_daily WHERE date = '2025-06-10' AND group_by = 'provider'"));
      const wh2 = await openReadOnly(db);
      try {
        const rows = await wh2.sql<{ provider: string; cost_usd: number; basis: string }>(
          "SELECT provider, cost_usd, basis FROM daily_spend_by_provider WHERE date = '2025-06-10' ORDER BY provider",
        );
        const items = await wh2.sql<{ provider: string; usd: number }>(
          "SELECT provider_type AS provider, round(sum(net_amount_usd), 2) AS usd FROM line_items WHERE usage_date = '2025-06-10' GROUP BY 1 ORDER BY 1",
        );
        expect(rows.map((r) => [r.provider, r.cost_usd, r.basis])).toEqual(items.map((i) => [i.provider, i.usd, 'line_items']));
      } finally {
        wh2.close();
      }
    });
  });

  it('monthly spend with month-over-month change, and month to date against the same days of last month', async () => {
    await withSyncedDb(async (db) => {
      const wh = await openReadOnly(db);
      try {
        const day = async (from: string, to: string) =>
          (
            await wh.sql<{ usd: number }>(
              `SELECT sum(net_amount_usd) AS usd FROM line_items WHERE usage_date BETWEEN '${from}' AND '${to}'`,
            )
          )[0]!.usd;
        const months = await wh.sql<{
          cost_usd: number;
          previous_month_usd: number | null;
          change_usd: number | null;
          change_pct: number | null;
        }>('SELECT * FROM monthly_spend ORDER BY month');
        expect(months).toHaveLength(2);
        const [may, june] = [await day('2025-05-01', '2025-05-31'), await day('2025-06-01', '2025-06-30')];
        near(months[0]!.cost_usd, may);
        expect(months[0]!.previous_month_usd).toBeNull();
        near(months[1]!.change_usd!, june - may);
        expect(months[1]!.change_pct).toBeCloseTo((100 * (june - may)) / may, 0);
        const [mtd] = await wh.sql<{ as_of: string; month_to_date_usd: number; same_days_last_month_usd: number }>(
          "SELECT strftime(as_of, '%Y-%m-%d') AS as_of, * EXCLUDE (as_of) FROM month_to_date",
        );
        expect(mtd!.as_of).toBe('2025-06-30');
        near(mtd!.month_to_date_usd, june);
        near(mtd!.same_days_last_month_usd, await day('2025-05-01', '2025-05-30'));
      } finally {
        wh.close();
      }
    });
  });

  it('months the synced dates do not cover whole are partial: no change for them or against them; only the month of today, synced to yesterday, is "to date"', async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'months.duckdb');
      // Synced 2025-04-10..2025-07-12 but for 2025-08-10..08-18 (a nine-day hole with spend on either side): April
      // starts after the 1st, May and June are whole, July ends on the 12th; August has spend every synced day.
      const covered = [
        { from: '2025-04-10', to: '2025-07-12' },
        { from: '2025-08-01', to: '2025-08-09' },
        { from: '2025-08-19', to: '2025-09-30' },
      ];
      await withWarehouse(db, async (wh) => {
        await wh.sql(`INSERT INTO rollups_daily (date, group_by, provider_type, cost_usd)
          SELECT d::DATE, 'provider', 'aws', CASE WHEN month(d) = 6 THEN 20 ELSE 10 END FROM range(DATE '2025-04-10', DATE '2025-10-01', INTERVAL 1 DAY) t(d)
          WHERE d < DATE '2025-07-13' OR d >= DATE '2025-08-01'`);
        const stream = { syncedFrom: '2025-04-10', syncedThrough: '2025-09-30', covered, lastSuccessAt: null, pending: null };
        await wh.sql('INSERT INTO _costsync_sync_state VALUES ($1, $2, now())', [
          'default',
          encodeCarried({ line_items: stream, rollups: stream }),
        ]);
      });
      const wh = await openReadOnly(db);
      try {
        expect(
          await wh.sql(
            "SELECT source, stream, strftime(from_date, '%Y-%m-%d') AS from_date, strftime(to_date, '%Y-%m-%d') AS to_date FROM synced_dates ORDER BY stream, from_date",
          ),
        ).toEqual(
          ['line_items', 'rollups'].flatMap((stream) =>
            covered.map((r) => ({ source: 'default', stream, from_date: r.from, to_date: r.to })),
          ),
        );
        const months = await wh.sql<{
          month: string;
          is_partial: boolean;
          change_usd: number | null;
          change_pct: number | null;
          days_synced: number;
        }>(
          "SELECT strftime(month, '%Y-%m') AS month, is_partial, change_usd, change_pct, days_synced, strftime(synced_through, '%Y-%m-%d') AS synced_through FROM monthly_spend ORDER BY month",
        );
        expect(months.map((m) => Object.values(m))).toEqual([
          ['2025-04', true, null, null, 21, null],
          ['2025-05', false, null, null, 31, '2025-05-31'],
          ['2025-06', false, 600 - 310, 93.5, 30, '2025-06-30'],
          ['2025-07', true, null, null, 12, '2025-07-12'],
          // The hole: its spend on either side looks like a whole month, but nine days are unknown.
          ['2025-08', true, null, null, 22, '2025-08-09'],
          ['2025-09', false, null, null, 30, '2025-09-30'],
        ]);
        // Reported long after: July and August are past and partial, with no run-rate.
        const later = await gatherReport(wh, { from: '2025-04-10', to: '2025-09-30', now: new Date('2026-12-07T10:00:00Z') });
        expect(later.monthly.map((m) => [m.month, m.to_date, monthTrend(m), m.projected_usd])).toEqual([
          ['2025-04', false, 'partial month', null],
          ['2025-05', false, 'no whole month before', null],
          ['2025-06', false, 'up', null],
          ['2025-07', false, 'partial month', null],
          ['2025-08', false, 'partial month', null],
          ['2025-09', false, 'no whole month before', null],
        ]);
        // Reported on 13 July: July is the month of today, synced from the 1st to yesterday: to date, with a run-rate.
        const then = await gatherReport(wh, { from: '2025-04-10', to: '2025-07-12', now: new Date('2025-07-13T10:00:00Z') });
        expect(then.monthly.map((m) => [m.month, m.to_date, monthTrend(m)]).at(-1)).toEqual(['2025-07', true, 'to date']);
        expect(then.monthly.at(-1)!.projected_usd).toBe(310);
        expect(then.monthly.at(-1)!.last_date).toBe('2025-07-12');
        // Reported on 20 July with the sync stopped on the 12th: not synced to yesterday, so partial.
        const stale = await gatherReport(wh, { from: '2025-04-10', to: '2025-07-12', now: new Date('2025-07-20T10:00:00Z') });
        expect(stale.monthly.at(-1)).toMatchObject({ month: '2025-07', to_date: false, projected_usd: null });
      } finally {
        wh.close();
      }
    });
  });

  it("the run-rate of the month to date counts its whole days only, never today's unfinished one", async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'rate.duckdb');
      // July 1..10 at $10 a day, and today (the 11th) already $500 into a day the API is still adding to.
      await withWarehouse(db, async (wh) => {
        await wh.sql(`INSERT INTO rollups_daily (date, group_by, provider_type, cost_usd)
          SELECT d::DATE, 'provider', 'aws', CASE WHEN d = DATE '2025-07-11' THEN 500 ELSE 10 END
          FROM range(DATE '2025-07-01', DATE '2025-07-12', INTERVAL 1 DAY) t(d)`);
        const stream = { syncedFrom: '2025-07-01', syncedThrough: '2025-07-11', lastSuccessAt: null, pending: null };
        await wh.sql('INSERT INTO _costsync_sync_state VALUES ($1, $2, now())', [
          'default',
          encodeCarried({ line_items: stream, rollups: stream }),
        ]);
      });
      const wh = await openReadOnly(db);
      try {
        const report = await gatherReport(wh, { from: '2025-07-01', to: '2025-07-10', now: new Date('2025-07-11T10:00:00Z') });
        // $100 over 10 whole days, for 31 days; not ($600 / 11) x 31.
        expect(report.monthly.at(-1)).toMatchObject({ month: '2025-07', to_date: true, projected_usd: 310 });
        // On the 1st, no whole day of the month is over yet: no run-rate.
        const first = await gatherReport(wh, { from: '2025-06-01', to: '2025-06-30', now: new Date('2025-07-01T10:00:00Z') });
        expect(first.monthly.every((m) => m.projected_usd === null)).toBe(true);
      } finally {
        wh.close();
      }
    });
  });

  it('top movers, spend by project and by user, open anomalies and time to resolution', async () => {
    await withSyncedDb(async (db) => {
      // One anomaly the first sync saw open, seen resolved by a run a day later.
      await withWarehouse(db, (wh) =>
        wh.sql(`INSERT INTO anomaly_status_history
        SELECT id, status, 'resolved', TIMESTAMPTZ '2025-07-02 06:00:00+00', 'r2', source FROM anomalies
        WHERE status IN ('new', 'acknowledged') ORDER BY id LIMIT 1`),
      );
      const wh = await openReadOnly(db);
      try {
        const movers = await wh.sql<{ service: string; last_7_days_usd: number; prior_7_days_usd: number; change_usd: number }>(
          'SELECT * FROM top_movers',
        );
        const sum = async (service: string, from: string, to: string) =>
          (
            await wh.sql<{ usd: number | null }>(
              `SELECT sum(cost_usd) AS usd FROM rollups_daily WHERE group_by = 'service' AND service = $1 AND date BETWEEN '${from}' AND '${to}'`,
              [service],
            )
          )[0]!.usd ?? 0;
        near(movers[0]!.last_7_days_usd, await sum(movers[0]!.service, '2025-06-24', '2025-06-30'));
        near(movers[0]!.prior_7_days_usd, await sum(movers[0]!.service, '2025-06-17', '2025-06-23'));
        expect(movers.map((m) => Math.abs(m.change_usd))).toEqual([...movers.map((m) => Math.abs(m.change_usd))].sort((a, b) => b - a));

        const [li] = await wh.sql<{ usd: number }>('SELECT sum(net_amount_usd) AS usd FROM line_items');
        for (const view of ['spend_by_project', 'spend_by_user']) {
          const [v] = await wh.sql<{ usd: number }>(`SELECT sum(cost_usd) AS usd FROM ${view}`);
          expect(Math.abs(v!.usd - li!.usd)).toBeLessThan(1);
        }

        const open = await wh.sql<{
          status: string;
          excess_usd: number;
          actual_cost: number;
          expected_cost: number;
          detected_date: string;
        }>('SELECT * EXCLUDE (detected_date), detected_date::VARCHAR AS detected_date FROM open_anomalies');
        const [{ n }] = (await wh.sql<{ n: number }>(
          "SELECT count(*)::INTEGER AS n FROM anomalies WHERE status IN ('new', 'acknowledged')",
        )) as [{ n: number }];
        expect(open).toHaveLength(n);
        expect(open.length).toBeGreaterThan(0);
        expect(open.every((a) => ['new', 'acknowledged'].includes(a.status))).toBe(true);
        for (const a of open) near(a.excess_usd, a.actual_cost - a.expected_cost);
        expect(open.map((a) => a.detected_date)).toEqual([...open.map((a) => a.detected_date)].sort().reverse());

        // Only that one: the anomalies the first sync found already closed are not counted.
        const closed = await wh.sql<{ hours: number; closed_status: string }>(
          "SELECT closed_status, hours_to_resolution - epoch(TIMESTAMPTZ '2025-07-02 06:00:00+00' - detected_date) / 3600 AS hours FROM anomaly_resolution_times",
        );
        expect(closed).toHaveLength(1);
        expect(closed[0]).toMatchObject({ closed_status: 'resolved' });
        expect(Math.abs(closed[0]!.hours)).toBeLessThan(0.06);
      } finally {
        wh.close();
      }
    });
  });

  it('time to resolution counts only anomalies first seen open, to the first sync that saw them closed', async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'anomalies.duckdb');
      await withWarehouse(db, (wh) =>
        wh.sql(`INSERT INTO anomalies (id, severity, detected_date, status, source) VALUES
          ('open-then-resolved', 'high', '2025-06-01 00:00:00+00', 'resolved', 'default'),
          ('open-then-dismissed-twice', 'low', '2025-06-01 00:00:00+00', 'dismissed', 'default'),
          ('closed-when-first-seen', 'high', '2025-01-01 00:00:00+00', 'resolved', 'default'),
          ('still-open', 'low', '2025-06-01 00:00:00+00', 'new', 'default');
        INSERT INTO anomaly_status_history (anomaly_id, previous_status, status, observed_at, run_id, source) VALUES
          ('open-then-resolved', NULL, 'new', '2025-06-02 00:00:00+00', 'r1', 'default'),
          ('open-then-resolved', 'new', 'acknowledged', '2025-06-03 00:00:00+00', 'r2', 'default'),
          ('open-then-resolved', 'acknowledged', 'resolved', '2025-06-04 00:00:00+00', 'r3', 'default'),
          ('open-then-dismissed-twice', NULL, 'acknowledged', '2025-06-02 00:00:00+00', 'r1', 'default'),
          ('open-then-dismissed-twice', 'acknowledged', 'dismissed', '2025-06-02 12:00:00+00', 'r2', 'default'),
          ('open-then-dismissed-twice', 'dismissed', 'new', '2025-06-03 00:00:00+00', 'r3', 'default'),
          ('open-then-dismissed-twice', 'new', 'dismissed', '2025-06-05 00:00:00+00', 'r4', 'default'),
          ('closed-when-first-seen', NULL, 'resolved', '2025-06-02 00:00:00+00', 'r1', 'default'),
          ('still-open', NULL, 'new', '2025-06-02 00:00:00+00', 'r1', 'default')`),
      );
      const wh = await openReadOnly(db);
      try {
        const rows = await wh.sql<{ anomaly_id: string; closed_status: string; hours_to_resolution: number }>(
          'SELECT anomaly_id, closed_status, hours_to_resolution FROM anomaly_resolution_times ORDER BY anomaly_id',
        );
        expect(rows.map((r) => [r.anomaly_id, r.closed_status, r.hours_to_resolution])).toEqual([
          ['open-then-dismissed-twice', 'dismissed', 36],
          ['open-then-resolved', 'resolved', 72],
        ]);
      } finally {
        wh.close();
      }
    });
  });

  it('month to date: days 1..d against days 1..d of last month (clipped), d the last complete synced day; NULL with a reason where those days are not all synced', async () => {
    type Mtd = {
      as_of: string;
      month_to_date_usd: number;
      same_days_last_month_usd: number;
      change_pct: number | null;
      same_days_to: string;
      no_change_reason: string | null;
    };
    const mtd = async (name: string, fill: string, state?: string): Promise<Mtd> =>
      withTempDir(async (dir) => {
        const db = join(dir, `${name}.duckdb`);
        await withWarehouse(db, async (wh) => {
          await wh.sql(`INSERT INTO rollups_daily (date, group_by, provider_type, cost_usd) ${fill}`);
          if (state !== undefined) await wh.sql('INSERT INTO _costsync_sync_state VALUES ($1, $2, now())', ['default', state]);
        });
        const wh = await openReadOnly(db);
        try {
          const rows = await wh.sql<Mtd>(
            "SELECT strftime(as_of, '%Y-%m-%d') AS as_of, strftime(same_days_to, '%Y-%m-%d') AS same_days_to, * EXCLUDE (as_of, same_days_to) FROM month_to_date",
          );
          expect(rows, name).toHaveLength(1);
          // The report's card reads the same numbers and the same reason.
          const report = await gatherReport(wh, { from: null, to: null, now: new Date() });
          expect(report.monthToDate, name).toMatchObject({
            change_pct: rows[0]!.change_pct,
            no_change_reason: rows[0]!.no_change_reason,
            as_of: rows[0]!.as_of,
          });
          // The report with no --to ends on that same last complete day, never on today's unfinished one.
          expect(report.to, name).toBe(rows[0]!.as_of);
          return rows[0]!;
        } finally {
          wh.close();
        }
      });
    const days = (from: string, to: string, usd = 10) =>
      `SELECT d::DATE, 'provider', 'aws', ${usd} FROM range(DATE '${from}', DATE '${to}' + 1, INTERVAL 1 DAY) t(d)`;

    // Data from 15 October: October's 1st..20th are not all synced, so no change (was +121.3%).
    const fromMid = await mtd('from-15th', days('2025-10-15', '2025-11-20'));
    // Last month's days not all synced: their sum is unknown, NULL (was $60 of 6 days).
    expect(fromMid).toMatchObject({ as_of: '2025-11-20', month_to_date_usd: 200, same_days_last_month_usd: null, change_pct: null });
    expect(fromMid.no_change_reason).toBe('6 of the 20 days 2025-10-01..2025-10-20 of last month are synced');
    // Last month never synced (data from the 1st of this month): NULL, not $0.00.
    const fromFirst = await mtd('from-1st', days('2025-11-01', '2025-11-20'));
    expect(fromFirst).toMatchObject({ month_to_date_usd: 200, same_days_last_month_usd: null, change_pct: null });
    expect(fromFirst.no_change_reason).toBe('0 of the 20 days 2025-10-01..2025-10-20 of last month are synced');
    // A real zero stays zero: last month's days synced (the coverage the sync recorded), with no spend.
    const zero = await mtd(
      'zero',
      days('2025-11-01', '2025-11-20'),
      // The shape an older costsync carried (the streams alone, no version): read as it is.
      JSON.stringify({ rollups: { covered: [{ from: '2025-10-01', to: '2025-11-20' }] } }),
    );
    expect(zero).toMatchObject({
      month_to_date_usd: 200,
      same_days_last_month_usd: 0,
      no_change_reason: 'no spend on the same days of last month',
    });
    // Data for 1..5 October only (was +428.5%).
    const firstDays = await mtd('first-days', `${days('2025-10-01', '2025-10-05')} UNION ALL ${days('2025-11-01', '2025-11-20')}`);
    expect(firstDays).toMatchObject({
      change_pct: null,
      no_change_reason: '5 of the 20 days 2025-10-01..2025-10-20 of last month are synced',
    });
    // The coverage the sync recorded counts: a synced day without spend is synced, and the change is given.
    const covered = await mtd(
      'covered',
      `${days('2025-10-01', '2025-10-09', 5)} UNION ALL ${days('2025-10-11', '2025-10-20', 5)} UNION ALL ${days('2025-11-01', '2025-11-20')}`,
      JSON.stringify({ rollups: { covered: [{ from: '2025-10-01', to: '2025-11-20' }] } }),
    );
    expect(covered).toMatchObject({ month_to_date_usd: 200, same_days_last_month_usd: 95, change_pct: 110.5, no_change_reason: null });
    // One day of data: this month's days are not all synced either.
    const oneDay = await mtd('one-day', days('2025-11-20', '2025-11-20'));
    expect(oneDay).toMatchObject({
      as_of: '2025-11-20',
      month_to_date_usd: null,
      change_pct: null,
      no_change_reason: '1 of the 20 days 2025-11-01..2025-11-20 of this month are synced',
    });
    // 31 March against 1..28 February, both whole.
    const clipped = await mtd('clipped', `${days('2025-02-01', '2025-02-28', 10)} UNION ALL ${days('2025-03-01', '2025-03-31', 20)}`);
    expect(clipped).toMatchObject({
      as_of: '2025-03-31',
      same_days_to: '2025-02-28',
      month_to_date_usd: 620,
      same_days_last_month_usd: 280,
      change_pct: 121.4,
    });
    // Today is not complete: d is yesterday at the latest.
    const today = await mtd(
      'today',
      "SELECT d::DATE, 'provider', 'aws', 1 FROM range(current_date - 70, current_date + 1, INTERVAL 1 DAY) t(d)",
    );
    const [{ yesterday }] = (await queryYesterday()) as [{ yesterday: string }];
    expect(today.as_of).toBe(yesterday);
  });
});

describe('views kept across opens', () => {
  it("an open leaves the views as they are when they are as this costsync made them, and makes them again when one is missing, changed or another version's", async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'v.duckdb');
      const views = (wh: { sql: <T>(text: string) => Promise<T[]> }) =>
        wh.sql<{ name: string; sql: string }>(
          "SELECT view_name AS name, sql FROM duckdb_views() WHERE NOT internal AND view_name = 'monthly_spend'",
        );
      const digest = (wh: { sql: <T>(text: string) => Promise<T[]> }) => wh.sql<{ digest: string }>('SELECT digest FROM _costsync_views');
      await withWarehouse(db, views);
      // From the first open after they were made, the digest holds the views as DuckDB holds them; opens keep it.
      const original = await withWarehouse(db, views);
      const kept = await withWarehouse(db, digest);
      expect(await withWarehouse(db, digest)).toEqual(kept);
      // Changed by hand, dropped, or made again by another version (its own SQL): made again from this costsync's.
      for (const change of [
        'CREATE OR REPLACE VIEW monthly_spend AS SELECT 1 AS x',
        'DROP VIEW monthly_spend',
        "UPDATE _costsync_views SET digest = 'an older costsync'",
      ]) {
        await withWarehouse(db, (wh) => wh.sql(change));
        // Made again at this open; compared at the next (DuckDB renders a view's SQL as it was read back).
        await withWarehouse(db, views);
        expect(await withWarehouse(db, views)).toEqual(original);
        expect(await withWarehouse(db, digest)).toEqual(kept);
      }
    });
  });
});

/** Yesterday's UTC date, as DuckDB says it. */
async function queryYesterday(): Promise<{ yesterday: string }[]> {
  return withTempDir(async (dir) =>
    withWarehouse(join(dir, 'y.duckdb'), (wh) =>
      wh.sql<{ yesterday: string }>("SELECT strftime((now() AT TIME ZONE 'UTC')::DATE - 1, '%Y-%m-%d') AS yesterday"),
    ),
  );
}
