import { describe, expect, it } from 'vitest';
import {
  CATALOG_RULE,
  DATE_RULES,
  PLACE_RULES,
  fieldName,
  resolveSyncConfig,
  type ConfigSources,
  type GivenSettings,
  type RunDates,
  type SettingRule,
} from '../../src/config.js';
import { SETTING_SPECS, decimal, envName, parseDuration, specOf } from '../../src/settings.js';
import { ConfigError } from '../../src/errors.js';
import { requireDbDirectory } from '../../src/run-context.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const now = Date.parse('2025-07-01T23:30:00Z');
const sources = (over: Partial<ConfigSources> = {}): ConfigSources => ({
  flags: {},
  env: { COSTSYNC_API_KEY: 'k-env', COSTSYNC_BASE_URL: 'https://api.example.com' },
  file: {},
  nowMs: now,
  readKeyFile: (p) =>
    p === '/keys/ok'
      ? 'k-file\n'
      : (() => {
          throw Object.assign(new Error('nope'), { code: 'ENOENT' });
        })(),
  ...over,
});

describe('settings read by their kind alone', () => {
  it('a field is the name in camelCase, with Ms after a duration', () => {
    expect(fieldName('lookback-days')).toBe('lookbackDays');
    expect(fieldName('lease-ttl')).toBe('leaseTtlMs');
    expect(fieldName('quiet')).toBe('quiet');
  });

  it("each int, dollars, bool, choice and duration setting with a default takes it when not set, and a flag's value when set", () => {
    const defaults = resolveSyncConfig(sources()) as unknown as Record<string, unknown>;
    const read = (name: string, value: unknown) =>
      (resolveSyncConfig(sources({ flags: { [name]: value } })) as unknown as Record<string, unknown>)[fieldName(name as never)];
    let checked = 0;
    for (const spec of SETTING_SPECS) {
      const field = fieldName(spec.name);
      if (!(field in defaults)) continue;
      const s = specOf(spec.name);
      if (s.kind === 'bool') {
        expect(defaults[field], spec.name).toBe(false);
        expect(read(spec.name, true), spec.name).toBe(true);
      } else if (s.kind === 'choice' && s.default !== undefined) {
        expect(defaults[field], spec.name).toBe(s.default);
        const other = s.choices!.find((c) => c !== s.default)!;
        expect(read(spec.name, other), spec.name).toBe(other);
      } else if (s.kind === 'duration' && s.default !== undefined) {
        expect(defaults[field], spec.name).toBe(parseDuration(String(s.default)));
        expect(read(spec.name, '3h'), spec.name).toBe(3 * 3_600_000);
      } else if ((s.kind === 'int' || s.kind === 'dollars') && s.default !== undefined && spec.name !== 'rate-limit') {
        expect(defaults[field], spec.name).toBe(Number(s.default));
        const value = s.range ? s.range[0] + 1 : 5;
        expect(read(spec.name, value), spec.name).toBe(value);
      } else continue;
      checked += 1;
    }
    // Every plain setting is among them (a new one of these kinds is checked without a line here).
    expect(checked).toBeGreaterThanOrEqual(19);
  });
});

describe('resolveSyncConfig', () => {
  it('defaults: today (UTC) as until, 90 days back as the first-run start, all streams', () => {
    const c = resolveSyncConfig(sources());
    expect(c).toMatchObject({
      until: '2025-07-01',
      startDate: '2025-04-02',
      streams: ['line_items', 'rollups', 'anomalies'],
      lookbackDays: 3,
      windowDays: 30,
      // The recheck: the default horizon, verify's default tolerance.
      recheckDays: undefined,
      tolerance: 0.01,
      rateLimit: 60,
      db: './costs.duckdb',
      stateDir: './state',
      format: 'duckdb',
      logFormat: 'pretty',
      apiKey: 'k-env',
    });
  });

  it('takes flags over env over the file', () => {
    const file = { db: 'file.duckdb', 'window-days': 5, streams: 'rollups', 'rate-limit': 10 };
    const env = { COSTSYNC_API_KEY: 'k', COSTSYNC_BASE_URL: 'https://a.example.com', COSTSYNC_WINDOW_DAYS: '7', COSTSYNC_DB: 'env.duckdb' };
    const c = resolveSyncConfig(sources({ file, env, flags: { db: 'flag.duckdb' } }));
    expect(c).toMatchObject({ db: 'flag.duckdb', windowDays: 7, streams: ['rollups'], rateLimit: 10 });
    expect(envName('anomaly-refresh-days')).toBe('COSTSYNC_ANOMALY_REFRESH_DAYS');
  });

  it('prefers --api-key-file over COSTSYNC_API_KEY', () => {
    expect(resolveSyncConfig(sources({ flags: { 'api-key-file': '/keys/ok' } })).apiKey).toBe('k-file');
    expect(() => resolveSyncConfig(sources({ flags: { 'api-key-file': '/keys/missing' } }))).toThrow(/cannot read the key file/);
  });

  it.each([
    [{ since: '2025-02-30' }, /--since must be a real calendar date/],
    [{ since: '2025-07-02' }, /--since \(2025-07-02\) is after the last date 2025-07-01/],
    [{ until: '2025-07-02' }, /--until \(2025-07-02\) is after today \(2025-07-01, UTC\)[\s\S]*skip their lookback/],
    [{ 'lookback-days': -1 }, /--lookback-days must be a whole number from 0 to 365/],
    [{ 'window-days': 0 }, /--window-days must be a whole number from 1/],
    [{ 'recheck-days': -1 }, /--recheck-days must be a whole number from 0 to 3660/],
    [{ 'recheck-days': 1.5 }, /--recheck-days must be a whole number/],
    // Not decimal: Number() would take '' for 0, 0x10 for 16 and 1e1 for 10.
    [{ 'recheck-days': '' }, /--recheck-days must be a whole number from 0 to 3660; got ""/],
    [{ 'window-days': '0x10' }, /--window-days must be a whole number from 1 to 3660; got "0x10"/],
    [{ 'window-days': '1e1' }, /--window-days must be a whole number from 1 to 3660; got "1e1"/],
    [{ tolerance: ' ' }, /--tolerance must be a number of dollars, 0 or more; got " "/],
    [{ tolerance: 'a cent' }, /--tolerance must be a number of dollars, 0 or more; got "a cent"/],
    [{ tolerance: Number.NaN }, /--tolerance must be a number of dollars, 0 or more; got something that is not a number/],
    [{ tolerance: -0.01 }, /--tolerance must be a number of dollars, 0 or more/],
    [{ streams: 'line_items,bills' }, /unknown stream\(s\): bills/],
    [{ format: 'csv' }, /--format must be one of duckdb, parquet/],
    [{ 'max-runtime': 'soon' }, /--max-runtime must be a duration/],
    [{ 'iceberg-retention': '30' }, /--iceberg-retention 30: give a unit, for example 30d or 30s/],
    [{ 'max-runtime': 45 }, /--max-runtime 45: give a unit, for example 45d or 45s/],
    [{ 'base-url': 'http://api.example.com' }, /must use https/],
    [{ 'drop-before': '2025-07-02' }, /--drop-before \(2025-07-02\) is after the last date 2025-07-01: it would delete everything/],
    [
      { 'drop-before': '2025-06-01', since: '2025-05-01' },
      /--since \(2025-05-01\) is before --drop-before 2025-06-01: the run would sync dates it deletes/,
    ],
    [{ out: 'tour/lake2' }, /--out \(tour\/lake2\) names a lake, but --format is duckdb \(the default\), which writes none/],
    [{ out: 'tour/lake2', format: 'duckdb' }, /--out \(tour\/lake2\) names a lake, but --format is duckdb, which writes none/],
  ])('refuses %j with exit code 2 and a fix', (flags, message) => {
    let error: unknown;
    try {
      resolveSyncConfig(sources({ flags }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).message).toMatch(message);
    expect((error as ConfigError).hint).toBeTruthy();
    expect((error as ConfigError).hint).not.toMatch(/undefined/);
  });

  it('refuses an --out given without a lake format wherever it was given, naming --format; takes it with a lake format or a catalog', () => {
    expect(() => resolveSyncConfig(sources({ env: { ...sources().env, COSTSYNC_OUT: 'lake' } }))).toThrow(
      /COSTSYNC_OUT \(lake\) names a lake, but --format is duckdb \(the default\)/,
    );
    expect(() => resolveSyncConfig(sources({ file: { out: 'lake', format: 'duckdb' } }))).toThrow(
      /"out" in the config file \(lake\) names a lake, but "format" in the config file is duckdb/,
    );
    let error: unknown;
    try {
      resolveSyncConfig(sources({ flags: { out: 'lake' } }));
    } catch (e) {
      error = e;
    }
    expect((error as ConfigError).hint).toBe('Add --format parquet or --format iceberg, or leave --out out.');
    // --out's default is not the user's: a plain run is not refused for it.
    expect(resolveSyncConfig(sources())).toMatchObject({ format: 'duckdb', out: './costs-parquet' });
    expect(resolveSyncConfig(sources({ flags: { out: 'lake', format: 'parquet' } }))).toMatchObject({ format: 'parquet', out: 'lake' });
    expect(resolveSyncConfig(sources({ file: { out: 'lake' }, env: { ...sources().env, COSTSYNC_FORMAT: 'iceberg' } }))).toMatchObject({
      format: 'iceberg',
      out: 'lake',
    });
    // A catalog makes the format iceberg, so its --out (where new tables go) needs no --format.
    expect(resolveSyncConfig(sources({ flags: { out: 'lake', catalog: 'https://catalog.example.com/api' } }))).toMatchObject({
      format: 'iceberg',
      out: 'lake',
    });
  });

  it('names the source of a bad value', () => {
    expect(() =>
      resolveSyncConfig(sources({ env: { COSTSYNC_API_KEY: 'k', COSTSYNC_BASE_URL: 'https://a.b', COSTSYNC_RATE_LIMIT: 'fast' } })),
    ).toThrow(/COSTSYNC_RATE_LIMIT must be a whole number/);
    expect(() => resolveSyncConfig(sources({ file: { 'rate-limit': 'fast' } }))).toThrow(/"rate-limit" in the config file must be/);
  });

  it('asks for a key and a base URL only when the command talks to the API', () => {
    expect(() => resolveSyncConfig(sources({ env: {} }))).toThrow(/No base URL/);
    expect(() => resolveSyncConfig(sources({ env: { COSTSYNC_BASE_URL: 'https://a.b' } }))).toThrow(/No API key/);
    expect(resolveSyncConfig(sources({ env: {} }), false).db).toBe('./costs.duckdb');
  });
});

describe('requireDbDirectory (at the start of a run that writes the warehouse)', () => {
  it('refuses a local --db whose directory is missing or a file, naming it and the fix; takes an existing one and a bucket', () => {
    const dir = mkdtempSync(join(tmpdir(), 'costsync-db-dir-'));
    try {
      writeFileSync(join(dir, 'file'), '');
      for (const [db, problem] of [
        [join(dir, 'nonexistent', 'costs.duckdb'), 'does not exist'],
        [join(dir, 'nonexistent', 'deeper', 'costs.duckdb'), 'does not exist'],
        [join(dir, 'file', 'costs.duckdb'), 'is not a directory'],
        [join(dir, 'file', 'deeper', 'costs.duckdb'), 'does not exist'],
      ] as const) {
        let error: unknown;
        try {
          requireDbDirectory(db);
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as ConfigError).exitCode).toBe(2);
        expect((error as ConfigError).message).toBe(`--db ${db}: its directory ${join(db, '..')} ${problem}.`);
        expect((error as ConfigError).hint).toMatch(/^Create the directory first \(mkdir -p .*\), or fix the path in --db/);
      }
      expect(() => requireDbDirectory(join(dir, 'costs.duckdb'))).not.toThrow();
      expect(() => requireDbDirectory('s3://bucket/nonexistent/costs.duckdb')).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('parseDuration', () => {
  it('reads seconds, minutes, hours and combinations', () => {
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('45m')).toBe(2_700_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration('1h 30m')).toBeNull();
    expect(parseDuration('soon')).toBeNull();
  });
});

describe('sources in the config file', () => {
  const list = [
    { name: 'acme-eu', 'base-url': 'https://eu.example.com/', 'api-key-file': '/keys/ok' },
    { name: 'acme_us', baseUrl: 'https://us.example.com', apiKeyEnv: 'US_KEY', 'rate-limit': 120 },
  ];
  it('resolves each source with its own key and rate limit; --source picks some', () => {
    const c = resolveSyncConfig(sources({ fileSources: list, env: { US_KEY: 'k-us' }, file: { 'rate-limit': 30 } }));
    expect(c.sources).toEqual([
      {
        name: 'acme-eu',
        baseUrl: 'https://eu.example.com',
        apiKey: 'k-file',
        keyFrom: 'the key file /keys/ok (source "acme-eu"\'s "api-key-file" in the config file)',
        rateLimit: 30,
      },
      {
        name: 'acme_us',
        baseUrl: 'https://us.example.com',
        apiKey: 'k-us',
        keyFrom: 'the environment variable US_KEY (source "acme_us"\'s "api-key-env" in the config file)',
        rateLimit: 120,
      },
    ]);
    const one = resolveSyncConfig(sources({ fileSources: list, env: { US_KEY: 'k-us' }, flags: { source: 'acme_us' } }));
    expect(one.sources!.map((s) => s.name)).toEqual(['acme_us']);
    expect(one.baseUrl).toBe('https://us.example.com');
  });

  it("a source without its own base-url takes the config file's top-level one; --base-url is still refused", () => {
    const named = [
      { name: 'acme-eu', 'api-key-file': '/keys/ok' },
      { name: 'acme-us', 'base-url': 'https://us.example.com', 'api-key-file': '/keys/ok' },
    ];
    const c = resolveSyncConfig(sources({ fileSources: named, file: { 'base-url': 'https://api.example.com/' } }));
    expect(c.sources!.map((s) => [s.name, s.baseUrl])).toEqual([
      ['acme-eu', 'https://api.example.com'],
      ['acme-us', 'https://us.example.com'],
    ]);
    expect(c.baseUrl).toBe('https://api.example.com');
    expect(() => resolveSyncConfig(sources({ fileSources: named, file: { 'base-url': 'http://api.example.com' } }))).toThrow(
      /must use https/,
    );
    expect(() =>
      resolveSyncConfig(
        sources({ fileSources: named, file: { 'base-url': 'https://api.example.com' }, flags: { 'base-url': 'https://a.b' } }),
      ),
    ).toThrow(/--base-url cannot be combined with "sources"/);
    // The environment's base URL is the flag's: it names no listed workspace.
    expect(() => resolveSyncConfig(sources({ fileSources: named }))).toThrow(
      /source "acme-eu" in the config file has no "base-url", and the config file has no top-level "base-url" \(COSTSYNC_BASE_URL, like --base-url, is not used for sources\)/,
    );
  });

  it('without sources, one source named default; --source can name only it', () => {
    expect(resolveSyncConfig(sources()).sources).toBeUndefined();
    expect(() => resolveSyncConfig(sources({ flags: { source: 'eu' } }))).toThrow(/no "sources": the only source is "default"/);
  });

  it('refuses bad sources, naming the entry and the fix', () => {
    const bad =
      (fileSources: unknown, over: Partial<ConfigSources> = {}) =>
      () =>
        resolveSyncConfig(sources({ fileSources, ...over }));
    expect(bad([{ name: 'x', 'base-url': 'https://a.b', 'api-key': 'sk-1' }])).toThrow(
      /sources\[0\] in the config file holds the API key itself/,
    );
    expect(bad([{ name: 'Acme EU', 'base-url': 'https://a.b', 'api-key-file': '/keys/ok' }])).toThrow(
      /needs a "name" of lower-case letters/,
    );
    expect(bad([list[0], list[0]])).toThrow(/Two sources in the config file are named "acme-eu"/);
    expect(bad([list[1]], { env: {} })).toThrow(/the environment variable US_KEY \(its "api-key-env"\) is not set/);
    expect(bad([{ name: 'x', 'base-url': 'https://a.b' }])).toThrow(/needs exactly one of "api-key-file" and "api-key-env"/);
    expect(bad([{ name: 'x', 'base-url': 'https://a.b', 'api-key-file': '/keys/ok', colour: 'red' }])).toThrow(
      /unknown field\(s\): colour/,
    );
    expect(bad(list, { flags: { 'base-url': 'https://a.b' } })).toThrow(/--base-url cannot be combined with "sources"/);
    expect(bad([])).toThrow(ConfigError);
  });
});

describe('settings as data (settings.ts)', () => {
  it('the resolver takes every default, range and choice from the one list', async () => {
    const { SETTING_SPECS, parseDuration: duration } = await import('../../src/settings.js');
    const c = resolveSyncConfig(sources()) as unknown as Record<string, unknown>;
    const camel = (name: string) => name.replace(/-([a-z])/g, (_m, ch: string) => ch.toUpperCase());
    for (const spec of SETTING_SPECS as readonly {
      name: string;
      kind: string;
      default?: string | number;
      range?: readonly [number, number];
    }[]) {
      if (spec.default === undefined) continue;
      // A catalog's settings are its own object's, there only with --catalog (checked below).
      if (spec.name.startsWith('catalog-')) continue;
      const key = spec.kind === 'duration' ? `${camel(spec.name)}Ms` : camel(spec.name);
      const expected = spec.kind === 'duration' ? duration(String(spec.default)) : spec.default;
      expect(c[key], spec.name).toEqual(expected);
      if (spec.range) {
        expect(() => resolveSyncConfig(sources({ flags: { [spec.name]: spec.range![1] + 1 } })), spec.name).toThrow(
          new RegExp(`--${spec.name} must be a whole number from ${spec.range[0]} to ${spec.range[1]}`),
        );
      }
    }
    const catalog = resolveSyncConfig(sources({ flags: { catalog: 'http://127.0.0.1:8181/' } })).catalog!;
    const specOf = (name: string) => (SETTING_SPECS as readonly { name: string; default?: string }[]).find((x) => x.name === name)!.default;
    expect(catalog).toMatchObject({
      url: 'http://127.0.0.1:8181',
      namespace: [specOf('catalog-namespace')],
      oauthScope: specOf('catalog-oauth-scope'),
    });
  });

  it("every command's options come from it: each setting of a command's groups is a flag with its default and variable in --help", async () => {
    const { default: yargs } = await import('yargs');
    const { SETTING_SPECS, envName: env } = await import('../../src/settings.js');
    const { syncOptions } = await import('../../src/commands/sync.js');
    const help = await syncOptions(yargs([]).scriptName('costsync')).getHelp();
    for (const spec of SETTING_SPECS) {
      expect(help, spec.name).toContain(`--${spec.name}`);
      expect(help.replace(/\s+/g, ' '), spec.name).toContain(env(spec.name));
    }
  });
});

describe('--out by format', () => {
  it('each format has its own default folder; a given --out wins; the retention is a duration', () => {
    expect(resolveSyncConfig(sources()).out).toBe('./costs-parquet');
    expect(resolveSyncConfig(sources({ flags: { format: 'parquet' } })).out).toBe('./costs-parquet');
    expect(resolveSyncConfig(sources({ flags: { format: 'iceberg' } })).out).toBe('./costs-iceberg');
    expect(resolveSyncConfig(sources({ flags: { format: 'iceberg', out: 's3://acme-finops/lake' } })).out).toBe('s3://acme-finops/lake');
    expect(resolveSyncConfig(sources({ flags: { format: 'iceberg' } })).icebergRetentionMs).toBe(7 * 86_400_000);
    expect(resolveSyncConfig(sources({ flags: { 'iceberg-retention': '35d' } })).icebergRetentionMs).toBe(35 * 86_400_000);
    expect(() => resolveSyncConfig(sources({ flags: { format: 'delta' } }))).toThrow(ConfigError);
  });
});

describe('decimal: a number only as written in decimal', () => {
  it('takes whole numbers, signs and fractions, as strings or numbers', () => {
    expect([decimal('12'), decimal(' -3 '), decimal('0.05'), decimal('.5'), decimal(7)]).toEqual([12, -3, 0.05, 0.5, 7]);
  });
  it('takes no empty, hexadecimal, exponent or unit-bearing text for a number', () => {
    for (const text of ['', ' ', '0x10', '1e3', '7d', 'Infinity', '1_000', null, true])
      expect(Number.isNaN(decimal(text)), String(text)).toBe(true);
  });
});

describe('the rules the run dates keep against each other', () => {
  const ok: RunDates = {
    today: '2025-07-01',
    until: '2025-06-30',
    since: '2025-06-01',
    startDate: '2025-04-01',
    dropBefore: '2025-05-01',
    startDateGiven: true,
  };
  /** The name of the first rule `dates` break, or null. */
  const broken = (dates: RunDates): string | null => {
    for (const rule of DATE_RULES) {
      try {
        rule.check(dates, (name) => `--${name}`);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return rule.name;
      }
    }
    return null;
  };

  it('each is named, and each refuses its case alone', () => {
    expect(broken(ok)).toBeNull();
    expect(broken({ ...ok, until: '2025-07-02' })).toBe('until is not after today');
    expect(broken({ ...ok, since: '2025-07-01', dropBefore: undefined })).toBe('since is not after until');
    expect(broken({ ...ok, dropBefore: '2025-07-01', since: undefined })).toBe('drop-before is not after until');
    expect(broken({ ...ok, since: '2025-04-30' })).toBe('since is not before drop-before');
    expect(broken({ ...ok, startDate: '2025-07-01' })).toBe('start-date is not after until');
    // A default start date is never checked against --until: it is made before it.
    expect(broken({ ...ok, startDate: '2025-07-01', startDateGiven: false })).toBeNull();
  });
});

describe('the rules between settings', () => {
  const given = (flags: Record<string, unknown>, format: GivenSettings['format'], catalog = false): GivenSettings => ({
    pick: (name) => (flags[name] === undefined ? undefined : { value: flags[name], from: `--${name}` }),
    format,
    catalog,
  });
  const refusal = (rule: SettingRule, g: GivenSettings): string | null => {
    try {
      rule.check(g);
      return null;
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).message;
    }
  };

  it('a catalog refuses another format named, and takes none or iceberg', () => {
    expect(CATALOG_RULE.name).toBe('a catalog commits Iceberg tables');
    expect(refusal(CATALOG_RULE, given({ format: 'parquet' }, 'parquet', true))).toBe(
      '--catalog commits Iceberg tables, but --format is parquet.',
    );
    expect(refusal(CATALOG_RULE, given({}, 'duckdb', true))).toBeNull();
    expect(refusal(CATALOG_RULE, given({ format: 'iceberg' }, 'iceberg', true))).toBeNull();
    expect(refusal(CATALOG_RULE, given({ format: 'parquet' }, 'parquet'))).toBeNull();
  });

  it('{shard} only in the paths of a shard, and --out only with a lake format, in that order', () => {
    const [shard, out] = PLACE_RULES;
    expect(PLACE_RULES.map((r) => r.name)).toEqual([
      '{shard} only in --db, --state-dir and --out',
      '--out names a lake only with a lake format',
    ]);
    expect(refusal(shard!, given({ 'metrics-file': 'm-{shard}.prom' }, 'duckdb'))).toContain('--metrics-file holds {shard}');
    expect(refusal(shard!, given({ db: 'c-{shard}.duckdb', out: 'lake-{shard}' }, 'parquet'))).toBeNull();
    expect(refusal(out!, given({ out: 'lake' }, 'duckdb'))).toBe(
      '--out (lake) names a lake, but --format is duckdb (the default), which writes none.',
    );
    expect(refusal(out!, given({ out: 'lake' }, 'parquet'))).toBeNull();
    expect(refusal(out!, given({ out: 'lake' }, 'duckdb', true))).toBeNull();
  });
});
