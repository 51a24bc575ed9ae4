/**
 * A lake that runs did not write catches up. Every change to a partition is numbered in the warehouse
 * (`Warehouse.changed`, with a lake or without), and each lake keeps, per source, the number of the
 * last change it holds (its mark). At a lake's first drain of a run, the partitions changed after its
 * mark are marked pending; once a source has nothing pending, its mark moves to its latest change.
 * So a run without --format, or with another --out, never leaves this lake behind unknowingly.
 */
import type { Warehouse } from '../storage/duckdb.js';
import type { OutputTarget } from './target.js';

/** How the marks name a lake: its format and where it is. Pure. */
export function lakeName(format: 'parquet' | 'iceberg', target: Pick<OutputTarget, 'url'>): string {
  return `${format}:${target.url}`;
}

/** Marks pending every partition of `sources` changed after `lake`'s mark. */
export async function catchUp(warehouse: Warehouse, lake: string, sources: readonly string[]): Promise<void> {
  await warehouse.run('lake/catch_up', [lake, JSON.stringify(sources)]);
}

/** Moves `lake`'s mark of each of `sources` that has no partition pending to its latest change. */
export async function markCaughtUp(warehouse: Warehouse, lake: string, sources: readonly string[]): Promise<void> {
  // Outbox keys are <table>/<source>/<date>.
  const behind = new Set((await warehouse.query<{ key: string }>('outbox/pending', ['parquet'])).map((p) => p.key.split('/')[1]));
  for (const source of sources) {
    if (behind.has(source)) continue;
    await warehouse.run('lake/mark_clear', [lake, source]);
    await warehouse.run('lake/mark_record', [lake, source]);
  }
}

/** Records `keys` as pending outputs of `kind`, in one statement. */
export async function markPending(warehouse: Warehouse, kind: string, keys: readonly string[]): Promise<void> {
  if (keys.length > 0) await warehouse.run('outbox/mark_many', [kind, keys.join('\n')]);
}
