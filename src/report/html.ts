/** The report as one self-contained HTML page: inline CSS, inline SVG charts, no script, no network. */
import { monthLabel, periodText, type ReportData } from './data.js';
import { formatPercent, formatUsd } from '../money.js';

const escape = (v: unknown) => String(v ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const usd = (v: number | null | undefined) => (v === null || v === undefined ? '–' : formatUsd(v));
const pct = formatPercent;

function table(headers: string[], rows: (string | number)[][], id: string): string {
  if (rows.length === 0) return `<p class="empty" id="${id}">None.</p>`;
  return `<table id="${id}"><thead><tr>${headers.map((h) => `<th>${escape(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${escape(c)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

/** The open anomalies; a source column only when the warehouse holds several sources. */
function anomalyTable(data: ReportData): string {
  const several = data.bySource.length > 1;
  const headers = [
    'Detected',
    ...(several ? ['Source'] : []),
    'Provider',
    'Service',
    'Type',
    'Severity',
    'Status',
    'Against expected',
    'Deviation',
  ];
  const rows = data.anomalies.map((a) => [
    a.date,
    ...(several ? [a.source] : []),
    a.provider,
    a.service,
    a.alert_type.replaceAll('_', ' '),
    a.severity,
    a.status,
    formatUsd(a.excess_usd, { sign: true }),
    pct(a.deviation_percent),
  ]);
  return table(headers, rows, 'anomalies');
}

/**
 * The month-to-date card: the change coloured as a rise or fall, or, where those days are not all
 * synced, no change and the reason in plain text (a part month against a whole one is no rise); with no
 * synced day up to the report's last date, says so rather than a bare "– vs –". Pure.
 */
export function monthToDateCard(mtd: ReportData['monthToDate'], period?: Pick<ReportData, 'from' | 'to'>): string {
  const title = '<span>Month to date against the same days of last month</span>';
  const amounts = `${usd(mtd?.month_to_date_usd)} vs ${usd(mtd?.same_days_last_month_usd)}${mtd ? `, as of <span class="date">${escape(mtd.as_of)}</span>` : ''}`;
  if (mtd === null) {
    const reason = period === undefined || period.to === '' ? 'no synced days yet' : `no synced days in ${period.from}..${period.to}`;
    return `<div class="kpi" id="mtd">${title}<b class="none">no change given</b><span>${amounts}</span><span class="reason">${escape(reason)}</span></div>`;
  }
  if (mtd.no_change_reason)
    return `<div class="kpi" id="mtd">${title}<b class="none">no change given</b><span>${amounts}</span><span class="reason">${escape(mtd.no_change_reason)}</span></div>`;
  return `<div class="kpi" id="mtd">${title}<b class="${mtd?.change_pct == null ? 'none' : mtd.change_pct > 0 ? 'up' : 'down'}">${pct(mtd?.change_pct)}</b><span>${amounts}</span></div>`;
}

/** Dates as `2025-06-24..2025-06-30`, or one date alone. Pure. */
const days = (from: string | null, to: string | null) => (from === to ? (from ?? '') : `${from}..${to}`);

/** "the last 7 days" / "the last day": the days the recent card and the movers cover, as people say them. Pure. */
export function recentDaysText(n: number): { last: string; before: string } {
  return n === 1 ? { last: 'Last day', before: 'the day before' } : { last: `Last ${n} days`, before: `the ${n} before` };
}

/**
 * The card of the period's last n days (n = min(7, its days)) against the n before, naming both spans:
 * a rise red, a fall green, and where one of those days has no data, no change and the reason. Pure.
 */
export function recentCard(t: ReportData['totals']): string {
  const { last, before } = recentDaysText(t.recent_days);
  const title = `<span>${last} against ${before}</span>`;
  const spans =
    t.recent_from === null
      ? ''
      : `<span class="span">${escape(days(t.recent_from, t.recent_to))}</span><span class="span">vs ${escape(days(t.before_from, t.before_to))}</span>`;
  const amounts = `<span>${usd(t.recent_usd)} vs ${usd(t.before_usd)}</span>`;
  if (t.change_pct === null)
    return `<div class="kpi" id="recent">${title}<b class="none">no change given</b>${amounts}${spans}<span class="reason">${escape(t.no_change_reason ?? '')}</span></div>`;
  return `<div class="kpi" id="recent">${title}<b class="${t.change_pct > 0 ? 'up' : 'down'}">${pct(t.change_pct)}</b>${amounts}${spans}</div>`;
}

export function reportHtml(data: ReportData, charts: { daily: string; services: string; monthly: string }, generatedAt: string): string {
  const t = data.totals;
  const { last, before } = recentDaysText(t.recent_days);
  const mtd = data.monthToDate;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Cloud spend, ${escape(periodText(data))}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111827;margin:32px auto;max-width:980px;padding:0 16px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:17px;margin:32px 0 8px}.sub{color:#6b7280;margin:0 0 20px}
.kpis{display:grid;grid-template-columns:repeat(4,1fr);gap:12px}.kpi{border:1px solid #e5e7eb;border-radius:8px;padding:12px}
.kpi b{display:block;font-size:22px}.kpi span{color:#6b7280;font-size:12px}.up{color:#dc2626}.down{color:#16a34a}.none{color:#6b7280}.kpi .reason,.kpi .span{display:block}.kpi .span,.kpi .date{white-space:nowrap}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid #e5e7eb;padding:5px 8px;text-align:left}
td:nth-child(n+2){font-variant-numeric:tabular-nums}.chart svg{max-width:100%;height:auto}.empty,.note{color:#6b7280}.note{font-size:13px;margin:-4px 0 8px}
</style></head><body>
<h1>Cloud spend</h1>
<p class="sub">${data.source === null ? '' : `source ${escape(data.source)} · `}${escape(periodText(data))} · generated ${escape(generatedAt)} by costsync</p>
${t.days === 0 ? `<p class="empty" id="no-data">No spend is stored for ${escape(data.from === '' ? 'any date' : periodText(data))}${data.source === null ? '' : ` (source ${escape(data.source)})`}: sync those dates, or pick another range.</p>\n` : ''}
<section class="kpis" id="kpis">
<div class="kpi"><span>Total in the period</span><b id="total">${usd(t.total_usd)}</b><span>${t.days} day(s) with data</span></div>
<div class="kpi"><span>Daily average</span><b id="average">${usd(t.daily_average_usd)}</b></div>
${recentCard(t)}
${monthToDateCard(mtd, data)}
</section>
${
  data.bySource.length > 1
    ? `<h2>Spend by source</h2>
${table(
  ['Source', 'Spend', 'Days with data'],
  data.bySource.map((s) => [s.source, usd(s.cost_usd), s.days]),
  'sources',
)}
`
    : ''
}<h2>Daily spend by provider, with open anomalies</h2>
<div class="chart" id="chart-daily">${charts.daily}</div>
<h2>Top services</h2>
<div class="chart" id="chart-services">${charts.services}</div>
<h2 id="movers-title">Top movers${t.recent_from === null ? '' : ` (${escape(`${last.toLowerCase()}, ${days(t.recent_from, t.recent_to)}, against ${before}, ${days(t.before_from, t.before_to)}`)})`}</h2>
${table(
  ['Service', last, before[0]!.toUpperCase() + before.slice(1), 'Change', 'Change %'],
  data.movers.map((m) => [m.service, usd(m.recent_usd), usd(m.before_usd), usd(m.change_usd), pct(m.change_pct)]),
  'movers',
)}
<h2>Month over month</h2>
<p class="note" id="monthly-note">Whole months, each of the months the report's dates fall in.</p>
<div class="chart" id="chart-monthly">${charts.monthly}</div>
${table(
  ['Month', 'Spend', 'Run-rate (whole days so far, projected to month end)', 'Previous month', 'Change', 'Change %'],
  data.monthly.map((m) => [
    m.to_date ? `${monthLabel(m)}, through ${m.last_date}` : monthLabel(m),
    usd(m.cost_usd),
    usd(m.projected_usd),
    usd(m.previous_month_usd),
    usd(m.change_usd),
    pct(m.change_pct),
  ]),
  'monthly',
)}
<h2>Open anomalies (${data.anomalies.length})</h2>
${anomalyTable(data)}
</body></html>
`;
}
