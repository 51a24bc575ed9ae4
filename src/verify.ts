/**
 * `costsync verify`: reconciles the warehouse, per source. Per date and provider, line items against
 * the provider rollup; per date, the totals of the three rollup groupings against each other. With
 * `--focus`, the FOCUS 1.2 rules that apply to the focus view.
 */
import type { ReadOnlyWarehouse } from './storage/duckdb.js';
import { loadSql } from './storage/duckdb.js';

export interface Difference {
  check: string;
  source: string;
  date: string;
  provider: string | null;
  left_usd: number;
  right_usd: number;
  difference_usd: number;
}

export interface VerifyReport {
  tolerance: number;
  /** Dates compared: line items against rollups, and rollup groupings against each other. */
  lineItemDates: number;
  rollupDates: number;
  differences: Difference[];
}

export async function verifyWarehouse(
  warehouse: ReadOnlyWarehouse,
  options: { tolerance: number; from?: string | null; to?: string | null },
): Promise<VerifyReport> {
  const dates = [options.from ?? null, options.to ?? null];
  const differences = (await warehouse.table(loadSql('verify/differences'), [options.tolerance, ...dates])).rows as unknown as Difference[];
  const [coverage] = (await warehouse.table(loadSql('verify/coverage'), dates)).rows as { line_item_dates: number; rollup_dates: number }[];
  return { tolerance: options.tolerance, lineItemDates: coverage!.line_item_dates, rollupDates: coverage!.rollup_dates, differences };
}

/** One broken FOCUS rule: how many rows (or dates) break it in a source, and an example. */
export interface FocusViolation {
  rule: string;
  source: string;
  rows: number;
  example: string;
}

/** `costsync verify --focus`: the FOCUS 1.2 rules that apply to the focus view (sql/verify/focus.sql). */
export async function verifyFocus(
  warehouse: ReadOnlyWarehouse,
  options: { tolerance: number },
): Promise<{ rows: number; violations: FocusViolation[] }> {
  const violations = (await warehouse.table(loadSql('verify/focus'), [options.tolerance])).rows as unknown as FocusViolation[];
  const [count] = await warehouse.sql<{ n: number }>('SELECT count(*)::BIGINT AS n FROM focus');
  return { rows: Number(count!.n), violations };
}
