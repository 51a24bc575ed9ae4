/**
 * Seeded fault injection. Random faults draw from one seeded stream in request order, so a run
 * with the same seed and request sequence sees the same faults. Scripted faults (a queue, as
 * undici's tests script failures with a counter) hit the next matching requests exactly.
 */
import { createRng } from './rng.js';

export const FAULT_KINDS = ['error500', 'drop', 'truncate', 'malformed', 'rateLimit', 'expireCursor'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultOptions {
  /** Added to every API response, in ms. */
  latencyMs: number;
  /** Extra random latency, uniform in [0, latencyJitterMs). */
  latencyJitterMs: number;
  /** Chances per request, each in [0, 1]. */
  errorRate: number;
  dropRate: number;
  truncateRate: number;
  malformedRate: number;
  /** Chance that a valid cursor is refused as expired. */
  cursorExpiryRate: number;
  /** Cursors older than this many ms are refused as expired (0: never). */
  cursorTtlMs: number;
  /** Restate recent days every this many API requests (0: only when asked). */
  restateEveryRequests: number;
  /** Seed of the fault dice, when they should vary apart from the data's seed. */
  seed?: number;
}

export const NO_FAULTS: FaultOptions = {
  latencyMs: 0,
  latencyJitterMs: 0,
  errorRate: 0,
  dropRate: 0,
  truncateRate: 0,
  malformedRate: 0,
  cursorExpiryRate: 0,
  cursorTtlMs: 0,
  restateEveryRequests: 0,
};

export interface ScriptedFault {
  kind: FaultKind;
  /** Only requests whose path starts with this are hit; all API requests when absent. */
  pathPrefix?: string;
}

export interface FaultDecision {
  delayMs: number;
  kind: FaultKind | null;
}

export class FaultInjector {
  private readonly rng: () => number;
  private readonly queue: ScriptedFault[] = [];
  options: FaultOptions;

  constructor(options: FaultOptions, seed: number) {
    this.options = options;
    this.rng = createRng(seed ^ 0xfa017);
  }

  /** Queues faults for the next matching requests, in order. */
  script(...faults: (FaultKind | ScriptedFault)[]): void {
    for (const f of faults) this.queue.push(typeof f === 'string' ? { kind: f } : f);
  }

  /** Faults still queued. */
  get pending(): number {
    return this.queue.length;
  }

  /** Decides the fate of one API request. `hasCursor` enables cursor expiry. */
  decide(path: string, hasCursor: boolean): FaultDecision {
    const o = this.options;
    const r = () => this.rng();
    const delayMs = o.latencyMs + (o.latencyJitterMs > 0 ? Math.floor(r() * o.latencyJitterMs) : 0);
    // A scripted cursor expiry waits for a request that carries a cursor.
    const idx = this.queue.findIndex((f) => (!f.pathPrefix || path.startsWith(f.pathPrefix)) && (f.kind !== 'expireCursor' || hasCursor));
    if (idx >= 0) {
      const [scripted] = this.queue.splice(idx, 1);
      return { delayMs, kind: scripted!.kind };
    }
    const roll = r();
    let edge = 0;
    for (const [kind, rate] of [
      ['error500', o.errorRate],
      ['drop', o.dropRate],
      ['truncate', o.truncateRate],
      ['malformed', o.malformedRate],
    ] as const) {
      edge += rate;
      if (roll < edge) return { delayMs, kind };
    }
    if (hasCursor && o.cursorExpiryRate > 0 && r() < o.cursorExpiryRate) return { delayMs, kind: 'expireCursor' };
    return { delayMs, kind: null };
  }
}
