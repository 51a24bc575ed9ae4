import { describe, expect, it } from 'vitest';
import { SEVERITIES } from '../../src/api/types.js';
import { SEVERITY_STYLE, anomalyMarks, dailySpendSpec, placeLabels, timeAxis } from '../../src/report/charts.js';
import type { ReportData } from '../../src/report/data.js';

interface Encoding {
  field?: string;
  scale?: { domain: string[]; range: (string | number)[] };
}
interface Layer {
  mark: { type: string };
  encoding: Record<string, Encoding>;
  layer?: Layer[];
}

/** The anomaly marks' layer of the daily chart's spec, wherever it is nested. */
function pointLayer(data: ReportData): Layer {
  const spec = dailySpendSpec(data) as unknown as { vconcat: { layer: Layer[] }[] };
  const all = (layers: Layer[]): Layer[] => layers.flatMap((l) => [l, ...all(l.layer ?? [])]);
  return all(spec.vconcat[1]!.layer).find((l) => l.mark?.type === 'point')!;
}

const data = (anomalies: ReportData['anomalies'], from = '2025-06-01', to = '2025-06-30'): ReportData =>
  ({ from, to, source: null, daily: [], bySource: [], anomalies }) as unknown as ReportData;
const anomaly = (id: string, date: string, provider: string, excess: number, severity = 'high') => ({
  source: 'default',
  id,
  date,
  provider,
  service: `Service ${id}`,
  alert_type: 'spend_spike',
  severity,
  status: 'new',
  excess_usd: excess,
  deviation_percent: 50,
});

describe("the anomaly strip's severities", () => {
  it('are four distinct shapes (told apart in any colour vision), none a triangle that would read as a direction', () => {
    const { shape } = pointLayer(data([anomaly('a', '2025-06-02', 'aws', 10)])).encoding;
    expect(shape!.field).toBe('severity');
    expect(shape!.scale!.domain).toEqual([...SEVERITIES]);
    expect(new Set(shape!.scale!.range).size).toBe(SEVERITIES.length);
    for (const s of shape!.scale!.range) expect(String(s)).not.toMatch(/triangle/);
    expect(shape!.scale!.range).toEqual([...SEVERITY_STYLE.shapes]);
  });

  it('grow with severity, and the direction is the fill: solid above expected, hollow below', () => {
    const { size, fillOpacity } = pointLayer(data([anomaly('a', '2025-06-02', 'aws', 10)])).encoding;
    expect(size!.field).toBe('severity');
    const sizes = size!.scale!.range.map(Number);
    for (let i = 1; i < sizes.length; i++) expect(sizes[i]).toBeGreaterThan(sizes[i - 1]!);
    expect(fillOpacity!.field).toBe('direction');
    expect(fillOpacity!.scale).toEqual({ domain: ['above expected', 'below expected'], range: [1, 0] });
    const marks = anomalyMarks([anomaly('a', '2025-06-02', 'aws', 10), anomaly('b', '2025-06-03', 'aws', -10)], data([]));
    expect(marks.map((m) => m.direction)).toEqual(['above expected', 'below expected']);
  });
});

describe('anomaly labels', () => {
  it("stay inside their own provider's row, however crowded the rows", () => {
    const items = Array.from({ length: 12 }, (_, i) => ({ key: `k${i}`, text: `Service ${i} +$1,000`, x: 400 + (i % 3) * 5, row: i % 3 }));
    const placed = placeLabels(items, { width: 860, rows: 3 });
    expect(placed.size).toBeGreaterThan(3);
    for (const item of items) {
      const place = placed.get(item.key);
      if (place === undefined) continue;
      expect(place.box.y0, item.key).toBeGreaterThanOrEqual(item.row * 36);
      expect(place.box.y1, item.key).toBeLessThanOrEqual((item.row + 1) * 36);
    }
  });
});

describe("the daily charts' time axis", () => {
  // The axis's two formats, as Vega prints them in UTC: `Jun 30` and `Jun 2025`.
  const printed = (format: string, ms: number) =>
    new Date(ms).toLocaleDateString('en-US', {
      timeZone: 'UTC',
      month: 'short',
      ...(format === '%b %d' ? { day: '2-digit' } : { year: 'numeric' }),
    });
  it.each([
    ['one day', '2025-06-30', '2025-06-30'],
    ['a week', '2025-06-24', '2025-06-30'],
    ['a month', '2025-06-01', '2025-06-30'],
    ['90 days', '2025-04-02', '2025-06-30'],
    ['a year', '2024-07-01', '2025-06-30'],
    ['three years', '2022-07-01', '2025-06-30'],
  ])('at %s: ticks inside the dates, none repeated, few enough not to touch, and room for a whole mark at either end', (_, from, to) => {
    const axis = timeAxis({ from, to });
    const start = Date.parse(`${from}T00:00:00Z`);
    const end = Date.parse(`${to}T00:00:00Z`) + 86_400_000;
    expect(axis.values.length).toBeGreaterThanOrEqual(1);
    expect(axis.values.length).toBeLessThanOrEqual(14);
    expect(['%b %d', '%b %Y']).toContain(axis.format);
    const texts = axis.values.map((v) => printed(axis.format, v));
    expect(new Set(texts).size).toBe(texts.length);
    for (const v of axis.values) {
      expect(v).toBeGreaterThanOrEqual(start);
      expect(v).toBeLessThan(end);
    }
    // A label is some 50 px at most; ticks at least that far apart across the 860 px plot.
    for (let i = 1; i < axis.values.length; i++) expect(axis.x(axis.values[i]!) - axis.x(axis.values[i - 1]!)).toBeGreaterThanOrEqual(55);
    // The largest mark reaches some 9 px from its centre, at noon of the first or last day.
    expect(axis.x(start + 43_200_000)).toBeGreaterThanOrEqual(10);
    expect(axis.x(end - 43_200_000)).toBeLessThanOrEqual(860 - 10);
  });
});
