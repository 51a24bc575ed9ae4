// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: The bucket lake: iceberg-catalog-storage's tables in radosgw, lost-answers, the bucket benchmark's smoke.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SPAN, run, withEmulator, withTempDir } from '../support/helpers.js';
import { faultProxy, useRgw } from '../support/s3.js';
import { expectBucketExact, syncArgs } from '../support/lake-bucket.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const s3 = useRgw();

describe('the lake and the published warehouse in a bucket', () => {
  it('a bucket that refuses every write for one run: exit 1 naming the lake and the published warehouse, the metrics show what is pending, the next run catches up', async () => {
    await s3.createBucket('lake-b');
    // The start check's probe and the lease pass; every write of data is refused.
    const deny = (req: { method: string; path: string }) =>
      req.method !== 'GET' && req.method !== 'HEAD' && !/_costsync_check|\.lease|_costsync_lease/.test(req.path) ? ('deny' as const) : null;
    const proxy = await faultProxy(s3.endpoint, deny);
    try {
      await withEmulator({ ...SPAN, rowsPerDay: 50, clock }, async ({ url }) => {
        await withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env(proxy.endpoint) };
          const metrics = join(dir, 'costsync.prom');
          const refused = await run(syncArgs(url, dir, 'lake-b', ['--metrics-file', metrics]), env);
          expect(refused.code, refused.stderr).toBe(1);
          expect(refused.stderr).toContain('CS_ERR_OUTPUT_BEHIND');
          expect(refused.stderr).toContain('s3://lake-b/costs/');
          expect(refused.stderr).toContain('s3://lake-b/wh/costs.duckdb');
          expect(refused.stderr).toContain('s3:PutObject');
          expect(refused.stderr).toContain('safe in the working copy');
          const pending = (output: string) =>
            Number(new RegExp(`costsync_outbox_pending\\{output="${output}"\\} (\\d+)`).exec(readFileSync(metrics, 'utf8'))?.[1]);
          expect(pending('lake')).toBeGreaterThan(30);
          expect(pending('publish')).toBeGreaterThan(0);
          expect(await s3.keys('lake-b', 'costs/')).toEqual([]);

          proxy.setPolicy(() => null);
          const next = await run(syncArgs(url, dir, 'lake-b', ['--metrics-file', metrics]), env);
          expect(next.code, next.stderr).toBe(0);
          expect(pending('lake')).toBe(0);
          expect(pending('publish')).toBe(0);
          await expectBucketExact(s3, 'lake-b', dir, 'check');
        });
      });
    } finally {
      await proxy.close();
    }
  });

  it('refused at the start, before any API request, when the bucket cannot work: access denied (exit 3) and a missing bucket (exit 2), each naming bucket, key and action', async () => {
    const proxy = await faultProxy(s3.endpoint, () => 'deny');
    try {
      await withEmulator({ ...SPAN, rowsPerDay: 10, clock }, async (emulator) => {
        await withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env(proxy.endpoint) };
          const denied = await run(syncArgs(emulator.url, dir, 'lake-e'), env);
          expect(denied.code, denied.stderr).toBe(3);
          expect(denied.stderr).toMatch(/Access denied: s3:ListBucket on s3:\/\/lake-e\/costs\/_costsync/);
          expect(denied.stderr).not.toContain(s3.env().AWS_SECRET_ACCESS_KEY);
          const missing = await run(syncArgs(emulator.url, dir, 'no-such-bucket'), { ...env, ...s3.env() });
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
