#!/usr/bin/env node
// Object-storage benchmarks. Prints figures; asserts nothing. Run after `npm ci` (uses dist/) on a machine
// with Ceph's radosgw (`npm test` installs it, or names the packages), which `test/system/rgw.mjs` starts:
//   npm run bench:bucket               both
//   npm run bench:bucket -- publish    publish of 1, 5 and 20 million line items to a bucket vs to a local file:
//                                      MB/s, and how long a window commit waits meanwhile
//   npm run bench:bucket -- lake       lake partitions written per second, to a bucket vs to a local directory
// Environment: BENCH_PUBLISH_MILLIONS (default 1,5,20), BENCH_DIR; BENCH_SMOKE=1: tiny sizes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drainLake } from '../../dist/outputs/lake.js';
import { publish } from '../../dist/outputs/publish.js';
import { bucketTarget, directoryTarget } from '../../dist/outputs/target.js';
import { startRadosgw } from '../system/rgw.mjs';
import { filledWorkingCopy, size, tempDir } from './common.mjs';

const which = process.argv[2];

/**
 * Starts radosgw and points the SDK at it (the variables a user sets); returns a stop function. With
 * BENCH_S3_ENDPOINT (and its keys) set, uses that server instead (the test suite's, for the smoke run).
 */
async function startRgw() {
  const use = (endpoint, accessKeyId, secretAccessKey) =>
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_S3: endpoint,
      AWS_ACCESS_KEY_ID: accessKeyId,
      AWS_SECRET_ACCESS_KEY: secretAccessKey,
      AWS_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
    });
  if (process.env.BENCH_S3_ENDPOINT) {
    use(process.env.BENCH_S3_ENDPOINT, process.env.BENCH_S3_KEY_ID, process.env.BENCH_S3_SECRET);
    return async () => undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), 'costsync-bench-rgw-'));
  // The in-memory store holds about twice what it is given: room for the 1 + 5 + 20 million warehouses.
  const gateway = await startRadosgw(dir, { storeBytes: 6 * 2 ** 30 });
  use(gateway.endpoint, gateway.accessKeyId, gateway.secretAccessKey);
  return async () => {
    await gateway.stop();
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

const stop = await startRgw();
try {
  await createBucket('bench');
  if (which === undefined || which === 'publish') await benchPublish();
  if (which === undefined || which === 'lake') await benchLake();
} finally {
  await stop();
}
