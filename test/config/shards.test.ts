import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/shards.js';
import { SPAN, run, withEmulator, withTempDir } from '../support/helpers.js';
import { ENV, NAMES, clock, syncedSources, writeConfig } from '../support/shards.js';

/** The runners of two layouts during a rollout, kept apart by leases: test/config/shards-rollout.slow.test.ts. */
describe('shards: one config file, N runners', () => {
  it('four runners (--shard I/4, and --shard-count 4 with JOB_COMPLETION_INDEX) at once sync every source exactly once, each into its own {shard} warehouse and state', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = writeConfig(dir, url);
        const results = await Promise.all([
          run(['sync', '--config', config, '--shard', '1/4'], ENV),
          run(['sync', '--config', config, '--shard', '2/4'], ENV),
          run(['sync', '--config', config, '--shard-count', '4'], { ...ENV, JOB_COMPLETION_INDEX: '2' }),
          run(['sync', '--config', config, '--shard-count', '4'], { ...ENV, JOB_COMPLETION_INDEX: '3' }),
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
  });

  it('a shard that owns no source says so, exits 0 and creates nothing (no lock, no state, no warehouse); with --shard-count too', async () => {
    await withTempDir(async (dir) => {
      // 8 sources over 16 shards: at least 8 shards own none.
      const idle = Array.from({ length: 16 }, (_, i) => i + 1).find((i) => !NAMES.some((n) => shardOf(n, 16) === i))!;
      const config = writeConfig(dir, 'http://127.0.0.1:9');
      const before = readdirSync(dir);
      const byFlag = await run(['sync', '--config', config, '--shard', `${idle}/16`], ENV);
      expect(byFlag.code, byFlag.stderr).toBe(0);
      expect(byFlag.stdout).toBe(
        `Shard ${idle}/16 owns none of the config's 8 sources (each source goes to one of the 16 shards by its name): nothing to sync.\n`,
      );
      const byIndex = await run(['sync', '--config', config, '--shard-count', '16'], { ...ENV, JOB_COMPLETION_INDEX: String(idle - 1) });
      expect(byIndex.code, byIndex.stderr).toBe(0);
      expect(byIndex.stdout).toBe(byFlag.stdout);
      // In JSON logs, one line a log collector can read.
      const json = await run(['sync', '--config', config, '--shard', `${idle}/16`, '--log-format', 'json'], ENV);
      expect(json.code, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({ level: 'info', shard: `${idle}/16`, sources: 0, sourcesBeforeSplit: 8 });
      expect(readdirSync(dir)).toEqual(before);
      // A bad index is refused with exit 2, naming the fix.
      const bad = await run(['sync', '--config', config, '--shard-count', '16'], { ...ENV, JOB_COMPLETION_INDEX: '16' });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('JOB_COMPLETION_INDEX must be a whole number from 0 to 15');
    });
  });
});
