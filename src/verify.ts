/**
 * `costsync verify`: reconciles the warehouse, per source. Per date and provider, line items against
 * the provider rollup; per date, the totals of the three rollup groupings against each other.
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
  warehouse: ReadOnlyWarehouse, options: { tolerance: number; from?: string | null; to?: string | null },
): Promise<VerifyReport> {
  const dates = [options.from ?? null, options.to ?? null];
  const differences = (await warehouse.table(loadSql('verify/differences'), [options.tolerance, ...dates])).rows as unknown as Difference[];
  const [coverage] = (await warehouse.table(loadSql('verify/coverage'), dates)).rows as { line_item_dates: number; rollup_dates: number }[];
  return { tolerance: options.tolerance, lineItemDates: coverage!.line_item_dates, rollupDates: coverage!.rollup_dates, differences };
}
