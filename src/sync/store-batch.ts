/**
 * When a stream's fetched windows are stored. A window whose pages are all spooled and whose state
 * says so (`fetched`) is safe to leave unstored for a while: a crash redoes only its store. So small
 * windows wait for each other and are stored together, in one transaction (the write queue's group
 * commit), where DuckDB writes full row groups straight to the database file instead of to the WAL
 * first and to the file again at the checkpoint.
 *
 * How many rows is measured, not derived (docs/benchmarks.md, "Store batches"): DuckDB's checkpoint
 * merges neighbouring row groups that fit in fewer (rewriting them, and leaving free blocks that make
 * the publish compact the file). A transaction under a row group goes to the WAL and is written again
 * at the checkpoint; one of a full row group and a partial one leaves partial row groups between full
 * ones, which the checkpoint merges; one of three full row groups or more does not.
 */
import { MAX_GROUP } from '../storage/write-queue.js';

/** DuckDB's row group: a transaction that appends this many rows to a table writes them to its file directly. */
export const ROW_GROUP_ROWS = 122_880;

/** Rows that waiting windows are stored at (see above): three row groups. */
export const STORE_BATCH_ROWS = 3 * ROW_GROUP_ROWS;

export interface WaitingWindows {
  /** Fetched windows waiting to be stored. */
  windows: number;
  /** Their rows; `Infinity` when a window's rows are not all known (resumed after a restart). */
  rows: number;
  /** How long the first of them has waited. */
  waitedMs: number;
}

/**
 * Whether the waiting windows are stored now, together: once their rows fill three row groups, once
 * they are as many as one transaction takes (`MAX_GROUP`), once the first has waited `maxWaitMs` (so
 * a slow source's windows still reach the published file in time; 0: every window at once), once no
 * other window of the stream is being fetched or waits to be (nothing more will join them), or once
 * the stream is ending (a stop or a failure). Pure: the engine asks whenever a window's fetch ends.
 */
export function storeNow(
  waiting: WaitingWindows,
  others: { fetching: number; queued: number },
  limits: { maxWaitMs: number; ending: boolean },
): boolean {
  if (waiting.windows === 0) return false;
  return (
    limits.ending ||
    waiting.rows >= STORE_BATCH_ROWS ||
    waiting.windows >= MAX_GROUP ||
    waiting.waitedMs >= limits.maxWaitMs ||
    (others.fetching === 0 && others.queued === 0)
  );
}
