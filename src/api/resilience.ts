/**
 * Rate limiting and retries shared by every request: one Bottleneck limiter per source (a run
 * makes one for each source it syncs, at that source's rate limit), and a p-retry policy that
 * backs off on transient failures and holds the whole limiter on 429.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { bottleneck as bottleneckLibrary } from '../cjs-libraries.js';
import { ApiError, CostsyncError } from '../errors.js';

/** Time source and waiting, injectable so tests never wait on the wall clock. */
export interface Clock {
  now(): number;
  /** Waits `ms`, or less when `signal` aborts (it then resolves: whoever aborted knows why). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    delay(ms, undefined, signal ? { signal } : {}).catch((error: unknown) => {
      if (!signal?.aborted) throw error;
    }),
};

/**
 * Requests leave at most every `60_000 / rpm * SPACING_MARGIN` ms. The margin keeps a sliding
 * window on the server from counting one request too many when network latency varies.
 */
export const SPACING_MARGIN = 1.02;

/** Milliseconds between request starts for a per-minute budget (pure). */
export function spacingMs(requestsPerMinute: number): number {
  return Math.ceil((60_000 / requestsPerMinute) * SPACING_MARGIN);
}

export interface RequestLimiterOptions {
  requestsPerMinute: number;
  /** Requests in flight at once; more only helps when latency exceeds the spacing. */
  maxConcurrent?: number;
  clock?: Clock;
  /** Told when a hold starts, with its length in ms. */
  onHold?: (ms: number) => void;
}

export interface RequestLimiter {
  readonly requestsPerMinute: number;
  schedule<T>(task: () => Promise<T>): Promise<T>;
  /** Holds every request not yet started for `ms` (extends, never shortens, a hold in force). */
  holdFor(ms: number): void;
  /** Epoch ms until which requests are held (0 when none). */
  readonly heldUntil: number;
  /**
   * A run is stopping: requests waiting for their turn are refused at once (they fail with
   * CS_ERR_ABORTED) instead of each waiting out its spacing; requests in flight finish.
   */
  dropWaiting(): void;
  stop(): Promise<void>;
}

/** The message Bottleneck rejects dropped jobs with, so the client can tell them from failures. */
export const DROPPED_MESSAGE = 'costsync: request dropped, the run is stopping';

/**
 * A limiter that spaces requests evenly (`minTime`), so no burst ever exceeds the per-minute
 * budget over any sliding window, and that a 429 can pause as a whole via Bottleneck's reservoir.
 */
export function createRequestLimiter(options: RequestLimiterOptions): RequestLimiter {
  const clock = options.clock ?? systemClock;
  const bottleneck = new (bottleneckLibrary())({
    minTime: spacingMs(options.requestsPerMinute),
    maxConcurrent: options.maxConcurrent ?? 8,
  });
  let heldUntil = 0;
  let holding: Promise<void> | null = null;
  let stopping: Promise<void> | null = null;
  // A stop cuts a hold's wait short: its timer would otherwise keep the process alive until the hold ends.
  const holdWait = new AbortController();

  async function releaseWhenDue(): Promise<void> {
    while (clock.now() < heldUntil && !holdWait.signal.aborted) await clock.sleep(heldUntil - clock.now(), holdWait.signal);
    holding = null;
    // Typed as sync, but returns a promise in Bottleneck 2.
    await (bottleneck.updateSettings({ reservoir: null }) as unknown);
  }

  return {
    requestsPerMinute: options.requestsPerMinute,
    // Once stopping, a new request is dropped like a waiting one (Bottleneck would refuse it with its own error).
    schedule: (task) =>
      stopping === null ? bottleneck.schedule(task) : Promise.reject(new CostsyncError('CS_ERR_ABORTED', DROPPED_MESSAGE)),
    holdFor(ms: number) {
      const until = clock.now() + ms;
      if (until <= heldUntil) return;
      heldUntil = until;
      options.onHold?.(ms);
      if (!holding) {
        // A reservoir of 0 stops Bottleneck from starting queued jobs until it is lifted.
        holding = Promise.resolve(bottleneck.updateSettings({ reservoir: 0 }) as unknown).then(releaseWhenDue);
      }
    },
    get heldUntil() {
      return heldUntil;
    },
    dropWaiting() {
      stopping ??= bottleneck.stop({ dropWaitingJobs: true, dropErrorMessage: DROPPED_MESSAGE });
      // A hold in force would otherwise keep stop() (and the process) waiting for it.
      heldUntil = 0;
      holdWait.abort();
    },
    async stop() {
      if (stopping === null) await holding;
      stopping ??= bottleneck.stop({ dropWaitingJobs: false });
      await stopping;
    },
  };
}

export interface RetryPolicy {
  /** Retries after the first attempt, for transient failures (5xx, network, timeouts, bad bodies). */
  retries: number;
  minTimeoutMs: number;
  maxTimeoutMs: number;
  factor: number;
  /** 429s do not use up `retries`; this bounds them separately. */
  maxRateLimitRetries: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  retries: 6,
  minTimeoutMs: 500,
  maxTimeoutMs: 30_000,
  factor: 2,
  maxRateLimitRetries: 30,
};

/** True for failures worth another attempt: never 400, 401 or 403. */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof ApiError)) return false;
  if (error.statusCode !== undefined && error.statusCode >= 500) return true;
  return ['CS_ERR_NETWORK', 'CS_ERR_TIMEOUT', 'CS_ERR_MALFORMED_RESPONSE'].includes(error.code);
}

export function isRateLimited(error: unknown): error is ApiError {
  return error instanceof ApiError && error.statusCode === 429;
}

/**
 * Seconds to wait after a 429: from `Retry-After` (seconds or an HTTP date), else from the
 * message ("retry after 12 seconds"); null when neither says. Pure.
 */
export function retryAfterMs(header: string | undefined, message: string, nowMs: number): number | null {
  if (header !== undefined && header.trim() !== '') {
    const text = header.trim();
    if (/^\d+(\.\d+)?$/.test(text)) return Math.ceil(Number(text) * 1000);
    const at = Date.parse(text);
    if (!Number.isNaN(at)) return Math.max(0, at - nowMs);
  }
  const m = /(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b/i.exec(message);
  if (!m) return null;
  const value = Number(m[1]);
  const unit = m[2]!.toLowerCase();
  if (unit.startsWith('ms') || unit.startsWith('milli')) return Math.ceil(value);
  if (unit.startsWith('m')) return Math.ceil(value * 60_000);
  return Math.ceil(value * 1000);
}
