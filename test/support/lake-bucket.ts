/** What the bucket lake tests share: the sync's arguments, and the check that a bucket equals the working copy. */
import { join } from 'node:path';
import { expect } from 'vitest';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { backfillFlags, lakeDifferences, syncCommandFor, tableDigest } from './helpers.js';
import type { S3Server } from './s3.js';

/** Every object a lake of the `default` source may hold. */
export const OBJECT =
  /^((line_items|focus|focus_1_3|focus_1_4|rollups_daily|anomalies|anomaly_status_history)\/source=default\/date=\d{4}-\d{2}-\d{2}\/data\.parquet|(sync_runs|sync_run_streams)\/source=default\/data\.parquet|_costsync_(manifest|state)\.default\.json)$/;

/** A sync against `url` whose warehouse is published in `bucket` (`wh/costs.duckdb`), its state in `stateDir`, then `extra`. */
export function bucketSyncCommand(url: string, bucket: string, stateDir: string, extra: readonly string[] = []): string[] {
  return syncCommandFor(url, `s3://${bucket}/wh/costs.duckdb`, stateDir, extra);
}

/** A backfill of the Parquet lake `costs/` in `bucket`, the state in `dir/state`, then `more`. */
export function syncArgs(url: string, dir: string, bucket: string, more: string[] = []): string[] {
  return bucketSyncCommand(url, bucket, join(dir, 'state'), [
    '--format',
    'parquet',
    '--out',
    `s3://${bucket}/costs`,
    ...backfillFlags(10),
    ...more,
  ]);
}

/** The lake under `costs/` and the published warehouse, downloaded, against the working copy. */
export async function expectBucketExact(s3: S3Server, bucket: string, dir: string, sub: string): Promise<void> {
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
