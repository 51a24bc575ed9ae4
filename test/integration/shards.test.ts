import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/shards.js';
import { SPAN, cli, queryDb, run, withEmulator, withTempDir, type CliResult } from '../helpers.js';
import { useRgw } from '../s3.js';
import { startCatalogServer } from '../catalog/server.mjs';
import { PutObjectCommand } from '@aws-sdk/client-s3';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const NAMES = ['acme-eu', 'acme-us', 'acme-apac', 'globex', 'initech', 'umbrella', 'hooli', 'stark'];
const ENV = { SHARD_TEST_KEY: 'demo-key', TZ: 'UTC' };

const s3 = useRgw();

/** One config file for every shard: the sources, and {shard} in the warehouse's and the state's paths. */
function writeConfig(dir: string, url: string, more: Record<string, unknown> = {}): string {
  const path = join(dir, 'costsync.config.json');
  writeFileSync(
    path,
    JSON.stringify({
      'base-url': url,
      db: join(dir, 'costs-{shard}.duckdb'),
      'state-dir': join(dir, 'state-{shard}'),
      'start-date': SPAN.startDate,
      until: SPAN.endDate,
      'rate-limit': 100_000,
      streams: 'line_items,rollups',
      sources: NAMES.map((name) => ({ name, 'api-key-env': 'SHARD_TEST_KEY' })),
      ...more,
    }),
  );
  return path;
}

async function syncedSources(db: string): Promise<string[]> {
  const rows = await queryDb<{ source: string }>(db, "SELECT DISTINCT source FROM sync_runs WHERE outcome = 'success' ORDER BY 1");
  return rows.map((r) => r.source);
}

describe('shards: one config file, N runners', () => {
  it('four runners (--shard I/4, and --shard-count 4 with JOB_COMPLETION_INDEX) at once sync every source exactly once, each into its own {shard} warehouse and state', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = writeConfig(dir, url);
        const results = await Promise.all([
          cli(['sync', '--config', config, '--shard', '1/4'], ENV),
          cli(['sync', '--config', config, '--shard', '2/4'], ENV),
          cli(['sync', '--config', config, '--shard-count', '4'], { ...ENV, JOB_COMPLETION_INDEX: '2' }),
          cli(['sync', '--config', config, '--shard-count', '4'], { ...ENV, JOB_COMPLETION_INDEX: '3' }),
        ]);
        const seen: string[] = [];
        for (const [i, result] of results.entries()) {
          const shard = i + 1;
          expect(result.code, result.stderr).toBe(0);
          // These eight names leave no shard of four empty (the empty shard is the next test's).
          const owned = NAMES.filter((n) => shardOf(n, 4) === shard);
          expect(owned.length).toBeGreaterThan(0);
          expect(existsSync(join(dir, `state-${shard}`))).toBe(true);
          const synced = await syncedSources(join(dir, `costs-${shard}.duckdb`));
          expect(synced).toEqual([...owned].sort());
          seen.push(...synced);
        }
        expect(seen.sort()).toEqual([...NAMES].sort());
        // The reading commands take the shard too, for the config file's {shard} paths.
        const shard2 = NAMES.filter((n) => shardOf(n, 4) === 2).sort();
        const query = await run(
          ['query', 'SELECT DISTINCT source FROM line_items ORDER BY 1', '--config', config, '--shard', '2/4', '--format', 'csv'],
          ENV,
        );
        expect(query.code, query.stderr).toBe(0);
        expect(query.stdout.trim().split('\n').slice(1)).toEqual(shard2);
        const status = await run(['status', '--config', config, '--shard-count', '4', '--format', 'json'], {
          ...ENV,
          JOB_COMPLETION_INDEX: '1',
        });
        expect(status.code, status.stderr).toBe(0);
        expect((JSON.parse(status.stdout) as { sources: { name: string }[] }).sources.map((s) => s.name).sort()).toEqual(shard2);
        const unsharded = await run(['query', 'SELECT 1', '--config', config], ENV);
        expect(unsharded.code).toBe(2);
        expect(unsharded.stderr).toContain('holds {shard}, but this run is not a shard');
      });
    });
  }, 120_000);

  it('a shard that owns no source says so, exits 0 and creates nothing (no lock, no state, no warehouse); with --shard-count too', async () => {
    await withTempDir(async (dir) => {
      // 8 sources over 16 shards: at least 8 shards own none.
      const idle = Array.from({ length: 16 }, (_, i) => i + 1).find((i) => !NAMES.some((n) => shardOf(n, 16) === i))!;
      const config = writeConfig(dir, 'http://127.0.0.1:9');
      const before = readdirSync(dir);
      const byFlag = await cli(['sync', '--config', config, '--shard', `${idle}/16`], ENV);
      expect(byFlag.code, byFlag.stderr).toBe(0);
      expect(byFlag.stdout).toBe(
        `Shard ${idle}/16 owns none of the config's 8 sources (each source goes to one of the 16 shards by its name): nothing to sync.\n`,
      );
      const byIndex = await cli(['sync', '--config', config, '--shard-count', '16'], { ...ENV, JOB_COMPLETION_INDEX: String(idle - 1) });
      expect(byIndex.code, byIndex.stderr).toBe(0);
      expect(byIndex.stdout).toBe(byFlag.stdout);
      // In JSON logs, one line a log collector can read.
      const json = await run(['sync', '--config', config, '--shard', `${idle}/16`, '--log-format', 'json'], ENV);
      expect(json.code, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({ level: 'info', shard: `${idle}/16`, sources: 0, sourcesBeforeSplit: 8 });
      expect(readdirSync(dir)).toEqual(before);
      // A bad index is refused with exit 2, naming the fix.
      const bad = await cli(['sync', '--config', config, '--shard-count', '16'], { ...ENV, JOB_COMPLETION_INDEX: '16' });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('JOB_COMPLETION_INDEX must be a whole number from 0 to 15');
    });
  });

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
  }, 120_000);

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
            '--start-date',
            SPAN.startDate,
            '--until',
            SPAN.endDate,
            '--rate-limit',
            '100000',
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
  }, 60_000);
});
