import { describe, expect, it } from 'vitest';
import { FencedError } from '../../src/errors.js';
import { selfIdentity, type ProcessProbe } from '../../src/state/holder.js';
import { Lease, leaseAgeMs, type ConditionalStore } from '../../src/state/lease.js';

/** A bucket in memory: ETags, conditional writes, and an age per object on its own clock. */
function memoryStore(clock: { ms: number }) {
  const objects = new Map<string, { text: string; etag: string; writtenMs: number }>();
  let n = 0;
  const store: ConditionalStore & { objects: typeof objects; dates: boolean } = {
    objects,
    dates: true,
    async putIf(key, text, condition) {
      const current = objects.get(key);
      if ('ifNoneMatch' in condition ? current !== undefined : current?.etag !== condition.ifMatch) return null;
      const etag = `e${++n}`;
      objects.set(key, { text, etag, writtenMs: clock.ms });
      return etag;
    },
    async getText(key) {
      const o = objects.get(key);
      return o === undefined ? null : { text: o.text, etag: o.etag, ageMs: store.dates ? clock.ms - o.writtenMs : null };
    },
    async delete(key) {
      objects.delete(key);
    },
    urlOf: (key) => `s3://b/${key}`,
  };
  return store;
}

const alive: ProcessProbe = { isAlive: () => true, startTicks: () => null };
const dead: ProcessProbe = { isAlive: () => false, startTicks: () => null };

describe('Lease over a ConditionalStore (no I/O)', () => {
  it('one holder at a time; a fresh lease is refused naming its holder and the TTL as written', async () => {
    const bucket = { ms: 0 };
    const store = memoryStore(bucket);
    const first = await Lease.acquire(store, 'k', { ttlMs: 8_000, now: () => 0, runId: 'run-a' });
    await expect(Lease.acquire(store, 'k', { ttlMs: 8_000, now: () => 0, runId: 'run-b', probe: alive })).rejects.toMatchObject({
      code: 'CS_ERR_LEASE_HELD',
      message: expect.stringContaining('run run-a'),
      hint: expect.stringContaining("(8 s, by the bucket's clock)"),
    });
    await first.release();
    expect(store.objects.size).toBe(0);
  });

  it("staleness is the bucket's: a lease written long ago by the bucket's clock is taken over, whatever the holder wrote as renewedAt", async () => {
    const bucket = { ms: 0 };
    const store = memoryStore(bucket);
    // The holder's clock runs an hour ahead: its renewedAt says "just now" for a long time.
    await Lease.acquire(store, 'k', { ttlMs: 8_000, now: () => 3_600_000, runId: 'run-a' });
    bucket.ms = 9_000;
    const notices: string[] = [];
    const taker = await Lease.acquire(store, 'k', {
      ttlMs: 8_000,
      now: () => 9_000,
      runId: 'run-b',
      probe: alive,
      notice: (m) => notices.push(m),
    });
    expect(notices[0]).toMatch(/took over the stale lease s3:\/\/b\/k of run run-a .*renewed 9 s ago.*by the bucket's clock/);
    await taker.release();
  });

  it('a holder on this machine, boot and PID namespace whose process is gone is taken at once', async () => {
    const store = memoryStore({ ms: 0 });
    await Lease.acquire(store, 'k', { ttlMs: 600_000, now: () => 0, runId: 'run-a' });
    const notices: string[] = [];
    await Lease.acquire(store, 'k', { ttlMs: 600_000, now: () => 0, runId: 'run-b', probe: dead, notice: (m) => notices.push(m) });
    expect(notices[0]).toMatch(/its process on this machine is gone/);
  });

  it('a renewal refused means the lease was taken over: check() fences the run off', async () => {
    const bucket = { ms: 0 };
    const store = memoryStore(bucket);
    const lease = await Lease.acquire(store, 'k', { ttlMs: 8_000, now: () => 0, runId: 'run-a' });
    bucket.ms = 60_000;
    await Lease.acquire(store, 'k', { ttlMs: 8_000, now: () => 60_000, runId: 'run-b', probe: alive });
    await lease.renew();
    expect(() => lease.check()).toThrow(FencedError);
    // Its release leaves the other run's lease in place.
    await lease.release();
    expect(JSON.parse(store.objects.get('k')!.text).runId).toBe('run-b');
  });

  it("writes who holds it (host, boot, namespace, pid, start time); without the store's dates, ages by renewedAt on the taker's clock", async () => {
    const store = memoryStore({ ms: 0 });
    await Lease.acquire(store, 'k', { ttlMs: 8_000, now: () => 0, runId: 'run-a' });
    const { runId, renewedAt, startedAt, ...identity } = JSON.parse(store.objects.get('k')!.text) as Record<string, unknown>;
    expect({ runId, renewedAt, startedAt }).toEqual({
      runId: 'run-a',
      renewedAt: '1970-01-01T00:00:00.000Z',
      startedAt: '1970-01-01T00:00:00.000Z',
    });
    expect(identity).toEqual(selfIdentity());
    expect(leaseAgeMs({ renewedAt: '1970-01-01T00:00:00.000Z' }, null, 5_000)).toBe(5_000);
    expect(leaseAgeMs({ renewedAt: '1970-01-01T00:00:00.000Z' }, 1_000, 5_000)).toBe(1_000);
    store.dates = false;
    await expect(Lease.acquire(store, 'k', { ttlMs: 8_000, now: () => 5_000, runId: 'run-b', probe: alive })).rejects.toMatchObject({
      code: 'CS_ERR_LEASE_HELD',
    });
    await Lease.acquire(store, 'k', { ttlMs: 8_000, now: () => 9_000, runId: 'run-b', probe: alive });
  });
});
