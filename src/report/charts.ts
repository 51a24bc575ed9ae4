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
/**
 * Severity in shades of one hue that no provider colour uses (providers take tableau10), so an
 * anomaly is never read as a provider; size carries severity too. Even the lightest stands out
 * from the white page (WCAG's 3:1 for graphics), and marks are opaque with a white edge, so
 * overlapping ones stay apart instead of fading.
 */
export const SEVERITY_STYLE = {
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
 * The anomalies as the timeline draws them: one mark each, on its provider's row, pointing up for
 * cost above expected and down for below, the largest few labelled. Pure.
 */
export function anomalyMarks(anomalies: ReportData['anomalies']): (ReportData['anomalies'][number] & { direction: string; label: string | null })[] {
  const labelled = new Set([...anomalies].sort((a, b) => Math.abs(b.excess_usd) - Math.abs(a.excess_usd)).slice(0, LABELLED_ANOMALIES).map((a) => a.id + a.source));
  return anomalies.map((a) => ({
    ...a,
    direction: a.excess_usd >= 0 ? 'above expected' : 'below expected',
    label: labelled.has(a.id + a.source) ? `${a.service} ${a.excess_usd >= 0 ? '+' : '-'}$${Math.round(Math.abs(a.excess_usd)).toLocaleString('en-US')}` : null,
  }));
}

/**
 * Daily spend stacked by provider; under it, on the same dates, the open anomalies: a row per
 * provider, a triangle per anomaly (up: above expected, down: below), sized and shaded by severity,
 * the largest few labelled. Readable at a hundred anomalies, where rules across the bars were not.
 */
export function dailySpendSpec(data: ReportData): TopLevelSpec {
  const marks = anomalyMarks(data.anomalies);
  const providers = [...new Set(marks.map((m) => m.provider))].sort();
  const x = { field: 'date', type: 'temporal', timeUnit: 'yearmonthdate', title: null, axis: { format: '%b %d' } } as const;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    description: 'Daily spend by provider, and the open anomalies per provider on the same dates',
    vconcat: [
      {
        width: WIDTH, height: 260,
        data: { values: data.daily },
        mark: { type: 'bar', tooltip: true },
        encoding: {
          x,
          y: { field: 'cost_usd', type: 'quantitative', aggregate: 'sum', stack: 'zero', title: 'USD per day', axis: { format: '$,.0f' } },
          color: { field: 'provider', type: 'nominal', title: 'Provider', scale: { scheme: 'tableau10' }, legend: LEGEND },
        },
      },
      {
        width: WIDTH, height: { step: 26 },
        title: { text: `Open anomalies by provider (${marks.length}; the ${Math.min(LABELLED_ANOMALIES, marks.length)} largest labelled)`, anchor: 'start', fontSize: 12, fontWeight: 'normal' },
        data: { values: marks.length > 0 ? marks : [{ date: data.to, provider: '(none)', severity: 'low', direction: 'above expected', label: null }] },
        layer: [
          {
            mark: { type: 'point', filled: true, opacity: SEVERITY_STYLE.opacity, stroke: '#ffffff', strokeWidth: 0.75, tooltip: true },
            encoding: {
              x,
              y: { field: 'provider', type: 'nominal', title: null, sort: providers, axis: { labelLimit: 0 } },
              shape: { field: 'direction', type: 'nominal', title: 'Anomaly', scale: { domain: ['above expected', 'below expected'], range: ['triangle-up', 'triangle-down'] }, legend: LEGEND },
              color: { field: 'severity', type: 'nominal', title: 'Severity', scale: { domain: [...SEVERITIES], range: [...SEVERITY_STYLE.colors] }, legend: LEGEND },
              size: { field: 'severity', type: 'ordinal', scale: { domain: [...SEVERITIES], range: [...SEVERITY_STYLE.sizes] }, legend: null },
              ...(marks.length === 0 ? { opacity: { value: 0 } } : {}),
            },
          },
          {
            transform: [{ filter: 'datum.label != null' }],
            mark: { type: 'text', align: 'left', dx: 8, dy: -8, fontSize: 10, color: '#374151' },
            encoding: { x, y: { field: 'provider', type: 'nominal', sort: providers }, text: { field: 'label' } },
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
    width: WIDTH - 200, height: { step: 22 },
    data: { values: data.topServices },
    mark: { type: 'bar', color: '#2563eb', tooltip: true },
    encoding: {
      y: { field: 'service', type: 'nominal', sort: '-x', title: null, axis: { labelLimit: 0 } },
      x: { field: 'cost_usd', type: 'quantitative', title: 'USD in the period', axis: { format: '$,.0f' } },
    },
  } as TopLevelSpec;
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
  const months = data.monthly.map((m) => ({ ...m, month: monthLabel(m), trend: monthTrend(m) }));
  const projected = months.filter((m) => m.projected_usd !== null).map((m) => ({ month: m.month, projected_usd: m.projected_usd, label: `run-rate ${formatUsd(m.projected_usd!).replace(/\.\d\d$/, '')}` }));
  const x = { field: 'month', type: 'ordinal', title: null, axis: { labelAngle: 0, labelLimit: 0 }, sort: months.map((m) => m.month) } as const;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    description: 'Month over month spend, with the month in progress projected to its end',
    width: WIDTH - 200, height: 200,
    layer: [
      {
        data: { values: projected },
        mark: { type: 'bar', color: '#e5e7eb', stroke: '#9ca3af', strokeDash: [3, 2], tooltip: true },
        encoding: { x, y: { field: 'projected_usd', type: 'quantitative' } },
      },
      {
        data: { values: projected },
        mark: { type: 'text', dy: -6, fontSize: 10, color: '#4b5563' },
        encoding: { x, y: { field: 'projected_usd', type: 'quantitative' }, text: { field: 'label' } },
      },
      {
        data: { values: months },
        mark: { type: 'bar', tooltip: true },
        encoding: {
          x,
          y: { field: 'cost_usd', type: 'quantitative', title: 'USD per month', axis: { format: '$,.0f' } },
          color: { field: 'trend', type: 'nominal', title: 'Against the month before', legend: LEGEND, scale: { domain: [...MONTH_TRENDS.domain], range: [...MONTH_TRENDS.range] } },
        },
      },
    ],
  } as TopLevelSpec;
}

/** Renders a Vega-Lite spec to an SVG string, headless. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
