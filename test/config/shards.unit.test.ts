import { describe, expect, it } from 'vitest';
import { resolveSyncConfig, type ConfigSources } from '../../src/config.js';
import { emptyShardText } from '../../src/commands/sync.js';
import { ConfigError } from '../../src/errors.js';
import { lakeLeasePlace } from '../../src/run-context.js';
import { resolveShard, shardOf, sourcesOfShard, substituteShard } from '../../src/shards.js';

const NAMES = Array.from({ length: 400 }, (_, i) => `workspace-${i}`);

describe('the split of sources among shards (rendezvous hashing)', () => {
  it('gives every source to exactly one shard, for 1 to 8 shards, with no shard far from its share', () => {
    for (let count = 1; count <= 8; count++) {
      const owners = new Map<string, number[]>();
      for (let index = 1; index <= count; index++) {
        const mine = sourcesOfShard(NAMES, { index, count });
        for (const name of mine) owners.set(name, [...(owners.get(name) ?? []), index]);
        // Each shard near its share: within half of it either way over 400 names.
        expect(mine.length).toBeGreaterThan(NAMES.length / count / 2);
        expect(mine.length).toBeLessThan((NAMES.length / count) * 1.5);
      }
      expect([...owners.keys()].sort()).toEqual([...NAMES].sort());
      expect([...owners.values()].every((shards) => shards.length === 1)).toBe(true);
    }
  });

  it('from 3 shards to 4 moves about a quarter of the sources, each to the new shard', () => {
    const moved = NAMES.filter((name) => shardOf(name, 3) !== shardOf(name, 4));
    // 1/4 expected; over 400 names the binomial's spread is about 0.02.
    expect(moved.length / NAMES.length).toBeGreaterThan(0.17);
    expect(moved.length / NAMES.length).toBeLessThan(0.33);
    expect(moved.every((name) => shardOf(name, 4) === 4)).toBe(true);
    // And from N to N+1 for every N up to 8: only to the new shard.
    for (let count = 1; count < 8; count++) {
      for (const name of NAMES) {
        const after = shardOf(name, count + 1);
        expect(after === shardOf(name, count) || after === count + 1).toBe(true);
      }
    }
  });

  it("is stable: a source's shard depends on its name and the count only (the same in every process, whatever else is listed)", () => {
    expect(NAMES.slice(0, 6).map((n) => shardOf(n, 4))).toEqual(NAMES.slice(0, 6).map((n) => shardOf(n, 4)));
    const some = ['acme-eu', 'acme-us', 'acme-apac'];
    for (const name of some) expect(sourcesOfShard([name], { index: shardOf(name, 5), count: 5 })).toEqual([name]);
    expect(shardOf('anything', 1)).toBe(1);
  });
});

describe('--shard and --shard-count', () => {
  const from = (value: unknown, flag = '--shard') => ({ value, from: flag });

  it('reads I/N (1-based) and N with JOB_COMPLETION_INDEX (0-based, plus one)', () => {
    expect(resolveShard(from('2/4'), undefined, {})).toEqual({ index: 2, count: 4 });
    expect(resolveShard(undefined, from(4, '--shard-count'), { JOB_COMPLETION_INDEX: '0' })).toEqual({ index: 1, count: 4 });
    expect(resolveShard(undefined, from('4', '--shard-count'), { JOB_COMPLETION_INDEX: '3' })).toEqual({ index: 4, count: 4 });
    expect(resolveShard(undefined, undefined, { JOB_COMPLETION_INDEX: '3' })).toBeNull();
  });

  it.each([
    ['both given', from('1/2'), from(2, '--shard-count'), { JOB_COMPLETION_INDEX: '0' }, /both given/],
    ['an index of 0', from('0/4'), undefined, {}, /from 1 to 4 .*numbered from 1/],
    ['an index past N', from('5/4'), undefined, {}, /from 1 to 4/],
    ['a malformed value', from('2 of 4'), undefined, {}, /must be I\/N, such as 2\/4; got "2 of 4"/],
    ['zero shards', from('1/0'), undefined, {}, /number of shards must be a whole number from 1/],
    ['--shard-count without JOB_COMPLETION_INDEX', undefined, from(3, '--shard-count'), {}, /JOB_COMPLETION_INDEX, which is not set/],
    ['a JOB_COMPLETION_INDEX that is not a number', undefined, from(3, '--shard-count'), { JOB_COMPLETION_INDEX: 'x' }, /0 to 2 .*got "x"/],
    ['a negative JOB_COMPLETION_INDEX', undefined, from(3, '--shard-count'), { JOB_COMPLETION_INDEX: '-1' }, /0 to 2/],
    ['a JOB_COMPLETION_INDEX of N or more', undefined, from(3, '--shard-count'), { JOB_COMPLETION_INDEX: '3' }, /0 to 2 .*got "3"/],
    ['a --shard-count that is not a whole number', undefined, from('2.5', '--shard-count'), { JOB_COMPLETION_INDEX: '0' }, /whole number/],
  ])('refuses %s with a ConfigError naming the fix', (_what, shard, count, env, message) => {
    let error: unknown;
    try {
      resolveShard(shard, count, env);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(message);
    expect((error as ConfigError).hint).toBeTruthy();
  });

  it('puts the 1-based index in place of {shard}; a {shard} without a shard is refused', () => {
    expect(substituteShard('/data/costs-{shard}.duckdb', '--db', { index: 3, count: 4 })).toBe('/data/costs-3.duckdb');
    expect(substituteShard('/data/costs.duckdb', '--db', null)).toBe('/data/costs.duckdb');
    expect(() => substituteShard('/data/costs-{shard}.duckdb', '--db', null)).toThrow(
      /--db .* holds \{shard\}, but this run is not a shard/,
    );
  });
});

describe('a sharded configuration', () => {
  const list = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((n) => ({ name: `ws-${n}`, 'api-key-env': `KEY_${n.toUpperCase()}` }));
  const keys = Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((n) => [`KEY_${n.toUpperCase()}`, `k-${n}`]));
  const sources = (over: Partial<ConfigSources> = {}): ConfigSources => ({
    flags: {},
    env: keys,
    file: { 'base-url': 'https://api.example.com' },
    fileSources: list,
    nowMs: Date.parse('2025-07-01T12:00:00Z'),
    ...over,
  });

  it("keeps the shard's sources, puts its index into --db, --state-dir and --out, and reads only its own sources' keys", () => {
    const config = resolveSyncConfig(
      sources({
        flags: { shard: '2/3', db: '/data/costs-{shard}.duckdb', out: 's3://lake/costs', format: 'parquet' },
        file: { 'base-url': 'https://api.example.com', 'state-dir': '/data/state-{shard}' },
        // Another shard's key missing does not matter to this one.
        env: Object.fromEntries(Object.entries(keys).filter(([k]) => shardOf(`ws-${k.slice(4).toLowerCase()}`, 3) === 2)),
      }),
    );
    expect(config.sources!.map((s) => s.name)).toEqual(list.map((s) => s.name).filter((n) => shardOf(n, 3) === 2));
    expect(config).toMatchObject({ db: '/data/costs-2.duckdb', stateDir: '/data/state-2', out: 's3://lake/costs' });
    expect(config.shard).toEqual({ index: 2, count: 3, sourcesBeforeSplit: 8, narrowedBySource: false });
  });

  it('--shard-count takes I from JOB_COMPLETION_INDEX + 1; --source narrows first, without moving any source to another shard', () => {
    const config = resolveSyncConfig(
      sources({ flags: { 'shard-count': 3, db: 'c-{shard}.duckdb' }, env: { ...keys, JOB_COMPLETION_INDEX: '0' } }),
    );
    expect(config.db).toBe('c-1.duckdb');
    expect(config.sources!.map((s) => s.name)).toEqual(list.map((s) => s.name).filter((n) => shardOf(n, 3) === 1));
    const narrowed = resolveSyncConfig(sources({ flags: { shard: '1/3', source: 'ws-a,ws-b,ws-c' } }));
    expect(narrowed.sources!.map((s) => s.name)).toEqual(['ws-a', 'ws-b', 'ws-c'].filter((n) => shardOf(n, 3) === 1));
    expect(narrowed.shard).toMatchObject({ sourcesBeforeSplit: 3, narrowedBySource: true });
  });

  it('a shard that owns none of the sources has an empty list, and says so naming N and how many sources there are', () => {
    // With two sources and 8 shards, most shards own none.
    const two = list.slice(0, 2);
    const owners = new Set(two.map((s) => shardOf(s.name, 8)));
    const idle = [1, 2, 3, 4, 5, 6, 7, 8].find((i) => !owners.has(i))!;
    const config = resolveSyncConfig(sources({ fileSources: two, flags: { shard: `${idle}/8` } }));
    expect(config.sources).toEqual([]);
    expect(emptyShardText(config.shard!)).toBe(
      `Shard ${idle}/8 owns none of the config's 2 sources (each source goes to one of the 8 shards by its name): nothing to sync.`,
    );
    // Without a "sources" list, the one source `default` is on one shard.
    const single = { env: { COSTSYNC_API_KEY: 'k', COSTSYNC_BASE_URL: 'https://api.example.com' }, fileSources: undefined };
    const home = shardOf('default', 2);
    expect(resolveSyncConfig(sources({ ...single, flags: { shard: `${home}/2` } })).sources).toBeUndefined();
    expect(resolveSyncConfig(sources({ ...single, flags: { shard: `${3 - home}/2` } })).sources).toEqual([]);
  });

  it('refuses {shard} outside --db, --state-dir and --out, and in them without a shard', () => {
    expect(() => resolveSyncConfig(sources({ flags: { shard: '1/2', 'metrics-file': '/m/{shard}.prom' } }))).toThrow(
      /--metrics-file holds \{shard\}, which only --db, --state-dir and --out may hold/,
    );
    expect(() => resolveSyncConfig(sources({ file: { 'base-url': 'https://api.example.com', db: 'c-{shard}.duckdb' } }))).toThrow(
      /"db" in the config file \(c-\{shard\}.duckdb\) holds \{shard\}, but this run is not a shard/,
    );
    expect(() => resolveSyncConfig(sources({ env: { ...keys, COSTSYNC_FORMAT: 'parquet', COSTSYNC_OUT: 'lake-{shard}' } }))).toThrow(
      /COSTSYNC_OUT .* not a shard/,
    );
  });
});

describe('the lake leases of a shard', () => {
  const catalog = { url: 'https://catalog' } as unknown as Parameters<typeof lakeLeasePlace>[0]['catalog'];
  it('are taken under a bucket --out even with a catalog, which alone does not keep two runners off one source', () => {
    const shard = { index: 1, count: 2, sourcesBeforeSplit: 2, narrowedBySource: false };
    expect(lakeLeasePlace({ out: 's3://b/lake', catalog: null }, true)).toBe('s3://b/lake');
    expect(lakeLeasePlace({ out: 's3://b/lake', catalog }, true)).toBeNull();
    expect(lakeLeasePlace({ out: 's3://b/lake', catalog, shard }, true)).toBe('s3://b/lake');
    expect(lakeLeasePlace({ out: '', catalog, shard }, true)).toBeNull();
    expect(lakeLeasePlace({ out: './lake', catalog, shard }, true)).toBeNull();
    expect(lakeLeasePlace({ out: 's3://b/lake', catalog: null, shard }, false)).toBeNull();
  });
});
