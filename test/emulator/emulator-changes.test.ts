import { describe, expect, it } from 'vitest';
import type { Anomaly, LineItem } from '../../src/api/types.js';
import { cli, raw, run, withEmulator } from '../support/helpers.js';

// Data 2025-04-01..2025-06-30 seen on 2025-07-01: the days changed below are 40 to 90 days old.
const options = {
  startDate: '2025-04-01',
  endDate: '2025-06-30',
  rowsPerDay: 40,
  anomaliesPerDay: 3,
  anomalyOrder: 'asc' as const,
  clock: { now: () => Date.parse('2025-07-01T00:00:00Z') },
};

/** Every line item the API serves for one date (one page holds them all). */
async function lineItems(url: string, date: string, key = 'demo-key'): Promise<LineItem[]> {
  const res = await raw(url, `/api/v1/public/line-items?start_date=${date}&end_date=${date}&limit=1000`, { key });
  expect(res.status).toBe(200);
  expect(res.body.meta.has_more).toBe(false);
  return res.body.data;
}

/** The day's total by its provider rollups, in cents. */
async function rollupCents(url: string, date: string): Promise<number> {
  const res = await raw(url, `/api/v1/public/rollups/daily?start_date=${date}&end_date=${date}&group_by=provider`);
  expect(res.status).toBe(200);
  return Math.round((res.body.data as { cost_usd: number }[]).reduce((s, r) => s + r.cost_usd, 0) * 100);
}

const cents = (items: LineItem[]) => items.reduce((s, i) => s + Math.round(i.net_amount_usd * 100), 0);

/** Alerts detected on `date` (and a few after), oldest first. */
async function alertsOn(url: string, date: string): Promise<Anomaly[]> {
  const since = new Date(Date.parse(`${date}T00:00:00Z`) - 1000).toISOString().replace('.000Z', 'Z');
  const res = await raw(url, `/api/v1/public/anomalies?limit=20&since=${since}`);
  expect(res.status).toBe(200);
  return (res.body.data as Anomaly[]).filter((a) => a.detected_date.startsWith(date));
}

describe('emulator: changing old data', () => {
  it('costsync emulator change restate-day changes that day through the control endpoint; the API serves the change', async () => {
    await withEmulator(options, async ({ url }) => {
      const date = '2025-04-10';
      const before = await lineItems(url, date);
      const nextDay = await lineItems(url, '2025-04-11');
      const result = await cli([
        'emulator',
        'change',
        '--url',
        url,
        'restate-day',
        date,
        '--change-rate',
        '0.3',
        '--delete-rate',
        '0.2',
        '--add-rows',
        '5',
      ]);
      expect(result, result.stderr).toMatchObject({ code: 0, stderr: '' });
      const printed = /^restated 2025-04-10: (\d+) line items changed, (\d+) deleted, 5 added\n$/.exec(result.stdout);
      expect(printed, result.stdout).not.toBeNull();

      const after = await lineItems(url, date);
      const was = new Map(before.map((i) => [i.id, i]));
      const now = new Map(after.map((i) => [i.id, i]));
      const changed = after.filter((i) => was.has(i.id) && was.get(i.id)!.net_amount_usd !== i.net_amount_usd);
      const deleted = before.filter((i) => !now.has(i.id));
      const added = after.filter((i) => !was.has(i.id));
      expect([changed.length, deleted.length]).toEqual([Number(printed![1]), Number(printed![2])]);
      expect(changed.length).toBeGreaterThan(0);
      expect(deleted.length).toBeGreaterThan(0);
      expect(added.map((i) => i.usage_date)).toEqual(Array(5).fill(date));
      expect(await rollupCents(url, date)).toBe(cents(after));
      expect(await rollupCents(url, date)).not.toBe(cents(before));
      expect(await lineItems(url, '2025-04-11')).toEqual(nextDay);
    });
  });

  it('costsync emulator change anomaly-status says the status it replaced, and that nothing changed when the alert had it already', async () => {
    await withEmulator(options, async ({ url }) => {
      const date = '2025-05-22';
      const [oldest] = await alertsOn(url, date);
      const status = oldest!.status === 'resolved' ? 'dismissed' : 'resolved';
      const change = () => cli(['emulator', 'change', '--url', url, 'anomaly-status', date, '--status', status]);
      const first = await change();
      expect(first, first.stderr).toMatchObject({ code: 0, stderr: '' });
      expect(first.stdout).toBe(`set anomaly ${oldest!.id} (detected ${oldest!.detected_date}) from ${oldest!.status} to ${status}\n`);
      const again = await change();
      expect(again.stdout).toBe(`anomaly ${oldest!.id} (detected ${oldest!.detected_date}) was already ${status}: nothing changed\n`);
      expect((await alertsOn(url, date))[0]).toEqual({ ...oldest, status });
    });
  });

  it('through the handle: a line item moved to another date, and a 40-day-old alert resolved, as the API shows them', async () => {
    await withEmulator(options, async (emulator) => {
      const { url } = emulator;
      const [from, to] = ['2025-05-01', '2025-05-20'];
      const totals = { from: await rollupCents(url, from), to: await rollupCents(url, to) };
      const first = (await lineItems(url, from))[0]!;
      const id = emulator.moveLineItem(from, to);
      expect(id).toBe(first.id);
      expect((await lineItems(url, from)).map((i) => i.id)).not.toContain(id);
      const moved = (await lineItems(url, to)).filter((i) => i.id === id);
      expect(moved).toEqual([{ ...first, usage_date: to }]);
      const amount = Math.round(first.net_amount_usd * 100);
      expect(await rollupCents(url, from)).toBe(totals.from - amount);
      expect(await rollupCents(url, to)).toBe(totals.to + amount);

      const date = '2025-05-22';
      const [oldest] = await alertsOn(url, date);
      const status = oldest!.status === 'resolved' ? 'dismissed' : 'resolved';
      expect(emulator.setAnomalyStatus({ date }, status)).toBe(oldest!.id);
      expect((await alertsOn(url, date))[0]).toEqual({ ...oldest, status });
      const filtered = await raw(url, `/api/v1/public/anomalies?limit=100&status=${status}&since=2025-05-21T23:59:59Z`);
      expect(filtered.body.data.map((a: Anomaly) => a.id)).toContain(oldest!.id);

      const restated = emulator.restateDay('2025-04-15', { changeRate: 0, deleteRate: 0, addRows: 2 });
      expect(restated).toEqual({ date: '2025-04-15', changed: 0, deleted: 0, added: 2 });
      expect((await lineItems(url, '2025-04-15')).filter((i) => i.id.includes('-late'))).toHaveLength(2);
    });
  });

  it("changes every workspace's data, or the one named, and workspaces used later get the changes made to all", async () => {
    const scopes = ['line_items:read', 'rollups:read', 'anomalies:read'] as const;
    const keys = {
      keys: ['a', 'b', 'c'].map((w) => ({ key: `key-${w}`, scopes: [...scopes], plan: 'business' as const, workspace: w })),
      connections: [],
    };
    await withEmulator({ ...options, keys }, async (emulator) => {
      const late = async (key: string) => (await lineItems(emulator.url, '2025-04-20', key)).filter((i) => i.id.includes('-late')).length;
      expect(await late('key-a')).toBe(0);
      emulator.restateDay('2025-04-20', { addRows: 3, workspace: 'b' });
      expect([await late('key-a'), await late('key-b')]).toEqual([0, 3]);
      // Workspace c asks for the first time after this change to every workspace.
      emulator.restateDay('2025-04-20', { addRows: 2 });
      expect([await late('key-a'), await late('key-b'), await late('key-c')]).toEqual([2, 5, 2]);
      expect(() => emulator.restateDay('2025-04-20', { workspace: 'nope' })).toThrow(
        /No key belongs to workspace "nope".*give one of default, a, b, c/,
      );
    });
  });

  it('the control endpoints refuse bad requests with 400 and a message naming the fix, off the API paths', async () => {
    await withEmulator(options, async ({ url }) => {
      const post = (path: string, body: string) => raw(url, path, { method: 'POST', body, key: null });
      const outside = await post('/_emulator/restate-day', JSON.stringify({ date: '2025-03-31' }));
      expect(outside.status).toBe(400);
      expect(outside.body.error).toEqual({
        code: 'VALIDATION_ERROR',
        message: "date 2025-03-31 is outside the emulator's data, 2025-04-01 to 2025-06-30: pick a date in that span.",
      });
      const cases: [string, string, RegExp][] = [
        ['/_emulator/restate-day', '{"date": "2025-04-10", "rate": 1}', /takes the fields date, change_rate.*; leave out rate/],
        ['/_emulator/restate-day', '{"date": "2025-4-10"}', /date must be a real calendar date as YYYY-MM-DD; got "2025-4-10"/],
        ['/_emulator/restate-day', '{"date": "2025-04-10", "change_rate": 2}', /changeRate must be a fraction from 0 to 1/],
        ['/_emulator/move-line-item', '{"from": "2025-04-10"}', /move-line-item needs to as a non-empty string/],
        ['/_emulator/anomaly-status', '{"date": "2025-04-10", "status": "closed"}', /status must be one of new, acknowledged/],
        ['/_emulator/anomaly-status', '{"status": "resolved"}', /its id, or a date/],
        ['/_emulator/anomaly-status', 'not json', /The body is not valid JSON/],
      ];
      for (const [path, body, message] of cases) {
        const res = await post(path, body);
        expect(res.status, body).toBe(400);
        expect(res.body.error.message).toMatch(message);
      }
      const get = await raw(url, '/_emulator/restate-day', { key: null });
      expect([get.status, get.headers.allow]).toEqual([405, 'POST']);
      const unknown = await post('/_emulator/restate', '{}');
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.message).toMatch(/POST a JSON object to one of \/_emulator\/restate-day, \/_emulator\/move-line-item/);
      // Not under the API's prefix: the API's 404 there is unchanged.
      expect((await raw(url, '/api/v1/public/_emulator/restate-day', { method: 'POST', body: '{}' })).status).toBe(404);
    });
  });

  it('bad command-line input exits 2 with the problem and the fix, and changes nothing', async () => {
    await withEmulator(options, async ({ url }) => {
      const before = await lineItems(url, '2025-04-10');
      const spawned = await cli(['emulator', 'change', '--url', url, 'restate-day', '2025-4-10']);
      expect(spawned.code).toBe(2);
      expect(spawned.stderr).toMatch(/The date must be a real calendar date as YYYY-MM-DD; got "2025-4-10"\.\n {2}hint: For example/);
      const cases: [string[], RegExp][] = [
        [
          ['restate-day', '2024-01-01'],
          /date 2024-01-01 is outside the emulator's data, 2025-04-01 to 2025-06-30: pick a date in that span/,
        ],
        [
          ['anomaly-status', '2025-04-10', '--status', 'closed'],
          /--status must be one of new, acknowledged, resolved, false_positive, dismissed; got "closed"/,
        ],
        [['restate-day', '2025-04-10', '--change-rate', '1.5'], /--change-rate must be a fraction from 0 to 1; got 1.5/],
        [
          ['restate-day', '2025-04-10', '--change-rate', '0.6', '--delete-rate', '0.7'],
          /add up to 1.3: a line item either changes or disappears/,
        ],
        [['restate-day', '2025-04-10', '--status', 'new'], /--status is not for restate-day: it takes a date, --change-rate/],
        [
          ['move-line-item', '--from', '2025-04-10'],
          /move-line-item needs --to\.\n {2}hint: For example: costsync emulator change move-line-item/,
        ],
        [['restate'], /Unknown change "restate"\.\n {2}hint: Name one of restate-day, move-line-item, anomaly-status/],
        [['restate-day', '2025-04-10', '--port', '1'], /Unknown option --port/],
      ];
      for (const [args, message] of cases) {
        const result = await run(['emulator', 'change', '--url', url, ...args]);
        expect(result.code, args.join(' ')).toBe(2);
        expect(result.stderr).toMatch(message);
      }
      expect(await lineItems(url, '2025-04-10')).toEqual(before);
      // Nothing listening there: the URL is the thing to fix.
      const closed = await run(['emulator', 'change', '--url', 'http://127.0.0.1:1', 'restate-day', '2025-04-10']);
      expect(closed.code).toBe(2);
      expect(closed.stderr).toMatch(
        /Cannot reach the emulator at http:\/\/127\.0\.0\.1:1.*ECONNREFUSED[\s\S]*hint: Start it with costsync emulator/,
      );
    });
  });
});
