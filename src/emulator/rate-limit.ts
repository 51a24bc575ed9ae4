/** Per-key sliding-window rate limit, as the emulator enforces it. */

export interface RateDecision {
  allowed: boolean;
  /** When refused: milliseconds until the oldest request in the window leaves it. */
  retryAfterMs: number;
}

/**
 * Counts accepted requests per key over the last `windowMs`. Refused requests are not counted,
 * so a client that waits the advertised delay gets through.
 */
export class SlidingWindowLimiter {
  private readonly hits = new Map<string, number[]>();

  constructor(
    private readonly limit: number,
    private readonly windowMs = 60_000,
  ) {}

  take(key: string, nowMs: number): RateDecision {
    if (this.limit <= 0) return { allowed: true, retryAfterMs: 0 };
    const list = this.hits.get(key) ?? [];
    let drop = 0;
    while (drop < list.length && list[drop]! <= nowMs - this.windowMs) drop++;
    if (drop > 0) list.splice(0, drop);
    if (list.length >= this.limit) {
      return { allowed: false, retryAfterMs: Math.max(1, list[0]! + this.windowMs - nowMs) };
    }
    list.push(nowMs);
    this.hits.set(key, list);
    return { allowed: true, retryAfterMs: 0 };
  }
}
