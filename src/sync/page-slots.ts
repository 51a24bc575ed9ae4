/**
 * A bound on the pages held in memory across every source of a run: a page takes a slot before it is
 * fetched and gives it back once it is spooled and its cursor saved. Hundreds of sources then hold at
 * most this many pages (each a parsed body of up to 1,000 records, a few MB) whatever the number of
 * sources, rather than as many as their windows have in flight, which ran the heap out at 200.
 */

/** What one page in flight may hold on the heap: its body, the parsed records and their spool lines. */
export const PAGE_HEAP_BYTES = 6 * 1024 * 1024;

/** Heap kept for everything but pages: the run's own structures, DuckDB results, the id sets. */
export const HEAP_RESERVE_BYTES = 40 * 1024 * 1024;

/** Slots for a heap of `limitBytes`: what is left after the reserve, a page each; at least 2, at most 64. Pure. */
export function slotsForHeap(limitBytes: number): number {
  return Math.max(2, Math.min(64, Math.floor((limitBytes - HEAP_RESERVE_BYTES) / PAGE_HEAP_BYTES)));
}

export class PageSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Resolves once a slot is free, with the function that gives it back (once). */
  async take(): Promise<() => void> {
    if (this.free > 0) this.free -= 1;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free += 1;
    };
  }

  /** Pages waiting for a slot (for tests and the debug log). */
  get queued(): number {
    return this.waiting.length;
  }
}
