import { describe, expect, it } from 'vitest';
import { ANOMALY_STATUSES, SEVERITIES } from '../../src/api/types.js';
import { toDayNumber } from '../../src/dates.js';
import { categoryOf } from '../../src/emulator/catalog.js';
import { DataChangeError, Dataset, type DatasetOptions, type StoredItem } from '../../src/emulator/dataset.js';

const base: DatasetOptions = {
  seed: 7,
  startDate: '2025-06-01',
  endDate: '2025-06-10',
  rowsPerDay: 300,
  anomaliesPerDay: 4,
  anomalyBursts: [],
  restatement: { days: 3, changeRate: 0.3, deleteRate: 0.2 },
  serviceRollupFillsProvider: false,
};

function itemsOf(ds: Dataset, day: number) {
  const out = [];
  for (let i = 0; i < ds.slots(day); i++) {
    const item = ds.itemAt(day, i);
    if (item) out.push(item);
  }
  return out;
}

/** Sums line items per group in micro-dollars, as rollups must. */
function sums(ds: Dataset, day: number, key: (r: { provider_type: string; provider_service: string }) => string) {
  const m = new Map<string, number>();
  for (const { record, micros } of itemsOf(ds, day)) m.set(key(record), (m.get(key(record)) ?? 0) + micros);
  return m;
}

const dateOf = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10);

/** Every rollup of [start, end], in each grouping, equals the sum of the day's line items (to the micro-dollar). */
function expectRollupsMatchItems(ds: Dataset, start: number, end: number) {
  for (const groupBy of ['provider', 'service', 'category'] as const) {
    const rows = ds.rollups(start, end, groupBy);
    for (let day = start; day <= end; day++) {
      const expected = sums(ds, day, (r) =>
        groupBy === 'provider' ? r.provider_type : groupBy === 'service' ? r.provider_service : categoryOf(r.provider_service),
      );
      const got = rows.filter((r) => r.date === dateOf(day));
      expect(got.length).toBe(expected.size);
      for (const r of got) {
        const k = (groupBy === 'provider' ? r.provider_type : groupBy === 'service' ? r.service : r.category)!;
        expect(r.cost_usd, `${dateOf(day)} ${groupBy} ${k}`).toBe(Math.round(expected.get(k)!) / 1e6);
      }
    }
  }
}

/** A day's total cost by its provider rollups, in micro-dollars. */
const rollupMicros = (ds: Dataset, day: number) => Math.round(ds.rollups(day, day, 'provider').reduce((s, r) => s + r.cost_usd, 0) * 1e6);
const byId = (items: StoredItem[]) => new Map(items.map((i) => [i.record.id, i]));

describe('emulator dataset', () => {
  it('is deterministic for a seed and differs across seeds', () => {
    const a = new Dataset(base);
    const b = new Dataset(base);
    const c = new Dataset({ ...base, seed: 8 });
    const day = toDayNumber('2025-06-04');
    expect(itemsOf(a, day)).toEqual(itemsOf(b, day));
    expect(itemsOf(a, day)).not.toEqual(itemsOf(c, day));
  });

  it('carries model and token fields on AI providers only', () => {
    const ds = new Dataset(base);
    const items = itemsOf(ds, toDayNumber('2025-06-02')).map((i) => i.record);
    const ai = items.filter((r) => r.provider_type === 'openai' || r.provider_type === 'anthropic');
    expect(ai.length).toBeGreaterThan(0);
    for (const r of ai) expect(typeof r.model === 'string' && typeof r.tokens_input === 'number').toBe(true);
    for (const r of items.filter((x) => !ai.includes(x))) expect(r.model).toBeUndefined();
  });

  it('rollups equal the sum of their line items for every date and group, after restatement and ingest too', () => {
    const ds = new Dataset(base);
    const start = toDayNumber(base.startDate);
    const end = toDayNumber(base.endDate);
    const check = () => expectRollupsMatchItems(ds, start, end);
    check();
    // Rollups sum amounts without building rows: restated and ingested rows must count as served.
    ds.restate();
    ds.restate();
    const [sample] = itemsOf(ds, end);
    ds.addIngested(
      end,
      { record: { ...sample!.record, id: 'ingested-1', provider_type: 'custom-cloud', provider_service: 'Widgets' }, micros: 1_230_000 },
      'k1',
    );
    check();
  });

  it('fills only the grouped dimension, or provider too for service when asked', () => {
    const d = toDayNumber('2025-06-03');
    const minimal = new Dataset(base).rollups(d, d, 'service');
    expect(minimal.every((r) => r.provider_type === null && r.category === null && r.service !== null)).toBe(true);
    const filled = new Dataset({ ...base, serviceRollupFillsProvider: true }).rollups(d, d, 'service');
    expect(filled.every((r) => r.provider_type !== null && r.service !== null)).toBe(true);
  });

  it('restatement changes and deletes rows of the last days only, and rollups follow', () => {
    const ds = new Dataset(base);
    const old = toDayNumber('2025-06-07');
    const recent = toDayNumber('2025-06-09');
    const before = { old: itemsOf(ds, old), recent: itemsOf(ds, recent) };
    const rollupBefore = ds.rollups(recent, recent, 'provider');
    ds.restate();
    const after = { old: itemsOf(ds, old), recent: itemsOf(ds, recent) };
    expect(after.old).toEqual(before.old);
    expect(after.recent.length).toBeLessThan(before.recent.length);
    const changed = after.recent.filter((a) => before.recent.find((b) => b.record.id === a.record.id)!.micros !== a.micros);
    expect(changed.length).toBeGreaterThan(0);
    const rollupAfter = ds.rollups(recent, recent, 'provider');
    expect(rollupAfter).not.toEqual(rollupBefore);
    const total = rollupAfter.reduce((s, r) => s + r.cost_usd, 0);
    expect(total).toBeCloseTo(after.recent.reduce((s, i) => s + i.micros, 0) / 1e6, 6);
  });

  it('anomalies cover every severity and status, and statuses only move forward', () => {
    const ds = new Dataset({ ...base, startDate: '2025-03-01', endDate: '2025-06-30' });
    const order = (s: string) => (s === 'new' ? 0 : s === 'acknowledged' ? 1 : 2);
    const times = [Date.parse('2025-05-01T00:00:00Z'), Date.parse('2025-06-15T00:00:00Z'), Date.parse('2025-07-30T00:00:00Z')];
    const snapshots = times.map((t) => new Map(ds.anomaliesAt(t).map((x) => [x.anomaly.id, x.anomaly.status])));
    const all = ds.anomaliesAt(times[2]!).map((x) => x.anomaly);
    expect(new Set(all.map((a) => a.severity))).toEqual(new Set(SEVERITIES));
    const seen = new Set(snapshots.flatMap((s) => [...s.values()]));
    expect(seen).toEqual(new Set(ANOMALY_STATUSES));
    expect(new Set(all.map((a) => a.alert_type)).size).toBeGreaterThanOrEqual(3);
    for (const [id, status] of snapshots[0]!) {
      expect(order(snapshots[1]!.get(id)!)).toBeGreaterThanOrEqual(order(status));
      if (order(status) === 2) expect(snapshots[1]!.get(id)).toBe(status);
    }
    expect(snapshots[0]!.size).toBeLessThan(snapshots[1]!.size);
  });

  it('alert types agree with the sign of the deviation: a spend_drop is below expected, every other type above', () => {
    const ds = new Dataset({ ...base, startDate: '2025-03-01', endDate: '2025-06-30' });
    const all = ds.anomaliesAt(Date.parse('2025-07-30T00:00:00Z')).map((x) => x.anomaly);
    const drops = all.filter((a) => a.alert_type === 'spend_drop');
    const rises = all.filter((a) => a.alert_type !== 'spend_drop');
    expect(drops.length).toBeGreaterThan(0);
    expect(rises.length).toBeGreaterThan(0);
    for (const a of drops) expect(a.actual_cost < a.expected_cost && a.deviation_percent < 0, JSON.stringify(a)).toBe(true);
    for (const a of rises) expect(a.actual_cost > a.expected_cost && a.deviation_percent > 0, JSON.stringify(a)).toBe(true);
  });

  it('bursts put many anomalies on one timestamp', () => {
    const at = '2025-06-05T10:00:00Z';
    const ds = new Dataset({ ...base, anomalyBursts: [{ at, count: 150, severity: 'high', status: 'new', provider_type: 'aws' }] });
    const burst = ds.anomaliesAt(Date.parse('2025-07-01T00:00:00Z')).filter((x) => x.anomaly.detected_date === at.replace('.000', ''));
    expect(burst.length).toBe(150);
    expect(burst.every((x) => x.anomaly.severity === 'high' && x.anomaly.status === 'new' && x.anomaly.provider_type === 'aws')).toBe(true);
  });
  it('an emptied day serves no line items and no rollups; the days beside it keep theirs', () => {
    const ds = new Dataset(base);
    const day = toDayNumber('2025-06-05');
    const rows = (d: number) => itemsOf(ds, d).length;
    expect(rows(day)).toBeGreaterThan(0);
    const before = ds.rollups(day - 1, day + 1, 'provider').filter((r) => r.date !== '2025-06-05');
    ds.emptyDay(day);
    expect(rows(day)).toBe(0);
    expect(rows(day + 1)).toBeGreaterThan(0);
    expect(ds.rollups(day - 1, day + 1, 'provider')).toEqual(before);
  });
});

describe('emulator dataset: changing old data', () => {
  // 2025-06-02 is far outside the restatement window (the last 3 days): only restateDay reaches it.
  const start = toDayNumber(base.startDate);
  const end = toDayNumber(base.endDate);
  const old = toDayNumber('2025-06-02');
  const allItems = (ds: Dataset) => Array.from({ length: end - start + 1 }, (_, i) => itemsOf(ds, start + i));

  it('restateDay changes, deletes and adds rows of that day only, as it counts them, and rollups stay the sums', () => {
    const ds = new Dataset(base);
    const before = allItems(ds);
    const result = ds.restateDay(old, { changeRate: 0.2, deleteRate: 0.1, addRows: 7 });
    const after = allItems(ds);
    for (let i = 0; i < before.length; i++) if (start + i !== old) expect(after[i]).toEqual(before[i]);

    const was = byId(before[old - start]!);
    const now = byId(after[old - start]!);
    const deleted = [...was.keys()].filter((id) => !now.has(id));
    const added = [...now.keys()].filter((id) => !was.has(id));
    const changed = [...now.values()].filter((i) => was.has(i.record.id) && was.get(i.record.id)!.micros !== i.micros);
    expect(result).toEqual({ date: '2025-06-02', changed: changed.length, deleted: deleted.length, added: 7 });
    expect(changed.length).toBeGreaterThan(30);
    expect(deleted.length).toBeGreaterThan(15);
    expect(added).toHaveLength(7);
    for (const id of added)
      expect(now.get(id)!.record).toMatchObject({ usage_date: '2025-06-02', id: expect.stringMatching(/^li-20250602-late1-/) });
    // A changed row keeps everything but its amount (and the token counts, which follow it).
    const rest = (r: StoredItem['record']) => ({ ...r, net_amount_usd: 0, tokens_input: 0, tokens_output: 0 });
    for (const item of changed) expect(rest(item.record)).toEqual(rest(was.get(item.record.id)!.record));
    expect(rollupMicros(ds, old)).toBe([...now.values()].reduce((s, i) => s + i.micros, 0));
    expectRollupsMatchItems(ds, start, end);
  });

  it('restateDay is deterministic, and each call on a day changes it again (late rows too)', () => {
    const calls = (ds: Dataset) => [
      ds.restateDay(old, { changeRate: 0.3, deleteRate: 0.1, addRows: 20 }),
      ds.restateDay(old, { changeRate: 0.3, deleteRate: 0.1, addRows: 0 }),
    ];
    const a = new Dataset(base);
    const b = new Dataset(base);
    const [firstA] = calls(a);
    const once = new Dataset(base);
    once.restateDay(old, { changeRate: 0.3, deleteRate: 0.1, addRows: 20 });
    calls(b);
    expect(itemsOf(a, old)).toEqual(itemsOf(b, old));
    expect(itemsOf(a, old)).not.toEqual(itemsOf(once, old));
    expect(firstA!.added).toBe(20);
    // The second call reached rows the first one added.
    const late = (ds: Dataset) => byId(itemsOf(ds, old).filter((i) => i.record.id.includes('-late1-')));
    const lateOnce = late(once);
    const lateTwice = late(a);
    expect([...lateOnce.values()].some((i) => !lateTwice.has(i.record.id) || lateTwice.get(i.record.id)!.micros !== i.micros)).toBe(true);
    expectRollupsMatchItems(a, old, old);
  });

  it('restateDay works beside the recent-days restatement and ingest, and refuses what it cannot do', () => {
    const ds = new Dataset(base);
    ds.restate();
    ds.restateDay(end, { changeRate: 0.2, deleteRate: 0.2, addRows: 3 });
    ds.restate();
    const [sample] = itemsOf(ds, end);
    ds.addIngested(end, { record: { ...sample!.record, id: 'ingested-1' }, micros: 4_560_000 }, 'k1');
    ds.restateDay(end, { changeRate: 0.2, deleteRate: 0.2, addRows: 3 });
    expect(itemsOf(ds, end).map((i) => i.record.id)).toContain('ingested-1');
    expectRollupsMatchItems(ds, end - 3, end);
    expect(() => ds.restateDay(start - 1, { changeRate: 0.1, deleteRate: 0, addRows: 0 })).toThrow(
      /date 2025-05-31 is outside the emulator's data, 2025-06-01 to 2025-06-10/,
    );
    expect(() => ds.restateDay(old, { changeRate: 0.7, deleteRate: 0.5, addRows: 0 })).toThrow(DataChangeError);
    expect(() => ds.restateDay(old, { changeRate: 0.1, deleteRate: 0, addRows: -1 })).toThrow(/addRows must be a whole number/);
  });

  it('moveLineItem takes a line item off one day and puts it, same id and amount, on another; rollups of both follow', () => {
    const ds = new Dataset(base);
    const to = toDayNumber('2025-06-08');
    const totals = { from: rollupMicros(ds, old), to: rollupMicros(ds, to) };
    const first = itemsOf(ds, old)[0]!;
    const id = ds.moveLineItem(old, to);
    expect(id).toBe(first.record.id);
    const everywhere = allItems(ds)
      .flat()
      .filter((i) => i.record.id === id);
    expect(everywhere).toHaveLength(1);
    expect(everywhere[0]).toEqual({ record: { ...first.record, usage_date: '2025-06-08' }, micros: first.micros });
    expect(rollupMicros(ds, old)).toBe(totals.from - first.micros);
    expect(rollupMicros(ds, to)).toBe(totals.to + first.micros);
    expectRollupsMatchItems(ds, start, end);

    // By id, a late row; and back again: still once across the days.
    const { added } = ds.restateDay(old, { changeRate: 0, deleteRate: 0, addRows: 2 });
    expect(added).toBe(2);
    const late = itemsOf(ds, old).find((i) => i.record.id.includes('-late'))!;
    expect(ds.moveLineItem(old, to, late.record.id)).toBe(late.record.id);
    expect(ds.moveLineItem(to, old, id)).toBe(id);
    const ids = allItems(ds)
      .flat()
      .map((i) => i.record.id);
    expect(ids.filter((x) => x === id || x === late.record.id)).toHaveLength(2);
    expect(itemsOf(ds, old).find((i) => i.record.id === id)?.record.usage_date).toBe('2025-06-02');
    expectRollupsMatchItems(ds, start, end);

    expect(() => ds.moveLineItem(old, old)).toThrow(/give two different dates/);
    expect(() => ds.moveLineItem(old, end + 1)).toThrow(/to 2025-06-11 is outside the emulator's data/);
    expect(() => ds.moveLineItem(old, to, 'li-nope')).toThrow(/There is no line item li-nope on 2025-06-02/);
  });

  it("setAnomalyStatus changes an old alert's status, by id or as the oldest of a day, and the change stays", () => {
    const ds = new Dataset({ ...base, startDate: '2025-03-01', endDate: '2025-06-30' });
    const now = Date.parse('2025-07-01T00:00:00Z');
    const statusOf = (id: string) => ds.anomaliesAt(now).find((x) => x.anomaly.id === id)?.anomaly.status;
    const day = toDayNumber('2025-05-20');
    const ofDay = ds.anomaliesAt(now).filter((x) => x.anomaly.detected_date.startsWith('2025-05-20'));
    expect(ofDay.length).toBeGreaterThan(0);
    const oldest = ofDay.reduce((a, b) => (b.detectedMs < a.detectedMs ? b : a));
    const newStatus = oldest.anomaly.status === 'new' ? 'dismissed' : 'new';
    expect(ds.setAnomalyStatus({ day }, newStatus, now)).toBe(oldest.anomaly.id);
    expect(statusOf(oldest.anomaly.id)).toBe(newStatus);
    expect(ds.anomaliesAt(now + 90 * 86_400_000).find((x) => x.anomaly.id === oldest.anomaly.id)?.anomaly.status).toBe(newStatus);
    expect(ds.anomaly(oldest.anomaly.id, now)?.status).toBe(newStatus);

    const other = ofDay.find((x) => x.anomaly.id !== oldest.anomaly.id) ?? ds.anomaliesAt(now)[0]!;
    expect(ds.setAnomalyStatus({ id: other.anomaly.id }, 'false_positive', now)).toBe(other.anomaly.id);
    expect(statusOf(other.anomaly.id)).toBe('false_positive');
    // Every other alert keeps its path.
    const fresh = new Dataset({ ...base, startDate: '2025-03-01', endDate: '2025-06-30' });
    const changed = ds.anomaliesAt(now).filter((x, i) => x.anomaly.status !== fresh.anomaliesAt(now)[i]!.anomaly.status);
    expect(changed.map((x) => x.anomaly.id).sort()).toEqual([oldest.anomaly.id, other.anomaly.id].sort());

    expect(() => ds.setAnomalyStatus({ id: 'anom-nope' }, 'resolved', now)).toThrow(/There is no alert anom-nope/);
    expect(() => ds.setAnomalyStatus({ day }, 'closed' as never, now)).toThrow(/status must be one of new, acknowledged/);
    // Not detected yet by `now`: not there to change.
    expect(() => ds.setAnomalyStatus({ day }, 'resolved', Date.parse('2025-05-19T00:00:00Z'))).toThrow(
      /No alert was detected on 2025-05-20/,
    );
  });

  it('an emptied day loses its late and moved-in rows too', () => {
    const ds = new Dataset(base);
    ds.restateDay(old, { changeRate: 0, deleteRate: 0, addRows: 4 });
    ds.moveLineItem(old + 1, old);
    ds.emptyDay(old);
    expect(itemsOf(ds, old)).toEqual([]);
    expect(ds.rollups(old, old, 'provider')).toEqual([]);
    expect(() => ds.moveLineItem(old, old + 1)).toThrow(/There are no line items on 2025-06-02 to move/);
  });
});
