import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SPAN, cli, withEmulator, withTempDir } from '../support/helpers.js';
import { faultProxy, useRgw } from '../support/s3.js';
import { expectBucketExact, syncArgs } from '../support/lake-bucket.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const s3 = useRgw();

// In the slow tier: the SDK's backoff (about a second a SlowDown) makes this a 20-second run.
describe("the lake and the published warehouse in a bucket, through the bucket's faults (slow tier)", () => {
  it('through 503 SlowDown and connection resets: every object a partition, run table or manifest, the lake equals the tables, the published object equals the working copy; query reads it, downloading it once', async () => {
    await s3.createBucket('lake-a');
    let faults = 0;
    const proxy = await faultProxy(s3.endpoint, (req, n) => {
      if (req.method !== 'PUT' && req.method !== 'POST') return null;
      // Sparse enough that the SDK's backoff (about a second a SlowDown) does not dominate the run.
      const fault = n % 23 === 0 ? 'slowdown' : n % 29 === 0 ? 'reset' : null;
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
          await expectBucketExact(s3, 'lake-a', dir, 'check');

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
  });
});
