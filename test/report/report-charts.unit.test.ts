import { describe, expect, it } from 'vitest';
import { SEVERITIES } from '../../src/api/types.js';
import { SEVERITY_STYLE, anomalyMarks, dailySpendSpec, dodgeMarks, placeLabels, timeAxis } from '../../src/report/charts.js';
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

describe('anomaly labels and marks', () => {
  it('a label takes no slot with a mark under it: the next free slot, or none (the table lists it)', () => {
    const item = { key: 'k', text: 'Amazon EC2 +$2,560', x: 400, row: 0 };
    // The first slot (right, above) holds another anomaly's mark: the label goes below.
    const above = { x: 440, y: 18 - 11, half: 8 };
    expect(placeLabels([item], { width: 860, rows: 1 }, [above]).get('k')).toMatchObject({ side: 'right', dy: 11 });
    // Marks in all four slots: no label.
    const everywhere = [above, { x: 440, y: 29, half: 8 }, { x: 360, y: 7, half: 8 }, { x: 360, y: 29, half: 8 }];
    expect(placeLabels([item], { width: 860, rows: 1 }, everywhere).has('k')).toBe(false);
  });
});

describe('anomaly marks', () => {
  const apart = (a: { x: number; y: number; half: number }, b: { x: number; y: number; half: number }) =>
    Math.abs(a.x - b.x) >= a.half + b.half - 2 || Math.abs(a.y - b.y) >= a.half + b.half - 2;

  it('on one provider and day move apart, the first keeping its place, each inside its 36 px row', () => {
    const items = [7.4, 4.7, 7.4].map((half) => ({ x: 400, row: 0, half }));
    const offsets = dodgeMarks(items);
    expect(offsets[0]).toEqual({ dx: 0, dy: 0 });
    const at = items.map((item, i) => ({ x: item.x + offsets[i]!.dx, y: offsets[i]!.dy, half: item.half }));
    expect(new Set(at.map((a) => `${a.x},${a.y}`)).size).toBe(3);
    for (const a of at) expect(Math.abs(a.y) + a.half).toBeLessThanOrEqual(18);
    for (const a of at) expect(Math.abs(a.x - 400)).toBeLessThanOrEqual(8);
  });

  it('on neighbouring days a few px apart (90 days) no longer run together; in other rows they stay put', () => {
    const items = Array.from({ length: 6 }, (_, i) => ({ x: 100 + i * 9.3, row: 0, half: 5 }));
    const offsets = dodgeMarks([...items, { x: 100, row: 1, half: 5 }]);
    const at = items.map((item, i) => ({ x: item.x + offsets[i]!.dx, y: offsets[i]!.dy, half: item.half }));
    for (const [i, a] of at.entries()) for (const b of at.slice(i + 1)) expect(apart(a, b), JSON.stringify([a, b])).toBe(true);
    expect(offsets[6]).toEqual({ dx: 0, dy: 0 });
  });

  it('of one provider and day are all drawn apart, each label led to its own mark', () => {
    const marks = anomalyMarks(
      [
        anomaly('a', '2025-06-02', 'aws', 10, 'medium'),
        anomaly('b', '2025-06-02', 'aws', 900, 'critical'),
        anomaly('c', '2025-06-02', 'aws', 800, 'critical'),
      ],
      data([]),
    );
    expect(new Set(marks.map((m) => `${m.mdx},${m.mdy}`)).size).toBe(3);
    // The critical ones keep the middle and the nearest place; the medium one moves.
    expect(marks.find((m) => m.id === 'b')).toMatchObject({ mdx: 0, mdy: 0 });
    const spec = JSON.stringify(dailySpendSpec(data(marks)));
    expect(spec).toContain('datum.mdx');
    expect(spec).toContain('datum.mdy');
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
