import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRng } from '../../src/emulator/rng.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { SCOPES } from '../../src/api/types.js';
import { CLI, SPAN, cli, killRunner, lakeDifferences, tableDigest, withEmulator, withTempDir } from '../helpers.js';
import { faultProxy, startRgw, type S3Server } from '../s3.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const OBJECT = /^((line_items|focus|rollups_daily|anomalies|anomaly_status_history)\/source=default\/date=\d{4}-\d{2}-\d{2}\/data\.parquet|(sync_runs|sync_run_streams)\/source=default\/data\.parquet|_costsync_manifest\.default\.json)$/;

let s3: S3Server;
beforeAll(() => {
  s3 = startRgw();
});
afterAll(() => s3?.stop());

function syncArgs(url: string, dir: string, bucket: string, more: string[] = []): string[] {
  return [
    'sync', '--base-url', url, '--db', `s3://${bucket}/wh/costs.duckdb`, '--state-dir', join(dir, 'state'), '--format', 'parquet',
    '--out', `s3://${bucket}/costs`, '--start-date', SPAN.startDate, '--until', SPAN.endDate, '--window-days', '10',
    '--rate-limit', '100000', '--log-format', 'json', ...more,
  ];
}

/** The lake under `costs/` and the published warehouse, downloaded, against the working copy. */
async function expectBucketExact(bucket: string, dir: string, sub: string): Promise<void> {
  const keys = await s3.download(bucket, 'costs/', join(dir, sub, 'lake'));
  expect(keys.filter((k) => !OBJECT.test(k))).toEqual([]);
  const work = workingCopyPath(join(dir, 'state'), `s3://${bucket}/wh/costs.duckdb`);
  for (const [table, diff] of Object.entries(await lakeDifferences(work, join(dir, sub, 'lake')))) {
    expect({ table, ...diff }).toEqual({ table, rows: diff.rows, missing: 0, extra: 0 });
    expect(diff.rows).toBeGreaterThan(0);
  }
  expect(await s3.incompleteUploads(bucket)).toEqual([]);
  await s3.download(bucket, 'wh/', join(dir, sub, 'published'));
  expect(await tableDigest(join(dir, sub, 'published', 'costs.duckdb'))).toEqual(await tableDigest(work));
}

describe('the lake and the published warehouse in a bucket', () => {
  it('through 503 SlowDown and connection resets: every object a partition, run table or manifest, the lake equals the tables, the published object equals the working copy; query reads it, downloading it once', async () => {
    await s3.createBucket('lake-a');
    let faults = 0;
    const proxy = await faultProxy(s3.endpoint, (req, n) => {
      if (req.method !== 'PUT' && req.method !== 'POST') return null;
      const fault = n % 5 === 0 ? 'slowdown' : n % 7 === 0 ? 'reset' : null;
      if (fault) faults += 1;
      return fault;
    });
    try {
      await withEmulator({ ...SPAN, rowsPerDay: 100, clock, anomaliesPerDay: 3 }, async ({ url }) => {
        await withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', COSTSYNC_CACHE_DIR: join(dir, 'cache'), ...s3.env(proxy.endpoint) };
          const run = await cli(syncArgs(url, dir, 'lake-a'), env);
          expect(run.code, run.stderr).toBe(0);
          expect(faults).toBeGreaterThan(3);
          expect(run.stderr).not.toContain(s3.env().AWS_SECRET_ACCESS_KEY);
          await expectBucketExact('lake-a', dir, 'check');

          proxy.setPolicy(() => null);
          const gets = () => proxy.log.filter((r) => r.method === 'GET' && r.path === '/lake-a/wh/costs.duckdb').length;
          const before = gets();
          const query = ['query', 'SELECT count(*) AS n FROM line_items', '--db', 's3://lake-a/wh/costs.duckdb', '--format', 'csv'];
          const first = await cli(query, env);
          expect(first.code, first.stderr).toBe(0);
          expect(first.stdout).toBe(`n\n${30 * 100}\n`);
          expect(gets()).toBe(before + 1);
          const second = await cli(query, env);
          expect(second.stdout).toBe(first.stdout);
          expect(gets()).toBe(before + 1);
        });
      });
    } finally {
      await proxy.close();
    }
  }, 120_000);

  it('a bucket that refuses every write for one run: exit 1 naming the lake and the published warehouse, the metrics show what is pending, the next run catches up', async () => {
    await s3.createBucket('lake-b');
    // The start check's probe and the lease pass; every write of data is refused.
    const deny = (req: { method: string; path: string }) => (req.method !== 'GET' && req.method !== 'HEAD' && !/_costsync_check|\.lease|_costsync_lease/.test(req.path) ? 'deny' as const : null);
    const proxy = await faultProxy(s3.endpoint, deny);
    try {
      await withEmulator({ ...SPAN, rowsPerDay: 50, clock }, async ({ url }) => {
        await withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env(proxy.endpoint) };
          const metrics = join(dir, 'costsync.prom');
          const refused = await cli(syncArgs(url, dir, 'lake-b', ['--metrics-file', metrics]), env);
          expect(refused.code, refused.stderr).toBe(1);
          expect(refused.stderr).toContain('CS_ERR_OUTPUT_BEHIND');
          expect(refused.stderr).toContain('s3://lake-b/costs/');
          expect(refused.stderr).toContain('s3://lake-b/wh/costs.duckdb');
          expect(refused.stderr).toContain('s3:PutObject');
          expect(refused.stderr).toContain('safe in the working copy');
          const pending = (output: string) => Number(new RegExp(`costsync_outbox_pending\\{output="${output}"\\} (\\d+)`).exec(readFileSync(metrics, 'utf8'))?.[1]);
          expect(pending('lake')).toBeGreaterThan(30);
          expect(pending('publish')).toBeGreaterThan(0);
          expect(await s3.keys('lake-b', 'costs/')).toEqual([]);

          proxy.setPolicy(() => null);
          const next = await cli(syncArgs(url, dir, 'lake-b', ['--metrics-file', metrics]), env);
          expect(next.code, next.stderr).toBe(0);
          expect(pending('lake')).toBe(0);
          expect(pending('publish')).toBe(0);
          await expectBucketExact('lake-b', dir, 'check');
        });
      });
    } finally {
      await proxy.close();
    }
  }, 120_000);

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
            const child = await runner.run([CLI, ...syncArgs(url, dir, 'lake-c', ['--publish-interval', '0'])], { atRequest: 3 + Math.floor(rng() * 60) });
            if (child.signal === 'SIGKILL') killed += 1;
          }
          expect(killed).toBeGreaterThan(2);
          faulty = false;
          const last = await cli(syncArgs(url, dir, 'lake-c'), env);
          expect(last.code, last.stderr).toBe(0);
          await expectBucketExact('lake-c', dir, 'check');
        });
      });
    } finally {
      await proxy.close();
    }
  }, 180_000);

  it('SIGKILLed while uploading the warehouse\'s parts (multipart): the next run aborts the incomplete upload, and the object is the working copy\'s data', async () => {
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
          const args = [CLI, 'sync', '--base-url', url, '--db', 's3://lake-f/wh/costs.duckdb', '--state-dir', join(dir, 'state'), '--streams', 'line_items',
            '--start-date', SPAN.startDate, '--until', SPAN.endDate, '--rate-limit', '100000', '--log-format', 'json'];
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
          expect(await tableDigest(join(dir, 'published', 'costs.duckdb'))).toEqual(await tableDigest(workingCopyPath(join(dir, 'state'), 's3://lake-f/wh/costs.duckdb')));
        });
      });
    } finally {
      await proxy.close();
    }
  }, 120_000);

  it('two shards with disjoint sources write one prefix at once, one killed and restarted: each source exact, neither touches the other\'s objects', async () => {
    await s3.createBucket('lake-d');
    const key = (k: string, workspace: string) => ({ key: k, scopes: [...SCOPES], plan: 'business' as const, workspace });
    const emulator = { ...SPAN, rowsPerDay: 60, clock, anomaliesPerDay: 2, keys: { keys: [key('k-eu', 'eu'), key('k-us', 'us'), key('k-apac', 'apac')], connections: [] } };
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
          const config = join(dir, 'costsync.config.json');
          writeFileSync(config, JSON.stringify({
            'rate-limit': 100000,
            sources: ['eu', 'us', 'apac'].map((w) => ({ name: w, 'base-url': url, 'api-key-env': `KEY_${w.toUpperCase()}` })),
          }));
          const keys = { KEY_EU: 'k-eu', KEY_US: 'k-us', KEY_APAC: 'k-apac', TZ: 'UTC' };
          const shard = (n: number, sources: string) => [
            'sync', '--config', config, '--source', sources, '--db', `s3://lake-d/wh/shard-${n}.duckdb`, '--state-dir', join(dir, `state-${n}`),
            '--format', 'parquet', '--out', 's3://lake-d/costs', '--start-date', SPAN.startDate, '--until', SPAN.endDate, '--window-days', '10',
            '--publish-interval', '0', '--log-format', 'json',
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
          for (const [n, sources] of [[0, ['eu', 'us']], [1, ['apac']]] as const) {
            const work = workingCopyPath(join(dir, `state-${n}`), `s3://lake-d/wh/shard-${n}.duckdb`);
            for (const [table, diff] of Object.entries(await lakeDifferences(work, join(dir, 'lake'), sources))) {
              expect({ shard: n, table, ...diff }).toEqual({ shard: n, table, rows: diff.rows, missing: 0, extra: 0 });
            }
            // Every object this shard wrote or deleted is its own sources', its probe or its warehouse.
            const own = new RegExp(`^/lake-d/(costs/([a-z_]+/source=(${sources.join('|')})/|_costsync_(manifest|lease)\\.(${sources.join('|')})\\.json|_costsync_check-)|wh/shard-${n}\\.duckdb)`);
            const writes = proxies[n]!.log.filter((r) => ['PUT', 'POST', 'DELETE'].includes(r.method) && r.path !== '/lake-d/');
            expect(writes.length).toBeGreaterThan(0);
            expect(writes.filter((r) => !own.test(r.path)).map((r) => `${r.method} ${r.path}`)).toEqual([]);
          }
          const manifests = (await s3.keys('lake-d', 'costs/_costsync_manifest')).map((k) => k.slice('costs/'.length));
          expect(manifests).toEqual(['_costsync_manifest.apac.json', '_costsync_manifest.eu.json', '_costsync_manifest.us.json']);
          expect(await s3.keys('lake-d', 'costs/sync_runs/')).toEqual(['apac', 'eu', 'us'].map((s) => `costs/sync_runs/source=${s}/data.parquet`));
          expect(await s3.incompleteUploads('lake-d')).toEqual([]);
        });
      });
    } finally {
      for (const p of proxies) await p.close();
    }
  }, 120_000);

  it('refused at the start, before any API request, when the bucket cannot work: access denied (exit 3) and a missing bucket (exit 2), each naming bucket, key and action', async () => {
    const proxy = await faultProxy(s3.endpoint, () => 'deny');
    try {
      await withEmulator({ ...SPAN, rowsPerDay: 10, clock }, async (emulator) => {
        await withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env(proxy.endpoint) };
          const denied = await cli(syncArgs(emulator.url, dir, 'lake-e'), env);
          expect(denied.code, denied.stderr).toBe(3);
          expect(denied.stderr).toMatch(/Access denied: s3:ListBucket on s3:\/\/lake-e\/costs\/_costsync/);
          expect(denied.stderr).not.toContain(s3.env().AWS_SECRET_ACCESS_KEY);
          const missing = await cli(syncArgs(emulator.url, dir, 'no-such-bucket'), { ...env, ...s3.env() });
          expect(missing.code, missing.stderr).toBe(2);
          expect(missing.stderr).toContain('The bucket no-such-bucket does not exist');
          expect(emulator.requestLog.total).toBe(0);
        });
      });
    } finally {
      await proxy.close();
    }
  });
});
