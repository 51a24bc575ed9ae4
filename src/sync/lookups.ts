/**
 * What the warehouse holds of a source, looked up at the source's start. Each lookup scans the
 * table, which grows with every source: with hundreds of sources, a scan each would take much of the
 * warehouse's one thread. Lookups asked for together share one scan
 * (`batched`): at one source nothing changes, at hundreds the sources that start together cost one.
 */
import { batched } from '../batch.js';
import type { Warehouse } from '../storage/duckdb.js';

export interface SourceLookups {
  /** Line items the warehouse holds per date (`YYYY-MM-DD`) of `from`..`to`, for the progress estimate. */
  lineItemsPerDate(source: string, from: string, to: string): Promise<Map<string, number>>;
  /** Providers the source has shown so far (its anomalies and line items). */
  knownProviders(source: string): Promise<string[]>;
}

type Query = <T>(name: string, params: string[]) => Promise<T[]>;

interface DateRange {
  source: string;
  from: string;
  to: string;
}

/** Line items per date for each range asked, in one query (`sql/sync/line_items_rows_per_date.sql`). */
export async function lineItemsPerDate(query: Query, asked: readonly DateRange[]): Promise<Map<string, number>[]> {
  const answers = asked.map(() => new Map<string, number>());
  if (asked.length === 0) return answers;
  const from = asked.reduce((min, a) => (a.from < min ? a.from : min), asked[0]!.from);
  const to = asked.reduce((max, a) => (a.to > max ? a.to : max), asked[0]!.to);
  const rows = await query<{ i: number; date: string; n: number }>('sync/line_items_rows_per_date', [
    JSON.stringify(asked.map((a, i) => ({ i, source: a.source, from: a.from, to: a.to }))),
    from,
    to,
  ]);
  for (const r of rows) answers[r.i]!.set(r.date, Number(r.n));
  return answers;
}

/**
 * The lookups against `warehouse`: a batch closes when the statements queued before it have run, so
 * the sources that start while the warehouse is busy share one scan. A lookup may run while a
 * transaction is open; it reads its own source's rows only, and what it returns is a hint (a progress
 * estimate, providers to split a query by), which a row not yet committed does not harm.
 */
export function warehouseLookups(warehouse: Warehouse): SourceLookups {
  const query: Query = (name, params) => warehouse.query(name, params);
  const turn = <T>(fn: () => Promise<T>) => warehouse.afterQueued(fn);
  const perDate = batched(turn, (asked: readonly DateRange[]) => lineItemsPerDate(query, asked));
  const providers = batched(turn, async (sources: readonly string[]) => {
    const bySource = new Map<string, string[]>();
    for (const r of await query<{ source: string; p: string }>('sync/known_providers', [JSON.stringify([...new Set(sources)])])) {
      (bySource.get(r.source) ?? bySource.set(r.source, []).get(r.source)!).push(r.p);
    }
    return sources.map((s) => bySource.get(s) ?? []);
  });
  return {
    lineItemsPerDate: (source, from, to) => perDate({ source, from, to }),
    knownProviders: providers,
  };
}
