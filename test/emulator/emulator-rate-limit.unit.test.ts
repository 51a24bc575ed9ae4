import { describe, expect, it } from 'vitest';
import { SlidingWindowLimiter } from '../../src/emulator/rate-limit.js';

describe('SlidingWindowLimiter', () => {
  it('allows the budget per window and says when the oldest request leaves it', () => {
    const limiter = new SlidingWindowLimiter(3, 60_000);
    expect(limiter.take('k', 0).allowed).toBe(true);
    expect(limiter.take('k', 10_000).allowed).toBe(true);
    expect(limiter.take('k', 20_000).allowed).toBe(true);
    const refused = limiter.take('k', 30_000);
    expect(refused).toEqual({ allowed: false, retryAfterMs: 30_000 });
    expect(limiter.take('k', 60_000).allowed).toBe(true);
  });

  it('keeps keys apart and does not count refused requests', () => {
    const limiter = new SlidingWindowLimiter(1, 60_000);
    expect(limiter.take('a', 0).allowed).toBe(true);
    expect(limiter.take('b', 0).allowed).toBe(true);
    for (let i = 1; i < 10; i++) expect(limiter.take('a', i * 1000).allowed).toBe(false);
    expect(limiter.take('a', 60_000).allowed).toBe(true);
  });

  it('is off at 0', () => {
    const limiter = new SlidingWindowLimiter(0);
    for (let i = 0; i < 100; i++) expect(limiter.take('k', 0).allowed).toBe(true);
  });
});
