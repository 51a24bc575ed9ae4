/**
 * A lease that keeps runners on different machines apart when the warehouse or the lake is in a
 * bucket: an object per thing a run writes (the published warehouse, each source of the lake), created
 * with a conditional write (`If-None-Match: *`) naming the holder, renewed while the run lasts
 * (`If-Match` on the ETag it last wrote), deleted at the end. A lease not renewed within its TTL is
 * stale and is taken over by replacing it on its ETag, so of two runners that both find it stale only
 * one wins. A renewal refused means another runner took it over: the run must stop before it writes.
 */
import { hostname } from 'node:os';
import { CostsyncError, ExitCode } from '../errors.js';
import { isAlive } from './lock.js';

/** What the lease needs of a bucket (the S3 client satisfies it). */
export interface ConditionalStore {
  /** Writes `text` at `key` when the conditions hold; returns the new ETag, or null when they did not (412). */
  putIf(key: string, text: string, condition: { ifNoneMatch: '*' } | { ifMatch: string }): Promise<string | null>;
  getText(key: string): Promise<{ text: string; etag: string } | null>;
  delete(key: string): Promise<void>;
  /** For messages: where `key` is. */
  urlOf(key: string): string;
}

export interface LeaseHolder {
  host: string;
  pid: number;
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
}

/** Whether a lease last renewed at `renewedAt` is stale at `nowMs`. Pure. */
export function isStale(renewedAt: string, nowMs: number, ttlMs: number): boolean {
  const at = Date.parse(renewedAt);
  return !Number.isFinite(at) || nowMs - at > ttlMs;
}

/** How a holder is named in messages. Pure. */
export function describeHolder(h: LeaseHolder, nowMs: number): string {
  const ago = Math.max(0, Math.round((nowMs - Date.parse(h.renewedAt)) / 1000));
  return `run ${h.runId} on ${h.host} (pid ${h.pid}, started ${h.startedAt}, renewed ${ago} s ago)`;
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
    const holder: LeaseHolder = { host: hostname(), pid: process.pid, runId: options.runId, startedAt: now, renewedAt: now };
    const body = JSON.stringify(holder);
    const created = await store.putIf(key, body, { ifNoneMatch: '*' });
    if (created !== null) return new Lease(store, key, created, holder, options);
    const current = await store.getText(key);
    // Deleted between the two requests: try once more to create it.
    if (current === null) {
      const again = await store.putIf(key, body, { ifNoneMatch: '*' });
      if (again !== null) return new Lease(store, key, again, holder, options);
      throw held(store, key, null, options);
    }
    const other = parseHolder(current.text);
    // A holder on this machine whose process is gone (killed) is stale at once, as a local lock is.
    const gone = other !== null && other.host === holder.host && !isAlive(other.pid);
    if (other !== null && !gone && !isStale(other.renewedAt, options.now(), options.ttlMs)) throw held(store, key, other, options);
    const taken = await store.putIf(key, body, { ifMatch: current.etag });
    if (taken === null) throw held(store, key, parseHolder((await store.getText(key))?.text ?? ''), options);
    options.notice?.(`took over the stale lease ${store.urlOf(key)}${other ? ` of ${describeHolder(other, options.now())}` : ''} (${gone ? 'its process on this machine is gone' : 'not renewed within --lease-ttl'})`);
    return new Lease(store, key, taken, holder, options);
  }

  /** Renews the lease; when another runner has taken it over, remembers that (see `check`). */
  async renew(): Promise<void> {
    if (this.lost !== null) return;
    const holder = { ...this.holder, renewedAt: new Date(this.options.now()).toISOString() };
    const etag = await this.store.putIf(this.key, JSON.stringify(holder), { ifMatch: this.etag });
    if (etag === null) {
      const other = parseHolder((await this.store.getText(this.key))?.text ?? '');
      this.lost = other === null ? 'it was removed' : `it is now held by ${describeHolder(other, this.options.now())}`;
      return;
    }
    this.etag = etag;
  }

  /** Throws `CS_ERR_LEASE_LOST` (exit 5) when the lease was taken over: nothing may be written after that. */
  check(): void {
    if (this.lost !== null) {
      throw new CostsyncError('CS_ERR_LEASE_LOST', `This run lost its lease ${this.store.urlOf(this.key)}: ${this.lost} (this run did not renew it within --lease-ttl, for example while its machine was paused).`, {
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

function held(store: ConditionalStore, key: string, holder: LeaseHolder | null, options: LeaseOptions): CostsyncError {
  return new CostsyncError('CS_ERR_LEASE_HELD', `Another run holds ${store.urlOf(key)}${holder ? `: ${describeHolder(holder, options.now())}` : ''}.`, {
    exitCode: ExitCode.LOCKED,
    hint: `Wait for it to finish. A lease not renewed within --lease-ttl (${Math.round(options.ttlMs / 60_000)} min) is stale and the next run takes it over.`,
  });
}
