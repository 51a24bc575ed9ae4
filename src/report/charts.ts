/**
 * The report's charts, declared as Vega-Lite specs and rendered to SVG in Node by Vega itself, so
 * the HTML needs no script and no network when it is opened.
 */
import { View, parse } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { monthLabel, type ReportData } from './data.js';

const WIDTH = 860;
const SEVERITY_COLORS = { domain: ['low', 'medium', 'high', 'critical'], range: ['#9ca3af', '#f59e0b', '#ef4444', '#7f1d1d'] };

/** Daily spend stacked by provider, with open anomalies as rules on the same timeline. */
export function dailySpendSpec(data: ReportData): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    description: 'Daily spend by provider, with open anomalies marked',
    width: WIDTH, height: 280,
    layer: [
      {
        data: { values: data.daily },
        mark: { type: 'bar', tooltip: true },
        encoding: {
          x: { field: 'date', type: 'temporal', timeUnit: 'yearmonthdate', title: null, axis: { format: '%b %d' } },
          y: { field: 'cost_usd', type: 'quantitative', aggregate: 'sum', stack: 'zero', title: 'USD per day', axis: { format: '$,.0f' } },
          color: { field: 'provider', type: 'nominal', title: 'Provider', scale: { scheme: 'tableau10' } },
        },
      },
      {
        data: { values: data.anomalies.map((a) => ({ ...a, label: `anomaly ${a.id}` })) },
        mark: { type: 'rule', strokeWidth: 2, strokeDash: [4, 3], tooltip: true },
        encoding: {
          x: { field: 'date', type: 'temporal', timeUnit: 'yearmonthdate' },
          stroke: { field: 'severity', type: 'nominal', title: 'Open anomaly', scale: SEVERITY_COLORS },
          description: { field: 'label' },
        },
      },
    ],
    resolve: { scale: { color: 'independent' } },
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
      y: { field: 'service', type: 'nominal', sort: '-x', title: null },
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

/** Spend per month, colored by whether it grew against the whole month before. */
export function monthlySpec(data: ReportData): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    description: 'Month over month spend',
    width: WIDTH - 200, height: 200,
    data: { values: data.monthly.map((m) => ({ ...m, month: monthLabel(m), trend: monthTrend(m) })) },
    mark: { type: 'bar', tooltip: true },
    encoding: {
      x: { field: 'month', type: 'ordinal', title: null, axis: { labelAngle: 0 } },
      y: { field: 'cost_usd', type: 'quantitative', title: 'USD per month', axis: { format: '$,.0f' } },
      color: { field: 'trend', type: 'nominal', title: 'Against the month before', scale: { domain: ['no whole month before', 'partial month', 'to date', 'up', 'down'], range: ['#9ca3af', '#d1d5db', '#93c5fd', '#dc2626', '#16a34a'] } },
    },
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
