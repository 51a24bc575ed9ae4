/**
 * Shards during a rollout (slow tier): the old and the new layout's runners, and a sharded run with a
 * catalog whose tables are in a bucket, kept off one source by the per-source leases under --out.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { shardOf } from '../../src/shards.js';
import { startCatalogServer } from '../catalog/server.mjs';
import { SPAN, cli, withEmulator, withTempDir, type CliResult, spanFlags } from '../support/helpers.js';
import { useRgw } from '../support/s3.js';
import { ENV, NAMES, clock, syncedSources, writeConfig } from '../support/shards.js';

const s3 = useRgw();

describe('shards during a rollout', () => {
  it('during a rollout from 3 shards to 4, the old and the new runner that both own a source never sync it at once: the second is refused by its lease (exit 5)', async () => {
    await s3.createBucket('shards-a');
    // A source that moves from 3 shards to 4 (always to the new shard 4), and the old shard that had it.
    const moved = NAMES.find((n) => shardOf(n, 4) === 4 && shardOf(n, 3) !== 4)!;
    const oldShard = shardOf(moved, 3);
    const env = { ...ENV, ...s3.env() };
    let second: Promise<CliResult> | null = null;
    let startSecond = () => undefined as void;
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock, onRequest: () => startSecond() }, async ({ url }) => {
      await withTempDir(async (dir) => {
        // The old layout's runner and the new one: each its own warehouse and state, one lake in the bucket.
        const config = writeConfig(dir, url, { format: 'parquet', out: 's3://shards-a/lake' });
        const oldRun = ['sync', '--config', config, '--shard', `${oldShard}/3`, '--log-format', 'json'];
        const newRun = [
          'sync',
          '--config',
          config,
          '--shard',
          '4/4',
          '--state-dir',
          join(dir, 'new-state-{shard}'),
          '--log-format',
          'json',
        ];
        // The old runner holds its sources' leases before its first API request: the new one starts then.
        startSecond = () => {
          second ??= cli(newRun, env);
        };
        const first = await cli([...oldRun, '--rate-limit', '120'], env);
        expect(first.code, first.stderr).toBe(0);
        const other = await second!;
        expect(other.code, other.stderr).toBe(5);
        expect(other.stderr).toContain('CS_ERR_LEASE_HELD');
        expect(other.stderr).toContain(`_costsync_lease.${moved}.json`);
        const runId = /"runId":"([^"]+)"/.exec(first.stdout + first.stderr)?.[1];
        expect(other.stderr).toContain(`run ${runId}`);
        // Refused before anything was written: the new shard's warehouse was never made.
        expect(existsSync(join(dir, 'costs-4.duckdb'))).toBe(false);
        expect(await syncedSources(join(dir, `costs-${oldShard}.duckdb`))).toContain(moved);
        // Once the old runner is done, the new layout's runner syncs the source.
        const after = await cli(newRun, env);
        expect(after.code, after.stderr).toBe(0);
        expect(await syncedSources(join(dir, 'costs-4.duckdb'))).toContain(moved);
        expect((await s3.keys('shards-a', 'lake/')).filter((k) => k.includes('_costsync_lease'))).toEqual([]);
      });
    });
  });

  it("with a REST catalog and the tables in a bucket, a shard still takes its sources' leases under --out: refused (exit 5) while another machine holds one; an unsharded run leaves --out to the catalog", async () => {
    await s3.createBucket('shards-b');
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const catalog = await startCatalogServer({
          root: join(dir, 'warehouse'),
          auth: { kind: 'bearer', token: 'shard-catalog-token' },
          transactions: true,
        });
        try {
          const env = { ...s3.env(), COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', COSTSYNC_CATALOG_TOKEN: 'shard-catalog-token' };
          const now = new Date().toISOString();
          const holder = { host: 'another-machine', pid: 4242, runId: 'run-of-the-old-layout', startedAt: now, renewedAt: now };
          await s3.client.send(
            new PutObjectCommand({ Bucket: 'shards-b', Key: 'tables/_costsync_lease.default.json', Body: JSON.stringify(holder) }),
          );
          const line = (more: string[]) => [
            'sync',
            '--base-url',
            url,
            '--db',
            join(dir, 'costs-{shard}.duckdb'),
            '--state-dir',
            join(dir, 'state-{shard}'),
            '--catalog',
            catalog.url,
            '--out',
            's3://shards-b/tables',
            ...spanFlags(),
            '--streams',
            'rollups',
            ...more,
          ];
          const sharded = await cli(line(['--shard', '1/1']), env);
          expect(sharded.code, sharded.stderr).toBe(5);
          expect(sharded.stderr).toContain('CS_ERR_LEASE_HELD');
          expect(sharded.stderr).toContain('run run-of-the-old-layout on another-machine');
          expect(catalog.table(['costsync'], 'rollups_daily')).toBeNull();
          // Unsharded, the catalog alone decides: the lease under --out is not looked at.
          const unsharded = await cli(line(['--db', join(dir, 'costs.duckdb'), '--state-dir', join(dir, 'state')]), env);
          expect(unsharded.code, unsharded.stderr).toBe(0);
        } finally {
          await catalog.close();
        }
      });
    });
  });
});
