import { describe, expect, it } from 'vitest';
import { createRequestLimiter, isTransient, retryAfterMs, spacingMs, systemClock, type Clock } from '../../src/api/resilience.js';
import { ApiError, type ErrorCode } from '../../src/errors.js';

describe('retryAfterMs', () => {
  const now = Date.parse('2025-06-01T00:00:00Z');
  it('reads Retry-After as seconds', () => {
    expect(retryAfterMs('7', 'whatever', now)).toBe(7000);
  });
  it('reads Retry-After as an HTTP date', () => {
    expect(retryAfterMs('Sun, 01 Jun 2025 00:00:30 GMT', '', now)).toBe(30_000);
  });
  it('falls back to the seconds stated in the message', () => {
    expect(retryAfterMs(undefined, 'Rate limit of 60 requests per minute exceeded; retry after 12 seconds.', now)).toBe(12_000);
    expect(retryAfterMs('', 'slow down, wait 2 minutes', now)).toBe(120_000);
    expect(retryAfterMs(undefined, 'try again in 1500 ms', now)).toBe(1500);
  });
  it('returns null when nothing says how long', () => {
    expect(retryAfterMs(undefined, 'too many requests', now)).toBeNull();
  });
});

describe('spacingMs', () => {
  it('spaces requests a little wider than the budget, so a sliding window never overflows', () => {
    expect(spacingMs(60)).toBe(1020);
    expect(spacingMs(600)).toBe(102);
    expect(60_000 / spacingMs(60)).toBeGreaterThan(0.95 * 60);
  });
});

describe('isTransient', () => {
  const err = (code: ErrorCode, statusCode?: number) => new ApiError(code, 'x', { path: '/p', statusCode });
  it('retries 5xx, network, timeouts and malformed bodies', () => {
    expect(isTransient(err('CS_ERR_SERVER', 500))).toBe(true);
    expect(isTransient(err('CS_ERR_HTTP', 503))).toBe(true);
    expect(isTransient(err('CS_ERR_NETWORK'))).toBe(true);
    expect(isTransient(err('CS_ERR_TIMEOUT'))).toBe(true);
    expect(isTransient(err('CS_ERR_MALFORMED_RESPONSE', 200))).toBe(true);
  });
  it('never retries 400, 401 or 403', () => {
    expect(isTransient(err('CS_ERR_VALIDATION', 400))).toBe(false);
    expect(isTransient(err('CS_ERR_UNAUTHORIZED', 401))).toBe(false);
    expect(isTransient(err('CS_ERR_INVALID_SCOPE', 403))).toBe(false);
    expect(isTransient(new Error('plain'))).toBe(false);
  });
});

describe('a stop during a rate-limit hold', () => {
  it('cuts the hold short: its wait ends at once and stop() resolves (the timer would keep the process alive for the hold)', async () => {
    const waits: AbortSignal[] = [];
    let started: () => void = () => undefined;
    const sleeping = new Promise<void>((resolve) => {
      started = resolve;
    });
    // A clock whose time never moves: only an abort can end a wait.
    const clock: Clock = {
      now: () => 0,
      sleep: (_ms, signal) =>
        new Promise<void>((resolve) => {
          waits.push(signal!);
          signal?.addEventListener('abort', () => resolve(), { once: true });
          started();
        }),
    };
    const limiter = createRequestLimiter({ requestsPerMinute: 60, clock });
    limiter.holdFor(50_000);
    await sleeping;
    expect(waits[0]!.aborted).toBe(false);
    limiter.dropWaiting();
    expect(waits[0]!.aborted).toBe(true);
    await limiter.stop();
    expect(waits).toHaveLength(1);
  });

  it("the system clock's sleep ends when its signal aborts", async () => {
    const stop = new AbortController();
    const wait = systemClock.sleep(600_000, stop.signal);
    stop.abort('test stop');
    await expect(wait).resolves.toBeUndefined();
  });
});
