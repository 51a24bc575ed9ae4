/**
 * Conditional writes whose first try was applied and whose answer was lost: the SDK sends the write
 * again, the retry meets the object the first try made and is refused (412). Each conditional write
 * costsync makes in a bucket (the probe, leases, an Iceberg table's metadata create, the published
 * warehouse) is settled by reading back, through a proxy in front of radosgw that applies a write and
 * resets the connection instead of answering.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/api/resilience.js';
import { currentSnapshot, SUMMARY } from '../../src/iceberg/metadata.js';
import type { IcebergCatalog } from '../../src/iceberg/catalog.js';
import { directoryCatalog, loadTable } from '../../src/iceberg/table.js';
import { Bucket, conditionalWritesIgnored, createS3Client } from '../../src/outputs/s3.js';
import { bucketTarget, directoryTarget, type OutputTarget } from '../../src/outputs/target.js';
import { selfIdentity, type ProcessProbe } from '../../src/state/holder.js';
import { Lease } from '../../src/state/lease.js';
import { withTempDir } from '../support/helpers.js';
import { icebergFileCheck, placeholderCommit } from '../support/iceberg.js';
import { lostAnswerProxy, useRgw } from '../support/s3.js';

const s3 = useRgw();
const clock: Clock = { now: () => Date.now(), sleep: async () => undefined };

/** A bucket through a proxy that loses the answer of the conditional writes `lose` picks (counted from 1). */
async function withLossyBucket<T>(
  name: string,
  lose: (n: number) => boolean,
  fn: (bucket: Bucket, lost: () => number) => Promise<T>,
): Promise<T> {
  const proxy = await lostAnswerProxy(s3.endpoint);
  proxy.lose(lose);
  const env = s3.env(proxy.endpoint);
  const client = createS3Client(env, {
    region: env.AWS_REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
  });
  try {
    return await fn(new Bucket(client, name), () => proxy.counts().lost);
  } finally {
    client.destroy();
    await proxy.close();
  }
}

describe('a conditional write applied, its answer lost', () => {
  it('the conditional-write probe: each of its three writes lost in turn, a server that honours the conditions is never blamed', async () => {
    await s3.createBucket('lost-probe');
    for (const nth of [1, 2, 3]) {
      await withLossyBucket(
        'lost-probe',
        (n) => n === nth,
        async (bucket, lost) => {
          expect({ nth, ignored: await conditionalWritesIgnored(bucket, `probe-${nth}`) }).toEqual({ nth, ignored: null });
          expect(lost()).toBe(1);
        },
      );
    }
    expect(await s3.keys('lost-probe')).toEqual([]);
  });

  it("a refusal that is not this write: another writer's object stays a refusal, and is not overwritten", async () => {
    await s3.createBucket('lost-other');
    await withLossyBucket(
      'lost-other',
      () => false,
      async (bucket) => {
        expect(await bucket.putIf('k', 'theirs', { ifNoneMatch: '*' })).not.toBeNull();
        expect(await bucket.putIf('k', 'mine', { ifNoneMatch: '*' })).toBeNull();
        expect(await bucket.putIf('k', 'mine', { ifMatch: '"0123"' })).toBeNull();
        expect((await bucket.getText('k'))?.text).toBe('theirs');
      },
    );
  });

  it('a lease taken, renewed and taken over with each answer lost: held each time, with the ETag the bucket has', async () => {
    await s3.createBucket('lost-lease');
    let now = Date.parse('2025-07-01T06:00:00Z');
    const options = (runId: string) => ({ ttlMs: 60_000, now: () => now, runId });
    await withLossyBucket(
      'lost-lease',
      (n) => n % 2 === 1,
      async (bucket, lost) => {
        const lease = await Lease.acquire(bucket, 'a.lease', options('run-1'));
        expect(lost()).toBe(1);
        now += 1000;
        await lease.renew();
        expect(lost()).toBe(2);
        expect(() => lease.check()).not.toThrow();
        now += 1000;
        // The renewal's ETag is the bucket's: the next renewal's If-Match meets it.
        await lease.renew();
        expect(lost()).toBe(3);
        expect(() => lease.check()).not.toThrow();
        expect(JSON.parse((await bucket.getText('a.lease'))!.text)).toMatchObject({ runId: 'run-1' });
        await lease.release();
        // A lease whose holder's process on this machine is gone, taken over with the answer lost.
        const gone: ProcessProbe = { isAlive: () => false, startTicks: () => null };
        const holder = { ...selfIdentity(), runId: 'old', startedAt: '2025-07-01T05:00:00Z', renewedAt: '2025-07-01T05:00:00Z' };
        await bucket.putText('b.lease', JSON.stringify(holder));
        const before = lost();
        const taken = await Lease.acquire(bucket, 'b.lease', { ...options('run-2'), probe: gone });
        expect(lost()).toBe(before + 2);
        expect(JSON.parse((await bucket.getText('b.lease'))!.text)).toMatchObject({ runId: 'run-2' });
        await taken.release();
      },
    );
    expect(await s3.keys('lost-lease')).toEqual([]);
  });

  it("an Iceberg table's metadata create lost, at the table's first commit and a later one: committed once each, every file a snapshot names in place", async () => {
    await s3.createBucket('lost-ice');
    await withTempDir(async (dir) => {
      await withLossyBucket(
        'lost-ice',
        (n) => n % 2 === 1,
        async (bucket, lost) => {
          const target = bucketTarget('s3://lost-ice/lake', join(dir, 'scratch'), bucket);
          for (const n of [1, 2, 3]) {
            const result = await placeholderCommit(target, 't', 'a', n, clock);
            expect(result).toMatchObject({ attempts: 1, metadataLocation: `s3://lost-ice/lake/t/metadata/v${n}.metadata.json` });
          }
          expect(lost()).toBe(3);
          const { version, metadata } = await loadTable(target, 't');
          expect(version).toBe(3);
          expect(metadata!.snapshots.map((s) => s.summary[SUMMARY.commitId])).toEqual(['a.1', 'a.2', 'a.3']);
          expect(currentSnapshot(metadata!)!['sequence-number']).toBe(3);
        },
      );
      await s3.download('lost-ice', 'lake/', join(dir, 'lake'));
      expect((await icebergFileCheck(join(dir, 'lake'), 's3://lost-ice/lake', ['t'])).missing).toEqual([]);
    });
  });

  it('a directory table whose create reports a lost race for a version this commit made: settled as committed, nothing it wrote removed', async () => {
    await withTempDir(async (dir) => {
      const inner = directoryTarget(join(dir, 'lake'));
      // What a bucket did before reads settled it: the create applied, then reported as taken.
      const lossy: OutputTarget = { ...inner, createText: async (key, text) => (await inner.createText(key, text)) && false };
      for (const n of [1, 2]) expect(await placeholderCommit(lossy, 't', 'a', n, clock)).toMatchObject({ attempts: 1 });
      const { version, metadata } = await loadTable(inner, 't');
      expect(version).toBe(2);
      expect(metadata!.snapshots).toHaveLength(2);
      expect((await icebergFileCheck(join(dir, 'lake'), inner.location(''), ['t'])).missing).toEqual([]);
    });
  });

  it('a catalog that answers a commit it applied as a conflict: settled by reading the table back, not committed twice, nothing it wrote removed', async () => {
    await withTempDir(async (dir) => {
      const target = directoryTarget(join(dir, 'lake'));
      const inner = directoryCatalog(target);
      const catalog: IcebergCatalog = {
        ...inner,
        commit: async (commit, initial) => {
          const outcome = await inner.commit(commit, initial);
          return outcome.kind === 'committed' ? { kind: 'conflict', message: 'the answer was lost' } : outcome;
        },
      };
      for (const n of [1, 2]) expect(await placeholderCommit(target, 't', 'a', n, clock, { catalog })).toMatchObject({ attempts: 1 });
      const { metadata } = await loadTable(target, 't');
      expect(metadata!.snapshots.map((s) => s.summary[SUMMARY.commitId])).toEqual(['a.1', 'a.2']);
      expect((await icebergFileCheck(join(dir, 'lake'), target.location(''), ['t'])).missing).toEqual([]);
    });
  });

  it('the published warehouse uploaded with If-None-Match, then If-Match, each answer lost: the upload is this one, with the ETag the bucket has', async () => {
    await s3.createBucket('lost-wh');
    await withTempDir(async (dir) => {
      const file = join(dir, 'costs.duckdb');
      await withLossyBucket(
        'lost-wh',
        (n) => n % 2 === 1,
        async (bucket, lost) => {
          writeFileSync(file, 'first');
          const first = await bucket.putFile('wh/costs.duckdb', file, { ifNoneMatch: '*' });
          expect(first).toBe((await bucket.head('wh/costs.duckdb'))!.etag);
          writeFileSync(file, 'second');
          const second = await bucket.putFile('wh/costs.duckdb', file, { ifMatch: first.replace(/"/g, '') });
          expect(second).toBe((await bucket.head('wh/costs.duckdb'))!.etag);
          expect(second).not.toBe(first);
          expect(lost()).toBe(2);
          expect((await bucket.getText('wh/costs.duckdb'))!.text).toBe('second');
          // Another writer's upload meanwhile is still refused.
          writeFileSync(file, 'third');
          await expect(bucket.putFile('wh/costs.duckdb', file, { ifMatch: first.replace(/"/g, '') })).rejects.toMatchObject({
            code: 'CS_ERR_S3_PRECONDITION',
          });
        },
      );
    });
  });
});
