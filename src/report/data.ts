/** What the spend report shows, read from the analyst views (`sql/report/*.sql`). */
import { closest } from '../did-you-mean.js';
import { CostsyncError, ExitCode } from '../errors.js';
import { loadSql, type ReadOnlyWarehouse } from '../storage/duckdb.js';

export interface ReportData {
  from: string;
  to: string;
  /**
   * The period's total and average; and its last `recent_days` days (min(7, the period's days)) against
   * the as many days before them, with no change (and the reason) where one of those days has no data.
   */
  totals: {
    total_usd: number | null;
    days: number;
    daily_average_usd: number | null;
    recent_days: number;
    /** The spans' dates; null when the warehouse holds no spend at all. */
    recent_from: string | null;
    recent_to: string | null;
    before_from: string | null;
    before_to: string | null;
    recent_usd: number | null;
    before_usd: number | null;
    change_pct: number | null;
    no_change_reason: string | null;
  };
  daily: { date: string; provider: string; cost_usd: number }[];
  topServices: { service: string; cost_usd: number }[];
  /** Services by their change over the same days as the totals' `recent_*` against `before_*`. */
  movers: { service: string; recent_usd: number; before_usd: number; change_usd: number; change_pct: number | null }[];
  monthToDate: {
    as_of: string;
    month_to_date_usd: number | null;
    same_days_last_month_usd: number | null;
    change_pct: number | null;
    /** Why there is no change: those days are not all synced (the view's `no_change_reason`). */
    no_change_reason: string | null;
  } | null;
  /**
   * Months with their change from the month before; none for a partial month (the synced dates do
   * not cover it whole) or against one. `to_date`: the month of today, synced from its 1st to yesterday.
   */
  monthly: {
    month: string;
    cost_usd: number;
    previous_month_usd: number | null;
    change_usd: number | null;
    change_pct: number | null;
    days_with_data: number;
    is_partial: boolean;
    to_date: boolean;
    last_date: string;
    /** The month in progress projected to its end at its pace so far (null for other months). */
    projected_usd: number | null;
  }[];
  /** Spend per source in the period; shown when there is more than one. */
  bySource: { source: string; cost_usd: number; days: number }[];
  /** The one source reported on (`--source`), or null for all. */
  source: string | null;
  anomalies: {
    source: string;
    id: string;
    date: string;
    provider: string;
    service: string;
    alert_type: string;
    severity: string;
    status: string;
    excess_usd: number;
    deviation_percent: number;
  }[];
}

/** A month as the report names it: `2025-11 (to date)`, `2025-09 (partial)`, or `2025-10`. Pure. */
export function monthLabel(m: Pick<ReportData['monthly'][number], 'month' | 'is_partial' | 'to_date'>): string {
  return m.to_date ? `${m.month} (to date)` : m.is_partial ? `${m.month} (partial)` : m.month;
}

/**
 * Why `--source` cannot be reported on, or null when it can: a source the warehouse holds nothing of
 * would give an empty report with no dates, which reads as "no spend" rather than "mistyped". Pure.
 */
export function unknownSourceError(source: string | null, known: readonly string[]): CostsyncError | null {
  if (source === null || known.includes(source)) return null;
  const near = closest(source, known);
  return new CostsyncError(
    'CS_ERR_UNKNOWN_SOURCE',
    known.length === 0
      ? `--source ${source}: the warehouse holds no source yet (nothing has been synced into it).`
      : `--source ${source}: the warehouse holds no source of that name; it holds ${known.join(', ')}.`,
    {
      exitCode: ExitCode.USAGE,
      hint:
        known.length === 0
          ? 'Run costsync sync with the same --db first.'
          : near !== null
            ? `Did you mean --source ${near}?`
            : 'Pass one of those, or leave out --source to report on all of them.',
    },
  );
}

/** The report's dates as people read them; a warehouse with no data at all has none. Pure. */
export function periodText(data: Pick<ReportData, 'from' | 'to'>): string {
  return data.from === '' && data.to === '' ? 'no dates (the warehouse holds no spend yet)' : `${data.from} to ${data.to}`;
}

export async function gatherReport(
  warehouse: ReadOnlyWarehouse,
  period: { from: string | null; to: string | null; source?: string | null; now: Date },
): Promise<ReportData> {
  const rows = async <T>(name: string, params: (string | null)[]) => (await warehouse.table(loadSql(`report/${name}`), params)).rows as T[];
  const source = period.source ?? null;
  const known = (await rows<{ source: string }>('sources', [])).map((r) => r.source);
  const unknown = unknownSourceError(source, known);
  if (unknown !== null) throw unknown;
  const [range] = await rows<{ from: string | null; to: string | null }>('period', [period.from, period.to, source]);
  const from = range!.from ?? period.from ?? '';
  const to = range!.to ?? period.to ?? '';
  const span = [from, to, source];
  return {
    from,
    to,
    source,
    totals: (await rows<ReportData['totals']>('totals', span))[0]!,
    daily: await rows('daily_by_provider', span),
    topServices: await rows('top_services', span),
    movers: await rows('top_movers', span),
    // As of the report's last date when the last complete synced day is later: every card covers the report's dates.
    monthToDate: (await rows<NonNullable<ReportData['monthToDate']>>('month_to_date', [source, to === '' ? null : to]))[0] ?? null,
    // Only the month of today is "to date" (and then only when synced from its 1st to yesterday).
    monthly: await rows('monthly', [...span, period.now.toISOString().slice(0, 10)]),
    bySource: await rows('by_source', span),
    anomalies: await rows('open_anomalies', span),
  };
}
