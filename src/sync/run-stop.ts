/**
 * One stop for a run, whatever asks for it: the caller's signal (SIGTERM, SIGINT), --max-runtime, a
 * heap running short. A stop drops the requests waiting in every source's limiter, so it takes one
 * request, not a queue of them; what was fetched is stored, and progress is saved.
 */
import { getHeapStatistics } from 'node:v8';
import type { Clock, RequestLimiter } from '../api/resilience.js';
import { formatDuration } from '../dates.js';
import { CostsyncError } from '../errors.js';
import type { Logger } from '../log.js';

/** How often the heap is looked at. */
const HEAP_CHECK_MS = 250;

/** The heap's use and limit, in bytes. */
export type HeapProbe = () => { used: number; limit: number };

export const v8HeapProbe: HeapProbe = () => {
  const h = getHeapStatistics();
  return { used: h.used_heap_size, limit: h.heap_size_limit };
};

/** Past 90% of the limit, V8 is close to aborting the process: time to stop. Pure. */
export function heapRunningShort(used: number, limit: number): boolean {
  return used > 0.9 * limit;
}

/** The error a run that ran short of heap ends with: what happened, that nothing is lost, and the fix. Pure. */
export function memoryError(what: string, sources: number): CostsyncError {
  return new CostsyncError('CS_ERR_MEMORY', `The run stopped: ${what}. Progress up to here is saved; the next run goes on from it.`, {
    hint: `Give Node a larger heap (NODE_OPTIONS=--max-old-space-size=512), or split the ${sources} source(s) across runs with --source.`,
  });
}

export class RunStop {
  private readonly stopper = new AbortController();
  private readonly limiters: RequestLimiter[] = [];
  private deadline = Infinity;
  private maxRuntimeMs = 0;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private heapTimer: NodeJS.Timeout | undefined;
  /** Why the heap stopped the run, once it did. */
  private short: string | null = null;
  private readonly onCallerStop = () => this.stopWith(String(this.caller!.reason ?? 'stop requested'));

  constructor(
    private readonly clock: Clock,
    private readonly caller?: AbortSignal,
  ) {
    if (caller?.aborted) this.onCallerStop();
    caller?.addEventListener('abort', this.onCallerStop, { once: true });
    this.stopper.signal.addEventListener(
      'abort',
      () => {
        for (const l of this.limiters) l.dropWaiting();
      },
      { once: true },
    );
  }

  /** Aborted once the run stops: the requests in flight end at once. */
  get signal(): AbortSignal {
    return this.stopper.signal;
  }

  /** Why the run stopped, if it did. */
  get reason(): string | undefined {
    return this.stopper.signal.aborted ? String(this.stopper.signal.reason) : undefined;
  }

  /** Why the heap stopped the run, or null. */
  get memoryShort(): string | null {
    return this.short;
  }

  /** True once the run is to stop: finish the current step, then return. */
  readonly shouldStop = (): boolean => {
    if (this.clock.now() >= this.deadline) this.stopWith(`--max-runtime of ${formatDuration(this.maxRuntimeMs)} reached`);
    return this.stopper.signal.aborted;
  };

  /** Stops at `startedMs + maxRuntimeMs` (none: never), and should the heap run short (see `heapRunningShort`). */
  watch(o: { startedMs: number; maxRuntimeMs: number | undefined; heap: HeapProbe; logger: Logger }): void {
    if (o.maxRuntimeMs !== undefined) {
      this.maxRuntimeMs = o.maxRuntimeMs;
      this.deadline = o.startedMs + o.maxRuntimeMs;
      this.deadlineTimer = setTimeout(this.shouldStop, Math.max(0, this.deadline - this.clock.now()));
      this.deadlineTimer.unref();
    }
    // Should the heap run short, the run stops as a SIGTERM would (progress saved) rather than V8 aborting it.
    this.heapTimer = setInterval(() => {
      const { used, limit } = o.heap();
      if (this.short !== null || !heapRunningShort(used, limit)) return;
      this.short = `the heap ran short (${Math.round(used / 1e6)} MB of its ${Math.round(limit / 1e6)} MB)`;
      o.logger.warn(`${this.short}: stopping cleanly, progress is saved`);
      this.stopWith(this.short);
    }, HEAP_CHECK_MS);
    this.heapTimer.unref();
  }

  /** A source's limiter: a stop drops the requests waiting in it. */
  readonly addLimiter = (limiter: RequestLimiter): void => {
    this.limiters.push(limiter);
    if (this.stopper.signal.aborted) limiter.dropWaiting();
  };

  /** Ends the timers and lets go of the caller's signal. */
  dispose(): void {
    clearTimeout(this.deadlineTimer);
    clearInterval(this.heapTimer);
    this.caller?.removeEventListener('abort', this.onCallerStop);
  }

  private stopWith(reason: string): void {
    if (!this.stopper.signal.aborted) this.stopper.abort(reason);
  }
}
