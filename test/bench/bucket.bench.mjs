#!/usr/bin/env node
// Object-storage benchmarks. Prints figures; asserts nothing. Run after `npm ci` (uses dist/)
// on a machine with Ceph's radosgw (`../shared/s3/rgw.sh`; docs/testing.md names its packages):
//   npm run bench:bucket               both
//   npm run bench:bucket -- publish    publish of 1, 5 and 20 million line items to a bucket vs to a local file:
//                                      MB/s, and how long a window commit waits meanwhile
//   npm run bench:bucket -- lake       lake partitions written per second, to a bucket vs to a local directory
// Environment: BENCH_PUBLISH_MILLIONS (default 1,5,20), BENCH_DIR; BENCH_SMOKE=1: tiny sizes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { drainLake } from '../../dist/outputs/lake.js';
import { publish } from '../../dist/outputs/publish.js';
import { bucketTarget, directoryTarget } from '../../dist/outputs/target.js';
import { filledWorkingCopy, size, tempDir } from './common.mjs';

const which = process.argv[2];
const RGW = fileURLToPath(new URL('../../../shared/s3/rgw.sh', import.meta.url));

/**
 * Starts radosgw and points the SDK at it (the variables a user sets); returns a stop function. With
 * BENCH_S3_ENDPOINT (and its keys) set, uses that server instead (the test suite's, for the smoke run).
 */
function startRgw() {
  if (process.env.BENCH_S3_ENDPOINT) {
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_S3: process.env.BENCH_S3_ENDPOINT,
      AWS_ACCESS_KEY_ID: process.env.BENCH_S3_KEY_ID,
      AWS_SECRET_ACCESS_KEY: process.env.BENCH_S3_SECRET,
      AWS_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
    });
    return () => undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), 'costsync-bench-rgw-'));
  // The in-memory store holds about twice what it is given: room for the 1 + 5 + 20 million warehouses.
  const out = execFileSync('bash', [RGW, 'start', dir], { encoding: 'utf8', env: { RGW_OSD_BYTES: String(6 * 2 ** 30), ...process.env } });
  const vars = Object.fromEntries([...out.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_S3: vars.S3_ENDPOINT,
    AWS_ACCESS_KEY_ID: vars.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: vars.AWS_SECRET_ACCESS_KEY,
    AWS_REGION: 'us-east-1',
    AWS_EC2_METADATA_DISABLED: 'true',
  });
  return () => {
    execFileSync('bash', [RGW, 'stop', dir]);
    rmSync(dir, { recursive: true, force: true });
  };
}

async function createBucket(name) {
  const { CreateBucketCommand } = await import('@aws-sdk/client-s3');
  const { createS3Client } = await import('../../dist/outputs/s3.js');
  const client = createS3Client();
  await client.send(new CreateBucketCommand({ Bucket: name }));
  client.destroy();
}

/**
 * Runs `fn` while a window commit is attempted every 10 ms; returns what `fn` returned and the longest
 * any commit waited for the write queue.
 */
async function withCommits(wh, fn) {
  let longest = 0;
  let running = true;
  const commits = (async () => {
    while (running) {
      const asked = performance.now();
      await wh.transaction(
        async () => {
          longest = Math.max(longest, performance.now() - asked);
        },
        { publish: false },
      );
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  try {
    return { result: await fn(), longestWaitMs: longest };
  } finally {
    running = false;
    await commits;
  }
}

async function benchPublish() {
  const millions = size('BENCH_PUBLISH_MILLIONS', '1,5,20', '0.01').split(',').map(Number);
  for (const m of millions) {
    const dir = tempDir();
    try {
      const { wh } = await filledWorkingCopy(dir, m * 1_000_000);
      try {
        const run = { runId: null, now: Date.now };
        const local = await withCommits(wh, async () => {
          const r = await publish(wh, join(dir, 'published.duckdb'), run, { force: true, method: 'copy' });
          return r;
        });
        const bucket = await withCommits(wh, () => publish(wh, `s3://bench/wh/costs-${m}m.duckdb`, run, { force: true, method: 'copy' }));
        const mbs = (r) => (r.bytes / 1e6 / r.seconds).toFixed(0);
        console.log(
          `publish: ${m}M line items (${(local.result.bytes / 1e6).toFixed(1)} MB): local file ${local.result.seconds.toFixed(2)} s (${mbs(local.result)} MB/s), ` +
            `bucket ${bucket.result.seconds.toFixed(2)} s (${mbs(bucket.result)} MB/s); write queue held ${local.result.heldSeconds.toFixed(2)} s vs ${bucket.result.heldSeconds.toFixed(2)} s; ` +
            `longest commit wait ${local.longestWaitMs.toFixed(0)} ms vs ${bucket.longestWaitMs.toFixed(0)} ms`,
        );
      } finally {
        wh.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

async function benchLake() {
  // Rows spread over up to 365 dates, a partition each: the smoke run writes 60 (a few seconds, not twenty).
  const rows = Number(size('BENCH_LAKE_ROWS', 1_000_000, 60));
  const dir = tempDir();
  try {
    const { wh } = await filledWorkingCopy(dir, rows, { lake: true });
    try {
      const dates = (await wh.sql('SELECT DISTINCT usage_date::VARCHAR AS d FROM line_items ORDER BY 1')).map((r) => r.d);
      for (const [name, target] of [
        ['local directory', directoryTarget(join(dir, 'lake'))],
        ['bucket', bucketTarget('s3://bench/lake', join(dir, 'scratch'))],
      ]) {
        await wh.transaction(() => wh.changed('line_items', 'default', dates), { publish: false });
        const started = performance.now();
        const written = await drainLake(wh, target);
        const seconds = (performance.now() - started) / 1000;
        console.log(
          `lake: ${written} partitions of ${rows} line items to a ${name}: ${seconds.toFixed(2)} s = ${(written / seconds).toFixed(0)} partitions/s`,
        );
      }
    } finally {
      wh.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const stop = startRgw();
try {
  await createBucket('bench');
  if (which === undefined || which === 'publish') await benchPublish();
  if (which === undefined || which === 'lake') await benchLake();
} finally {
  stop();
}
