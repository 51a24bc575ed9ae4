import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/emulator/rng.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import {
  CLI,
  SPAN,
  backfillFlags,
  cli,
  killRunner,
  lakeDifferences,
  spanFlags,
  tableDigest,
  withEmulator,
  withTempDir,
} from '../support/helpers.js';
import { faultProxy, useRgw } from '../support/s3.js';
import { bucketSyncCommand, expectBucketExact, syncArgs } from '../support/lake-bucket.js';
import { sourcesConfig, workspaceKeys } from '../support/kill-loop.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const s3 = useRgw();

describe('the lake and the published warehouse in a bucket: long kill loops (slow tier)', () => {
  it('SIGKILLed at random points (while uploading partitions, between an upload and its outbox clear, while publishing), with faults between: a fault-free run leaves the bucket exact', async () => {
    await s3.createBucket('lake-c');
    const rng = createRng(20261124);
    let faulty = false;
    let onRequest = (_entry: { route: string }) => undefined as void;
    const proxy = await faultProxy(s3.endpoint, (req, n) => {
      onRequest({ route: `s3 ${req.method}` });
      return faulty && req.method === 'PUT' && n % 6 === 0 ? 'slowdown' : null;
    });
    try {
      await withEmulator({ ...SPAN, rowsPerDay: 100, clock, anomaliesPerDay: 3 }, async ({ url }) => {
        await withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env(proxy.endpoint) };
          // Counts the bucket's requests: each kill lands at a random one of them.
          const runner = killRunner(env);
          onRequest = runner.onRequest;
          let killed = 0;
          for (let i = 0; i < 6; i++) {
            faulty = i % 2 === 1;
            const child = await runner.run([CLI, ...syncArgs(url, dir, 'lake-c', ['--publish-interval', '0'])], {
              atRequest: 3 + Math.floor(rng() * 60),
            });
            if (child.signal === 'SIGKILL') killed += 1;
          }
          expect(killed).toBeGreaterThan(2);
          faulty = false;
          const last = await cli(syncArgs(url, dir, 'lake-c'), env);
          expect(last.code, last.stderr).toBe(0);
          await expectBucketExact(s3, 'lake-c', dir, 'check');
        });
      });
    } finally {
      await proxy.close();
    }
  }, 180_000);

  it("two shards with disjoint sources write one prefix at once, one killed and restarted: each source exact, neither touches the other's objects", async () => {
    await s3.createBucket('lake-d');
    const emulator = { ...SPAN, rowsPerDay: 60, clock, anomaliesPerDay: 2, keys: workspaceKeys(['eu', 'us', 'apac']) };
    // One proxy per shard, so each shard's requests are its own.
    const proxies = [await faultProxy(s3.endpoint), await faultProxy(s3.endpoint)];
    let onRequest = (_entry: { route: string }) => undefined as void;
    proxies[1]!.setPolicy(() => {
      onRequest({ route: 's3' });
      return null;
    });
    try {
      await withEmulator(emulator, async ({ url }) => {
        await withTempDir(async (dir) => {
          const { config, env: keys } = sourcesConfig(dir, url, ['eu', 'us', 'apac']);
          const shard = (n: number, sources: string) => [
            'sync',
            '--config',
            config,
            '--source',
            sources,
            '--db',
            `s3://lake-d/wh/shard-${n}.duckdb`,
            '--state-dir',
            join(dir, `state-${n}`),
            '--format',
            'parquet',
            '--out',
            's3://lake-d/costs',
            ...spanFlags(10, { rateLimit: false }),
            '--publish-interval',
            '0',
            '--log-format',
            'json',
          ];
          const runner = killRunner({ ...keys, ...s3.env(proxies[1]!.endpoint) });
          onRequest = runner.onRequest;
          const [first, killed] = await Promise.all([
            cli(shard(0, 'eu,us'), { ...keys, ...s3.env(proxies[0]!.endpoint) }),
            runner.run([CLI, ...shard(1, 'apac')], { atRequest: 25 }),
          ]);
          expect(first.code, first.stderr).toBe(0);
          expect(killed.signal).toBe('SIGKILL');
          const again = await runner.run([CLI, ...shard(1, 'apac')]);
          expect(again.code, again.stderr).toBe(0);

          await s3.download('lake-d', 'costs/', join(dir, 'lake'));
          for (const [n, sources] of [
            [0, ['eu', 'us']],
            [1, ['apac']],
          ] as const) {
            const work = workingCopyPath(join(dir, `state-${n}`), `s3://lake-d/wh/shard-${n}.duckdb`);
            for (const [table, diff] of Object.entries(await lakeDifferences(work, join(dir, 'lake'), sources))) {
              expect({ shard: n, table, ...diff }).toEqual({ shard: n, table, rows: diff.rows, missing: 0, extra: 0 });
            }
            // Every object this shard wrote or deleted is its own sources', its probe or its warehouse.
            const own = new RegExp(
              `^/lake-d/(costs/([a-z0-9_]+/source=(${sources.join('|')})/|_costsync_(manifest|lease|state)\\.(${sources.join('|')})\\.json|_costsync_check-)|wh/shard-${n}\\.duckdb)`,
            );
            const writes = proxies[n]!.log.filter((r) => ['PUT', 'POST', 'DELETE'].includes(r.method) && r.path !== '/lake-d/');
            expect(writes.length).toBeGreaterThan(0);
            expect(writes.filter((r) => !own.test(r.path)).map((r) => `${r.method} ${r.path}`)).toEqual([]);
          }
          const manifests = (await s3.keys('lake-d', 'costs/_costsync_manifest')).map((k) => k.slice('costs/'.length));
          expect(manifests).toEqual(['_costsync_manifest.apac.json', '_costsync_manifest.eu.json', '_costsync_manifest.us.json']);
          expect(await s3.keys('lake-d', 'costs/sync_runs/')).toEqual(
            ['apac', 'eu', 'us'].map((s) => `costs/sync_runs/source=${s}/data.parquet`),
          );
          expect(await s3.incompleteUploads('lake-d')).toEqual([]);
        });
      });
    } finally {
      for (const p of proxies) await p.close();
    }
  });

  it("SIGKILLed while uploading the warehouse's parts (multipart): the next run aborts the incomplete upload, and the object is the working copy's data", async () => {
    await s3.createBucket('lake-f');
    const rng = createRng(7);
    let onRequest = (_entry: { route: string }) => undefined as void;
    const proxy = await faultProxy(s3.endpoint, (req) => {
      onRequest({ route: req.query.includes('partNumber=') ? 's3 part' : `s3 ${req.method}` });
      return null;
    });
    try {
      // About 6 MB of warehouse: two parts of at least 5 MiB (S3's smallest).
      await withEmulator({ ...SPAN, rowsPerDay: 3000, clock }, async ({ url }) => {
        await withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', COSTSYNC_S3_PART_SIZE: String(5 * 2 ** 20), ...s3.env(proxy.endpoint) };
          const args = [CLI, ...bucketSyncCommand(url, 'lake-f', join(dir, 'state'), ['--streams', 'line_items', ...backfillFlags()])];
          const runner = killRunner(env, (e) => e.route === 's3 part');
          onRequest = runner.onRequest;
          let killed = 0;
          for (let i = 0; i < 3; i++) {
            const result = await runner.run(args, { atRequest: 1 + Math.floor(rng() * 2) });
            if (result.signal !== 'SIGKILL') {
              expect(result.code, result.stderr).toBe(0);
              continue;
            }
            killed += 1;
            // Each run aborts what the last one left, then leaves its own.
            expect(await s3.incompleteUploads('lake-f')).toEqual(['wh/costs.duckdb']);
          }
          expect(killed).toBeGreaterThan(0);
          const last = await runner.run(args);
          expect(last.code, last.stderr).toBe(0);
          expect(await s3.incompleteUploads('lake-f')).toEqual([]);
          expect(proxy.log.some((r) => r.query.includes('partNumber=2'))).toBe(true);
          await s3.download('lake-f', 'wh/', join(dir, 'published'));
          expect(await tableDigest(join(dir, 'published', 'costs.duckdb'))).toEqual(
            await tableDigest(workingCopyPath(join(dir, 'state'), 's3://lake-f/wh/costs.duckdb')),
          );
        });
      });
    } finally {
      await proxy.close();
    }
  });
});
