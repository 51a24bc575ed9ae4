/**
 * The report's charts, declared as Vega-Lite specs and rendered to SVG in Node by Vega itself, so
 * the HTML needs no script and no network when it is opened.
 */
import { View, parse } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { monthLabel, type ReportData } from './data.js';
import { formatUsd } from '../money.js';
import { SEVERITIES } from '../api/types.js';

const WIDTH = 860;
const DAY_MS = 86_400_000;
/**
 * Severity told apart by shape first (a circle, square, diamond and cross read apart in any colour
 * vision, where four violets did not), then by size and shade. The shade is one hue no provider colour
 * uses (providers take tableau10), so an anomaly is never read as a provider; even the lightest stands
 * out from the white page (WCAG's 3:1 for graphics). Direction is the fill: solid above expected,
 * hollow below.
 */
export const SEVERITY_STYLE = {
  shapes: ['circle', 'square', 'diamond', 'cross'],
  colors: ['#8b5cf6', '#6d28d9', '#4c1d95', '#1e1b4b'],
  sizes: [60, 90, 140, 220],
  opacity: 1,
} as const;
/** Month bars by their trend; the two greys (a month with nothing to compare) differ as clearly as the hues. */
export const MONTH_TRENDS = {
  domain: ['no whole month before', 'partial month', 'to date', 'up', 'down'],
  range: ['#374151', '#9ca3af', '#93c5fd', '#dc2626', '#16a34a'],
} as const;
/** Anomalies labelled on the chart: the largest few by dollars over expected; the table lists them all. */
export const LABELLED_ANOMALIES = 5;
const LEGEND = { titleLimit: 0, labelLimit: 0 } as const;

/**
 * The anomaly timeline's geometry, which label placement reasons in: a row per provider across the
 * plot's width, tall enough for a label above and one below its marks, inside the row.
 */
const ANOMALY_ROW_PX = 36;
const LABEL_FONT_PX = 10;
/** A label's box: wider than a 10 px sans-serif character averages, so an estimate never undercuts the drawn text. */
const LABEL_CHAR_PX = 6.2;
const LABEL_HEIGHT_PX = 12;
/** Labels start this far beside their mark, clear of the largest one, joined to it by a leader line. */
const LABEL_GAP_PX = 14;
/** The x scale reaches this far past the first and last day, so a mark on either is drawn whole (the largest is 17 px wide). */
const EDGE_PX = 12;
/** Most tick labels on the time axis: a `Nov 26` is some 40 px, so these never touch across 860 px. */
const MAX_TICKS = 14;
/**
 * Where a label may go, best first: beside its mark, above or below the row's marks (never in the
 * next row, where it would read as that provider's), to the right or, near the right edge or when
 * taken, to the left.
 */
const LABEL_SLOTS: readonly { side: 'right' | 'left'; dy: number }[] = [
  { side: 'right', dy: -11 },
  { side: 'right', dy: 11 },
  { side: 'left', dy: -11 },
  { side: 'left', dy: 11 },
];

/**
 * The daily charts' time axis for a period: a UTC scale from the first day's start to the last day's
 * end, widened by EDGE_PX each side; `x` maps an instant to pixels. Ticks at noon of every `step` days
 * (under the day's bar, `Nov 26`), or at the first of every `step` months (`Nov 2026`) for long periods,
 * never more than MAX_TICKS, so no two are equal and none overlap, from one day to years. Pure.
 */
export function timeAxis(period: { from: string; to: string }): {
  domain: [number, number];
  values: number[];
  format: string;
  x: (ms: number) => number;
} {
  const start = Date.parse(`${period.from}T00:00:00Z`);
  const end = Date.parse(`${period.to}T00:00:00Z`) + DAY_MS;
  const pad = ((end - start) * EDGE_PX) / (WIDTH - 2 * EDGE_PX);
  const domain: [number, number] = [start - pad, end + pad];
  const x = (ms: number) => ((ms - domain[0]) / (domain[1] - domain[0])) * WIDTH;
  const days = Math.round((end - start) / DAY_MS);
  const dayStep = [1, 2, 3, 7, 14].find((step) => Math.ceil(days / step) <= MAX_TICKS);
  if (dayStep !== undefined) {
    const values = Array.from({ length: Math.ceil(days / dayStep) }, (_, i) => start + i * dayStep * DAY_MS + DAY_MS / 2);
    return { domain, values, format: '%b %d', x };
  }
  const first = new Date(start);
  const firstMonth = first.getUTCFullYear() * 12 + first.getUTCMonth() + (first.getUTCDate() === 1 ? 0 : 1);
  const months: number[] = [];
  for (let m = firstMonth; Date.UTC(Math.floor(m / 12), m % 12, 1) < end; m++) months.push(m);
  const monthStep =
    [1, 2, 3, 6, 12].find((step) => Math.ceil(months.length / step) <= MAX_TICKS) ?? 12 * Math.ceil(months.length / 12 / MAX_TICKS);
  const values = months.filter((_, i) => i % monthStep === 0).map((m) => Date.UTC(Math.floor(m / 12), m % 12, 1));
  return { domain, values, format: '%b %Y', x };
}

interface LabelBox {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}
export interface LabelPlace {
  side: 'right' | 'left';
  dy: number;
  box: LabelBox;
}

/** The box a label of `chars` characters takes beside a mark at (`x`, row middle `y`). Pure. */
function labelBox(x: number, y: number, chars: number, slot: { side: 'right' | 'left'; dy: number }): LabelBox {
  const width = chars * LABEL_CHAR_PX;
  const x0 = slot.side === 'right' ? x + LABEL_GAP_PX : x - LABEL_GAP_PX - width;
  const yc = y + slot.dy;
  return { x0, x1: x0 + width, y0: yc - LABEL_HEIGHT_PX / 2, y1: yc + LABEL_HEIGHT_PX / 2 };
}

const overlaps = (a: LabelBox, b: LabelBox) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

/**
 * Places labels, most important first, each in the first slot inside the plot (never over the
 * legends beside it, never over the title above) that no placed label takes and no mark lies under
 * (`marks`: each anomaly's mark as drawn, its centre and half its width); a label with no such slot is
 * left out (the table lists every anomaly). Pure.
 */
export function placeLabels(
  items: readonly { key: string; text: string; x: number; row: number }[],
  plot: { width: number; rows: number },
  marks: readonly { x: number; y: number; half: number }[] = [],
): Map<string, LabelPlace> {
  const placed = new Map<string, LabelPlace>();
  const markBoxes = marks.map((m) => ({ x0: m.x - m.half, x1: m.x + m.half, y0: m.y - m.half, y1: m.y + m.half }));
  for (const item of items) {
    const y = item.row * ANOMALY_ROW_PX + ANOMALY_ROW_PX / 2;
    for (const slot of LABEL_SLOTS) {
      const box = labelBox(item.x, y, item.text.length, slot);
      const inside = box.x0 >= 0 && box.x1 <= plot.width && box.y0 >= 0 && box.y1 <= plot.rows * ANOMALY_ROW_PX;
      if (inside && ![...placed.values()].some((p) => overlaps(p.box, box)) && !markBoxes.some((m) => overlaps(m, box))) {
        placed.set(item.key, { ...slot, box });
        break;
      }
    }
  }
  return placed;
}

/** Largest distance a mark moves off its row's middle: the largest mark (some 15 px, stroke included) stays inside its 36 px row. */
const DODGE_DY_PX = 9;
/** Sideways steps a mark may take off its day, a few px, so it stays nearer its day than the next (at 90 days a day is some 9 px). */
const DODGE_DX_PX = [0, -4, 4, -8, 8];
/** Marks may overlap by this much and still read as two. */
const DODGE_TOLERANCE_PX = 2;

/**
 * Moves marks apart that would be drawn on (or into) one another: marks of one provider on one day, or
 * on neighbouring days when days are a few px wide. Each mark, in order, takes the first offset
 * (the row's middle, then above or below it, then a few px sideways) where its box meets no mark placed
 * before it in its row; with none free, the offset where it meets them least, so no two share a centre
 * while any offset is left. `half` is half a mark's width in px. Pure.
 */
export function dodgeMarks(items: readonly { x: number; row: number; half: number }[]): { dx: number; dy: number }[] {
  const candidates = DODGE_DX_PX.flatMap((dx) => [0, -DODGE_DY_PX, DODGE_DY_PX].map((dy) => ({ dx, dy })));
  const placed: { x: number; y: number; half: number; row: number }[] = [];
  return items.map((item) => {
    // How far a mark at this offset reaches into those already placed in its row (0: apart).
    const clash = (c: { dx: number; dy: number }) =>
      placed
        .filter((p) => p.row === item.row)
        .reduce((sum, p) => {
          const reach = p.half + item.half - DODGE_TOLERANCE_PX;
          const ox = reach - Math.abs(p.x - (item.x + c.dx));
          const oy = reach - Math.abs(p.y - c.dy);
          // A shared centre is the worst: nothing of the mark beneath shows.
          return sum + (ox > 0 && oy > 0 ? ox * oy + (ox === reach && oy === reach ? 1e6 : 0) : 0);
        }, 0);
    let best = candidates[0]!;
    let least = Infinity;
    for (const c of candidates) {
      const score = clash(c);
      if (score < least) [best, least] = [c, score];
      if (score === 0) break;
    }
    placed.push({ x: item.x + best.dx, y: best.dy, half: item.half, row: item.row });
    return best;
  });
}

export type AnomalyMark = ReportData['anomalies'][number] & {
  /** Noon of the anomaly's day (ms, UTC): the middle of that day's bar. */
  at: number;
  direction: string;
  label: string | null;
  side: 'right' | 'left' | null;
  dy: number;
  /** The mark's offset from its day's middle and its row's, in px (dodgeMarks): the label and leader line follow it. */
  mdx: number;
  mdy: number;
};

/**
 * The anomalies as the timeline draws them: one mark each, on its provider's row at the middle of its
 * day, solid for cost above expected and hollow for below, the largest few labelled where their labels
 * fit (with several sources, a label names its source). `period` is the dates the x axis spans. Pure.
 */
export function anomalyMarks(anomalies: ReportData['anomalies'], period: { from: string; to: string }, several = false): AnomalyMark[] {
  const providers = [...new Set(anomalies.map((a) => a.provider))].sort();
  const { x } = timeAxis(period);
  const at = (a: ReportData['anomalies'][number]) => Date.parse(`${a.date}T12:00:00Z`);
  const keyOf = (a: ReportData['anomalies'][number]) => `${a.source}\u0000${a.id}`;
  const textOf = (a: ReportData['anomalies'][number]) =>
    `${several ? `${a.source}: ` : ''}${a.service} ${formatUsd(Math.round(a.excess_usd), { sign: true }).replace(/\.00$/, '')}`;
  const rank = (a: ReportData['anomalies'][number]) => (SEVERITIES as readonly string[]).indexOf(a.severity);
  // The most severe first, so they keep the row's middle and the others move aside.
  const bySeverity = [...anomalies].sort((a, b) => rank(b) - rank(a));
  const offsets = dodgeMarks(
    bySeverity.map((a) => ({
      x: x(at(a)),
      row: providers.indexOf(a.provider),
      half: Math.sqrt(SEVERITY_STYLE.sizes[Math.max(0, rank(a))] ?? SEVERITY_STYLE.sizes[3]) / 2,
    })),
  );
  const offset = new Map(bySeverity.map((a, i) => [keyOf(a), offsets[i]!]));
  const half = (a: ReportData['anomalies'][number]) => Math.sqrt(SEVERITY_STYLE.sizes[Math.max(0, rank(a))] ?? SEVERITY_STYLE.sizes[3]) / 2;
  // Every mark where it is drawn, so no label covers one (a label over a mark hides that anomaly).
  const drawn = anomalies.map((a) => ({
    x: x(at(a)) + offset.get(keyOf(a))!.dx,
    y: providers.indexOf(a.provider) * ANOMALY_ROW_PX + ANOMALY_ROW_PX / 2 + offset.get(keyOf(a))!.dy,
    half: half(a) + 1,
  }));
  const largest = [...anomalies].sort((a, b) => Math.abs(b.excess_usd) - Math.abs(a.excess_usd)).slice(0, LABELLED_ANOMALIES);
  const places = placeLabels(
    largest.map((a) => ({ key: keyOf(a), text: textOf(a), row: providers.indexOf(a.provider), x: x(at(a)) + offset.get(keyOf(a))!.dx })),
    { width: WIDTH, rows: providers.length },
    drawn,
  );
  return anomalies.map((a) => {
    const place = places.get(keyOf(a));
    return {
      ...a,
      at: at(a),
      direction: a.excess_usd >= 0 ? 'above expected' : 'below expected',
      label: place ? textOf(a) : null,
      side: place?.side ?? null,
      dy: place?.dy ?? 0,
      mdx: offset.get(keyOf(a))!.dx,
      mdy: offset.get(keyOf(a))!.dy,
    };
  });
}

/**
 * Daily spend stacked by provider; under it, on the same dates, the open anomalies: a band per
 * provider, a mark per anomaly (its shape, size and shade the severity; solid above expected, hollow
 * below), the largest few labelled, each label in its provider's band with a leader line to its mark.
 * Readable at a hundred anomalies, where rules across the bars were not.
 */
export function dailySpendSpec(data: ReportData): TopLevelSpec {
  const marks = anomalyMarks(data.anomalies, data, data.bySource.length > 1 || new Set(data.anomalies.map((a) => a.source)).size > 1);
  const labelled = marks.filter((m) => m.label !== null).length;
  const candidates = Math.min(LABELLED_ANOMALIES, marks.length);
  const providers = marks.length > 0 ? [...new Set(marks.map((m) => m.provider))].sort() : ['(none)'];
  const axis = data.from === '' ? null : timeAxis(data);
  // domainMin/domainMax, not domain: with x2 on the bars, Vega-Lite reads a domain two ways and warns.
  const scale =
    axis === null
      ? { type: 'utc' }
      : { type: 'utc', domainMin: Math.floor(axis.domain[0]), domainMax: Math.ceil(axis.domain[1]), nice: false };
  const xAxis = axis === null ? { format: '%b %d' } : { values: axis.values, format: axis.format, labelOverlap: false };
  const x = (field: string) => ({ field, type: 'temporal', title: null, scale, axis: xAxis }) as const;
  const y = {
    field: 'provider',
    type: 'nominal',
    title: null,
    sort: providers,
    scale: { paddingInner: 0, paddingOuter: 0 },
    axis: { labelLimit: 0 },
  } as const;
  // Bars span their day, a pixel apart while days are wider than a few pixels.
  const days = data.daily.map((d) => {
    const start = Date.parse(`${d.date}T00:00:00Z`);
    return { ...d, start, end: start + DAY_MS };
  });
  const gap = axis !== null && axis.x(DAY_MS) - axis.x(0) > 4 ? -1 : 0;
  // Each label where placeLabels put it; the first layer is a white halo, so a label stays legible over marks it crosses.
  const labels = (halo: boolean) => ({
    transform: [{ filter: 'datum.label != null' }],
    mark: {
      type: 'text',
      baseline: 'middle',
      fontSize: LABEL_FONT_PX,
      color: '#1f2937',
      align: { expr: "datum.side == 'left' ? 'right' : 'left'" },
      dx: { expr: `datum.mdx + (datum.side == 'left' ? ${-LABEL_GAP_PX} : ${LABEL_GAP_PX})` },
      dy: { expr: 'datum.dy' },
      ...(halo ? { stroke: '#ffffff', strokeWidth: 3, strokeJoin: 'round', aria: false } : {}),
    },
    encoding: { x: x('at'), y, text: { field: 'label' } },
  });
  const severity = { field: 'severity', type: 'nominal', title: 'Severity', legend: LEGEND } as const;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    description: 'Daily spend by provider, and the open anomalies per provider on the same dates',
    vconcat: [
      {
        width: WIDTH,
        height: 260,
        data: { values: days },
        mark: { type: 'bar', tooltip: true, x2Offset: gap },
        encoding: {
          x: x('start'),
          x2: { field: 'end' },
          y: { field: 'cost_usd', type: 'quantitative', aggregate: 'sum', stack: 'zero', title: 'USD per day', axis: { format: '$,.0f' } },
          color: { field: 'provider', type: 'nominal', title: 'Provider', scale: { scheme: 'tableau10' }, legend: LEGEND },
          tooltip: [
            { field: 'date', type: 'nominal', title: 'Date' },
            { field: 'cost_usd', type: 'quantitative', aggregate: 'sum', title: 'USD', format: '$,.2f' },
            { field: 'provider', type: 'nominal', title: 'Provider' },
          ],
        },
      },
      {
        width: WIDTH,
        height: { step: ANOMALY_ROW_PX },
        title: {
          text:
            marks.length === 0
              ? 'Open anomalies by provider (none on these dates)'
              : `Open anomalies by provider (${marks.length}; ${labelled === candidates ? `the ${labelled} largest` : `${labelled} of the ${candidates} largest`} labelled)`,
          subtitle: 'Shape, size and shade: severity. Solid: cost above expected; hollow: below.',
          subtitleFontSize: 11,
          subtitleColor: '#4b5563',
          anchor: 'start',
          fontSize: 12,
          fontWeight: 'normal',
        },
        layer: [
          // A shaded band every other provider, so a label is seen to be inside its provider's row.
          {
            data: { values: providers.map((provider, i) => ({ provider, band: i % 2, row: `${provider} row` })) },
            mark: { type: 'rect' },
            encoding: {
              y,
              description: { field: 'row' },
              x: { value: 0 },
              x2: { value: 'width' },
              color: { condition: { test: 'datum.band == 0', value: '#f3f4f6' }, value: '#ffffff' },
            },
          },
          {
            data: { values: marks },
            layer: [
              // A leader line from each labelled mark to its label's near end.
              {
                transform: [{ filter: 'datum.label != null' }],
                mark: {
                  type: 'rule',
                  color: '#6b7280',
                  strokeWidth: 1,
                  aria: false,
                  xOffset: { expr: 'datum.mdx' },
                  yOffset: { expr: 'datum.mdy' },
                  x2Offset: { expr: `datum.mdx + (datum.side == 'left' ? ${-(LABEL_GAP_PX - 2)} : ${LABEL_GAP_PX - 2})` },
                  y2Offset: { expr: 'datum.dy' },
                },
                encoding: { x: x('at'), x2: { field: 'at' }, y, y2: { field: 'provider' } },
              },
              {
                // Moved apart where they would cover one another (dodgeMarks).
                mark: {
                  type: 'point',
                  filled: true,
                  opacity: SEVERITY_STYLE.opacity,
                  strokeWidth: 1.5,
                  tooltip: true,
                  xOffset: { expr: 'datum.mdx' },
                  yOffset: { expr: 'datum.mdy' },
                },
                encoding: {
                  x: x('at'),
                  y,
                  shape: { ...severity, scale: { domain: [...SEVERITIES], range: [...SEVERITY_STYLE.shapes] } },
                  fill: { ...severity, scale: { domain: [...SEVERITIES], range: [...SEVERITY_STYLE.colors] } },
                  stroke: { ...severity, scale: { domain: [...SEVERITIES], range: [...SEVERITY_STYLE.colors] } },
                  size: { ...severity, type: 'ordinal', scale: { domain: [...SEVERITIES], range: [...SEVERITY_STYLE.sizes] } },
                  // Legends come only for a quantitative opacity, so the title's subtitle says what the fill means.
                  fillOpacity: {
                    field: 'direction',
                    type: 'ordinal',
                    scale: { domain: ['above expected', 'below expected'], range: [1, 0] },
                    legend: null,
                  },
                  tooltip: [
                    { field: 'date', type: 'nominal', title: 'Detected' },
                    { field: 'provider', type: 'nominal', title: 'Provider' },
                    { field: 'service', type: 'nominal', title: 'Service' },
                    { field: 'severity', type: 'nominal', title: 'Severity' },
                    { field: 'direction', type: 'nominal', title: 'Anomaly' },
                    { field: 'excess_usd', type: 'quantitative', title: 'Against expected', format: '$,.0f' },
                  ],
                },
              },
              labels(true),
              labels(false),
            ],
          },
        ],
      },
    ],
    resolve: { scale: { color: 'independent', x: 'shared' } },
  } as TopLevelSpec;
}

/** The ten services with the most spend in the period. */
export function topServicesSpec(data: ReportData): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    description: 'Top services by spend',
    width: WIDTH - 200,
    height: { step: 22 },
    data: { values: data.topServices },
    mark: { type: 'bar', color: '#2563eb', tooltip: true },
    encoding: {
      y: { field: 'service', type: 'nominal', sort: '-x', title: null, axis: { labelLimit: 0 } },
      x: { field: 'cost_usd', type: 'quantitative', title: 'USD in the period', axis: { format: '$,.0f' } },
    },
  };
}

/** How a month's bar is coloured: a part month is never a rise or a fall against a whole one. Pure. */
export function monthTrend(m: ReportData['monthly'][number]): string {
  if (m.to_date) return 'to date';
  if (m.is_partial) return 'partial month';
  if (m.change_usd === null) return 'no whole month before';
  return m.change_usd >= 0 ? 'up' : 'down';
}

/**
 * Spend per month, colored by whether it grew against the whole month before; the month in progress
 * also shows its run-rate (spend so far projected to the month's end) as a light bar behind it, labelled.
 */
export function monthlySpec(data: ReportData): TopLevelSpec {
  const runRate = (usd: number) => formatUsd(usd);
  const months = data.monthly.map((m) => ({ ...m, month: monthLabel(m), trend: monthTrend(m) }));
  const projected = months
    .filter((m) => m.projected_usd !== null)
    .map((m) => ({
      month: m.month,
      projected_usd: m.projected_usd,
      // Past six months a band is narrower than the label on one line: two lines keep it over its own bar.
      label: months.length > 6 ? ['run-rate', runRate(m.projected_usd!)] : `run-rate ${runRate(m.projected_usd!)}`,
    }));
  const x = {
    field: 'month',
    type: 'ordinal',
    title: null,
    // Past six months, `2025-06 (to date)` is two lines: the month, then what it is, so labels never run into each other.
    axis: {
      labelAngle: 0,
      labelLimit: 0,
      ...(months.length > 6
        ? {
            labelExpr: "indexof(datum.label, ' (') > 0 ? [split(datum.label, ' (')[0], '(' + split(datum.label, ' (')[1]] : datum.label",
            labelLineHeight: 12,
          }
        : {}),
    },
    sort: months.map((m) => m.month),
  } as const;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    description: 'Month over month spend, with the month in progress projected to its end',
    width: WIDTH - 200,
    height: 200,
    layer: [
      {
        data: { values: projected },
        mark: { type: 'bar', color: '#e5e7eb', stroke: '#9ca3af', strokeDash: [3, 2], tooltip: true },
        encoding: { x, y: { field: 'projected_usd', type: 'quantitative' } },
      },
      {
        data: { values: projected },
        // Vega sets a text's first line on the baseline: two lines go up one more line to clear the bar.
        mark: { type: 'text', baseline: 'bottom', dy: months.length > 6 ? -14 : -3, fontSize: 10, lineHeight: 11, color: '#4b5563' },
        encoding: { x, y: { field: 'projected_usd', type: 'quantitative' }, text: { field: 'label' } },
      },
      {
        data: { values: months },
        mark: { type: 'bar', tooltip: true },
        encoding: {
          x,
          y: { field: 'cost_usd', type: 'quantitative', title: 'USD per month', axis: { format: '$,.0f' } },
          color: {
            field: 'trend',
            type: 'nominal',
            title: 'Against the month before',
            legend: LEGEND,
            scale: { domain: [...MONTH_TRENDS.domain], range: [...MONTH_TRENDS.range] },
          },
        },
      },
    ],
  };
}

/** Renders a Vega-Lite spec to an SVG string, headless. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    // Vega's tooltips need its script; a <title> in each anomaly mark is what a browser shows on hover without one.
    return (await view.toSVG()).replace(
      /<path (aria-label="([^"]*)"[^>]*aria-roledescription="point"[^>]*)\/>/g,
      '<path $1><title>$2</title></path>',
    );
  } finally {
    view.finalize();
  }
}
