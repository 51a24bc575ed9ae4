/**
 * A lease that keeps runners on different machines apart when the warehouse or the lake is in a
 * bucket: an object per thing a run writes (the published warehouse, each source of the lake), created
 * with a conditional write (`If-None-Match: *`) naming the holder, renewed while the run lasts
 * (`If-Match` on the ETag it last wrote), deleted at the end. A lease not renewed within its TTL is
 * stale and is taken over by replacing it on its ETag, so of two runners that both find it stale only
 * one wins. Staleness is judged on one clock, the bucket's: the lease object's age is the response's
 * `Date` less its `Last-Modified`, so a holder whose clock runs behind keeps its lease. A renewal
 * refused means another runner took it over: the run must stop before it writes.
 */
import { formatDuration } from '../dates.js';
import { CostsyncError, ExitCode, FencedError } from '../errors.js';
import { liveness, selfIdentity, systemProbe, type ProcessIdentity, type ProcessProbe } from './holder.js';

/** What the lease needs of a bucket (the S3 client satisfies it). */
export interface ConditionalStore {
  /** Writes `text` at `key` when the conditions hold; returns the new ETag, or null when they did not (412). */
  putIf(key: string, text: string, condition: { ifNoneMatch: '*' } | { ifMatch: string }): Promise<string | null>;
  /** The object, and its age on the store's own clock (null when the store cannot tell). */
  getText(key: string): Promise<{ text: string; etag: string; ageMs: number | null } | null>;
  delete(key: string): Promise<void>;
  /** For messages: where `key` is. */
  urlOf(key: string): string;
}

/** A lease's content: the holder's process (see `holder.ts`; the previous version wrote host and pid only) and run. */
export interface LeaseHolder extends ProcessIdentity {
  runId: string;
  startedAt: string;
  renewedAt: string;
}

export interface LeaseOptions {
  ttlMs: number;
  now: () => number;
  runId: string;
  /** Called when a stale lease was taken over, naming its holder. */
  notice?: (message: string) => void;
  /** Processes on this machine, for a holder that is one of them; injected in tests. */
  probe?: ProcessProbe;
}

/**
 * How long ago a lease was last written: its age on the store's clock when the store knows it (one
 * clock, whatever the holder's and the taker's say); else, for a store that sends no date, the
 * holder's `renewedAt` against the taker's clock (which assumes the two agree within the TTL). Pure.
 */
export function leaseAgeMs(holder: Pick<LeaseHolder, 'renewedAt'>, storeAgeMs: number | null, nowMs: number): number {
  if (storeAgeMs !== null) return storeAgeMs;
  const at = Date.parse(holder.renewedAt);
  return Number.isFinite(at) ? nowMs - at : Infinity;
}

/** Whether a lease written `ageMs` ago is stale. Pure. */
export function isStale(ageMs: number, ttlMs: number): boolean {
  return ageMs > ttlMs;
}

/** How a holder is named in messages. Pure. */
export function describeHolder(h: LeaseHolder, ageMs: number): string {
  const ago = Number.isFinite(ageMs) ? `${formatDuration(Math.max(0, ageMs))} ago` : 'at an unknown time';
  return `run ${h.runId} on ${h.host} (pid ${h.pid}, started ${h.startedAt}, renewed ${ago})`;
}

/** One held lease. */
export class Lease {
  private lost: string | null = null;

  private constructor(private readonly store: ConditionalStore, readonly key: string, private etag: string, private readonly holder: LeaseHolder, private readonly options: LeaseOptions) {}

  /**
   * Takes the lease at `key`, or throws `CS_ERR_LEASE_HELD` (exit 5) naming the holder. A stale lease
   * is taken over conditionally on its ETag.
   */
  static async acquire(store: ConditionalStore, key: string, options: LeaseOptions): Promise<Lease> {
    const now = new Date(options.now()).toISOString();
    const self = selfIdentity();
    const holder: LeaseHolder = { ...self, runId: options.runId, startedAt: now, renewedAt: now };
    const body = JSON.stringify(holder);
    const created = await store.putIf(key, body, { ifNoneMatch: '*' });
    if (created !== null) return new Lease(store, key, created, holder, options);
    const current = await store.getText(key);
    // Deleted between the two requests: try once more to create it.
    if (current === null) {
      const again = await store.putIf(key, body, { ifNoneMatch: '*' });
      if (again !== null) return new Lease(store, key, again, holder, options);
      throw held(store, key, null, 0, options);
    }
    const other = parseHolder(current.text);
    const age = other === null ? Infinity : leaseAgeMs(other, current.ageMs, options.now());
    // A holder on this machine, boot and PID namespace whose process is gone (killed) is stale at once,
    // as a local lock is; any other holder (another machine, container or boot, or no /proc) waits for the TTL.
    const gone = other !== null && liveness(other, self, options.probe ?? systemProbe, { legacy: false }) === 'gone';
    if (other !== null && !gone && !isStale(age, options.ttlMs)) throw held(store, key, other, age, options);
    const taken = await store.putIf(key, body, { ifMatch: current.etag });
    if (taken === null) {
      const now2 = await store.getText(key);
      const winner = parseHolder(now2?.text ?? '');
      throw held(store, key, winner, winner === null ? 0 : leaseAgeMs(winner, now2?.ageMs ?? null, options.now()), options);
    }
    options.notice?.(`took over the stale lease ${store.urlOf(key)}${other ? ` of ${describeHolder(other, age)}` : ''} (${gone ? 'its process on this machine is gone' : `not renewed within --lease-ttl (${formatDuration(options.ttlMs)}), by the bucket's clock`})`);
    return new Lease(store, key, taken, holder, options);
  }

  /** Renews the lease; when another runner has taken it over, remembers that (see `check`). */
  async renew(): Promise<void> {
    if (this.lost !== null) return;
    const holder = { ...this.holder, renewedAt: new Date(this.options.now()).toISOString() };
    const etag = await this.store.putIf(this.key, JSON.stringify(holder), { ifMatch: this.etag });
    if (etag === null) {
      const current = await this.store.getText(this.key);
      const other = parseHolder(current?.text ?? '');
      this.lost = other === null ? 'it was removed' : `it is now held by ${describeHolder(other, leaseAgeMs(other, current?.ageMs ?? null, this.options.now()))}`;
      return;
    }
    this.etag = etag;
  }

  /** Throws `CS_ERR_LEASE_LOST` (exit 5) when the lease was taken over: nothing may be written after that. */
  check(): void {
    if (this.lost !== null) {
      throw new FencedError('CS_ERR_LEASE_LOST', `This run lost its lease ${this.store.urlOf(this.key)}: ${this.lost} (this run did not renew it within --lease-ttl of ${formatDuration(this.options.ttlMs)}, for example while its machine was paused).`, {
        exitCode: ExitCode.LOCKED,
        hint: 'Nothing was overwritten. What this run committed is in the working copy in --state-dir (lost only if the container is); run again once the other run has finished.',
      });
    }
  }

  /** Deletes the lease if it is still this run's. */
  async release(): Promise<void> {
    if (this.lost !== null) return;
    const current = await this.store.getText(this.key);
    if (current !== null && parseHolder(current.text)?.runId === this.holder.runId) await this.store.delete(this.key);
  }
}

function parseHolder(text: string): LeaseHolder | null {
  try {
    const h = JSON.parse(text) as LeaseHolder;
    return typeof h.runId === 'string' && typeof h.renewedAt === 'string' ? h : null;
  } catch {
    return null;
  }
}

function held(store: ConditionalStore, key: string, holder: LeaseHolder | null, ageMs: number, options: LeaseOptions): CostsyncError {
  return new CostsyncError('CS_ERR_LEASE_HELD', `Another run holds ${store.urlOf(key)}${holder ? `: ${describeHolder(holder, ageMs)}` : ''}.`, {
    exitCode: ExitCode.LOCKED,
    hint: `Wait for it to finish. A lease not renewed within --lease-ttl (${formatDuration(options.ttlMs)}, by the bucket's clock) is stale and the next run takes it over.`,
  });
}
