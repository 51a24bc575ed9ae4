/**
 * A lake that runs did not write catches up. Every change to a partition is numbered in the warehouse
 * (`Warehouse.changed`, with a lake or without), and each lake keeps, per source, the number of the
 * last change it holds (its mark). At a lake's first drain of a run, the partitions changed after its
 * mark are marked pending; after that, whenever a drain leaves a source nothing pending (in the same
 * slot of the write queue, so no commit comes between), its mark moves to its latest change.
 * So a run without --format, or with another --out, never leaves this lake behind unknowingly.
 */
import type { LakeFormat, Warehouse } from '../storage/duckdb.js';
import { markMany, sourcesBehind } from '../storage/outbox.js';
import type { OutputTarget } from './target.js';

/** How the marks name a lake: its format and where it is. Pure. */
export function lakeName(format: LakeFormat, target: Pick<OutputTarget, 'url'>): string {
  return `${format}:${target.url}`;
}

/** Marks pending every partition of `sources` changed after `lake`'s mark. */
export async function catchUp(warehouse: Warehouse, lake: string, sources: readonly string[]): Promise<void> {
  await warehouse.run('lake/mark_known', [lake, JSON.stringify(sources)]);
  const changed = await warehouse.query<{ table: string; source: string; date: string }>('lake/changed_since_mark', [
    lake,
    JSON.stringify(sources),
  ]);
  await markMany(
    warehouse,
    changed.map((c) => ({ kind: 'partition', ...c })),
  );
}

/** What a drain that found nothing pending knows without asking the outbox again. */
export const NONE_BEHIND: ReadonlySet<string> = new Set();

/**
 * Moves `lake`'s mark of each of `sources` that has no partition pending to its latest change (two statements
 * whatever their number); `known`, the sources behind when the caller has just read it, saves reading the outbox again.
 */
export async function markCaughtUp(
  warehouse: Warehouse,
  lake: string,
  sources: readonly string[],
  known?: ReadonlySet<string>,
): Promise<void> {
  const behind = known ?? (await sourcesBehind(warehouse));
  const caughtUp = JSON.stringify(sources.filter((s) => !behind.has(s)));
  if (caughtUp === '[]') return;
  await warehouse.run('lake/mark_clear', [lake, caughtUp]);
  await warehouse.run('lake/mark_record', [lake, caughtUp]);
}
