import { describe, expect, it } from 'vitest';
import { ANOMALY_STATUSES, SEVERITIES } from '../../src/api/types.js';
import { toDayNumber } from '../../src/dates.js';
import { categoryOf } from '../../src/emulator/catalog.js';
import { Dataset, type DatasetOptions } from '../../src/emulator/dataset.js';

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
    const check = () => {
      for (const groupBy of ['provider', 'service', 'category'] as const) {
        const rows = ds.rollups(start, end, groupBy);
        for (let day = start; day <= end; day++) {
          const date = new Date(day * 86_400_000).toISOString().slice(0, 10);
          const expected = sums(ds, day, (r) =>
            groupBy === 'provider' ? r.provider_type : groupBy === 'service' ? r.provider_service : categoryOf(r.provider_service),
          );
          const got = rows.filter((r) => r.date === date);
          expect(got.length).toBe(expected.size);
          for (const r of got) {
            const k = (groupBy === 'provider' ? r.provider_type : groupBy === 'service' ? r.service : r.category)!;
            expect(r.cost_usd).toBe(Math.round(expected.get(k)!) / 1e6);
          }
        }
      }
    };
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
