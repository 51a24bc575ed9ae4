/** What the spend report shows, read from the analyst views (`sql/report/*.sql`). */
import { loadSql, type ReadOnlyWarehouse } from '../storage/duckdb.js';

export interface ReportData {
  from: string;
  to: string;
  totals: {
    total_usd: number | null;
    days: number;
    daily_average_usd: number | null;
    last_7_days_usd: number | null;
    prior_7_days_usd: number | null;
  };
  daily: { date: string; provider: string; cost_usd: number }[];
  topServices: { service: string; cost_usd: number }[];
  movers: { service: string; last_7_days_usd: number; prior_7_days_usd: number; change_usd: number; change_pct: number | null }[];
  monthToDate: {
    as_of: string;
    month_to_date_usd: number | null;
    same_days_last_month_usd: number | null;
    change_pct: number | null;
  } | null;
  /**
   * Months with their change from the month before; none for a partial month (its data does not
   * cover it whole) or against one. `to_date`: the last month, still in progress.
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

export async function gatherReport(
  warehouse: ReadOnlyWarehouse,
  period: { from: string | null; to: string | null; source?: string | null },
): Promise<ReportData> {
  const rows = async <T>(name: string, params: (string | null)[]) => (await warehouse.table(loadSql(`report/${name}`), params)).rows as T[];
  const source = period.source ?? null;
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
    movers: await rows('top_movers', [source]),
    monthToDate: (await rows<NonNullable<ReportData['monthToDate']>>('month_to_date', [source]))[0] ?? null,
    monthly: await rows('monthly', span),
    bySource: await rows('by_source', span),
    anomalies: await rows('open_anomalies', span),
  };
}
