/**
 * A bound on the pages on the heap across every source of a run: a page takes a slot once its key's
 * limiter lets its request go and gives it back once the engine has taken its records (then only its
 * spool file's bytes, outside the heap, wait for the disk: at most two pages a window). Hundreds of
 * sources then hold at most this many pages on the heap whatever the number of sources, rather than
 * as many as their windows have in flight.
 */

/**
 * What one page in flight holds on the heap: its text and parsed records (up to 1,000) only while
 * the engine looks at them, at once and synchronously; what waits on the disk is its spool file's
 * bytes, outside the heap. So about a body's size.
 */
export const PAGE_HEAP_BYTES = 1024 * 1024;

/** Heap kept for everything but pages: the run's own structures, DuckDB results, the id sets. */
export const HEAP_RESERVE_BYTES = 40 * 1024 * 1024;

/**
 * Pages whose spool files wait for the disk, across every source of a run: their bytes are outside
 * the heap but not outside the process (64 pages of up to 1,000 records, about 20 MB). Past this,
 * a window waits for the disk before it asks for another page.
 */
export const SPOOL_WAIT_PAGES = 64;

/** Slots for a heap of `limitBytes`: what is left after the reserve, a page each; at least 2, at most 64. Pure. */
export function slotsForHeap(limitBytes: number): number {
  return Math.max(2, Math.min(64, Math.floor((limitBytes - HEAP_RESERVE_BYTES) / PAGE_HEAP_BYTES)));
}

/**
 * Not p-limit: a slot is taken in one place and given back in another, after other awaits (taken when
 * the client may send the request, given back once the page is taken), and p-limit only wraps one call.
 */
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
