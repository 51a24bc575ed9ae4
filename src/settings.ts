/**
 * Every setting, declared once as data (CloudQuery's SDK declares its specs so): its name (the flag,
 * the config file's key, and `COSTSYNC_<NAME>`), kind, default, range or choices, what it does, and
 * which commands take it. The commands' yargs options, the config file's known keys and the
 * resolver's checks (`config.ts`) are all made from this list, and so are the value checks of
 * command-line-only flags (the emulator's, the report's): one message per kind of bad value.
 */
import type { Argv } from 'yargs';
import { STREAM_NAMES } from './api/types.js';
import { isCalendarDate } from './dates.js';
import { ConfigError } from './errors.js';

export type SettingKind = 'string' | 'path' | 'int' | 'dollars' | 'bool' | 'date' | 'duration' | 'choice' | 'list' | 'urls';
/**
 * The groups a setting belongs to, and so the commands that take it: `connection` (every command that
 * talks to the API or the warehouse; `--shard` is one, so each reads its shard's `{shard}` paths), `rate` (sync, push), `notify` (sync, notify), `lease` (sync, push),
 * `sync` (sync's own), `catalog` (sync, check: an Iceberg REST catalog's).
 */
export type SettingGroup = 'connection' | 'rate' | 'notify' | 'sync' | 'lease' | 'catalog';

export interface SettingSpec {
  name: string;
  kind: SettingKind;
  describe: string;
  group: SettingGroup;
  /** As a person writes it (shown in --help): a number, a duration such as `10m`, a path. */
  default?: string | number;
  range?: readonly [number, number];
  choices?: readonly string[];
  /** For durations: the shortest allowed, in ms. */
  minMs?: number;
  /** Shown instead of the default when the default is computed (`today, UTC`). */
  defaultText?: string;
  /** A value for an error's hint, where the default is computed (none to show). */
  example?: number;
}

/**
 * Sources syncing at once for each CPU core when --sources-at-once is 0: as many as one core keeps at
 * their keys' full budget (docs/benchmarks.md, "Several sources"); more only share the same throughput.
 */
export const SOURCES_PER_CORE = 30;

export const SETTING_SPECS = [
  { name: 'base-url', kind: 'string', group: 'connection', describe: 'API base URL', defaultText: 'none' },
  {
    name: 'source',
    kind: 'list',
    group: 'connection',
    describe: 'Only these sources of the config file\'s "sources" (comma list)',
    defaultText: 'all',
  },
  {
    name: 'shard',
    kind: 'string',
    group: 'connection',
    describe:
      "Be shard I of N (I/N, numbered from 1): only the config file's sources this shard owns (rendezvous hashing of their names); {shard} in --db, --state-dir and --out becomes I",
    defaultText: 'none',
  },
  {
    name: 'shard-count',
    kind: 'int',
    group: 'connection',
    range: [1, 10_000],
    describe: 'Be one of N shards, I being JOB_COMPLETION_INDEX + 1 (a Kubernetes Indexed Job); as --shard I/N otherwise',
    defaultText: 'none',
  },
  { name: 'api-key-file', kind: 'path', group: 'connection', describe: 'File holding the API key (or COSTSYNC_API_KEY)' },
  {
    name: 'db',
    kind: 'path',
    group: 'connection',
    default: './costs.duckdb',
    describe:
      'The published DuckDB file people open (a path in a directory that exists, or s3://BUCKET/KEY.duckdb); costsync writes a working copy in --state-dir',
  },
  { name: 'state-dir', kind: 'path', group: 'connection', default: './state', describe: 'State directory' },
  { name: 'log-format', kind: 'choice', group: 'connection', default: 'pretty', choices: ['pretty', 'json'], describe: 'Log format' },
  { name: 'quiet', kind: 'bool', group: 'connection', describe: 'Warnings and errors only' },
  { name: 'verbose', kind: 'bool', group: 'connection', describe: 'Debug lines too, and stack traces with errors' },
  { name: 'rate-limit', kind: 'int', group: 'rate', default: 60, range: [1, 1_000_000], describe: 'Requests a minute' },
  {
    name: 'notify',
    kind: 'urls',
    group: 'notify',
    describe: 'Webhook URL told about failed runs and new anomalies (repeatable; a secret, never logged; env: space-separated)',
  },
  {
    name: 'notify-format',
    kind: 'choice',
    group: 'notify',
    default: 'json',
    choices: ['json', 'slack'],
    describe: 'json: {text, events}; slack: {text} only',
  },
  {
    name: 'streams',
    kind: 'list',
    group: 'sync',
    choices: STREAM_NAMES,
    describe: 'Comma list of line_items,rollups,anomalies',
    defaultText: 'all',
  },
  { name: 'since', kind: 'date', group: 'sync', describe: 'Backfill: re-sync from this date (YYYY-MM-DD)' },
  { name: 'until', kind: 'date', group: 'sync', describe: 'Last date to sync (YYYY-MM-DD); not after today', defaultText: 'today, UTC' },
  {
    name: 'start-date',
    kind: 'date',
    group: 'sync',
    describe: 'Where a first run starts (YYYY-MM-DD)',
    defaultText: '90 days before today',
  },
  { name: 'lookback-days', kind: 'int', group: 'sync', default: 3, range: [0, 365], describe: 'Days re-synced on every incremental run' },
  { name: 'window-days', kind: 'int', group: 'sync', default: 30, range: [1, 3660], describe: 'Days per unit of progress' },
  {
    name: 'tolerance',
    kind: 'dollars',
    group: 'sync',
    default: 0.01,
    describe:
      "Largest difference per date and group, in dollars, that the recheck does not count as a change (verify's --tolerance, the same default)",
  },
  {
    name: 'recheck-days',
    kind: 'int',
    group: 'sync',
    range: [0, 3660],
    example: 45,
    defaultText: '45, or back to the first of the previous month when that is earlier',
    describe:
      "Days before the last date whose stored totals every incremental run compares with the API's rollups (3 requests a source), syncing again the dates that changed; 0: no recheck",
  },
  {
    name: 'full-refresh',
    kind: 'bool',
    group: 'sync',
    describe:
      'Re-sync every stored date, from the earliest the warehouse holds (or from --since), whatever the saved state says; deletes no date it does not re-sync',
  },
  {
    name: 'drop-before',
    kind: 'date',
    group: 'sync',
    describe:
      'Delete the stored line items and rollups dated before this date (YYYY-MM-DD) and sync nothing before it: the one way to prune history',
  },
  { name: 'max-runtime', kind: 'duration', group: 'sync', minMs: 1, describe: 'Stop cleanly after this long, e.g. 45m (exit code 4)' },
  {
    name: 'format',
    kind: 'choice',
    group: 'sync',
    default: 'duckdb',
    choices: ['duckdb', 'parquet', 'iceberg'],
    describe: 'Also write a lake to --out: parquet (hive-partitioned files) or iceberg (Apache Iceberg tables)',
  },
  {
    name: 'out',
    kind: 'path',
    group: 'sync',
    default: './costs-parquet',
    defaultText: './costs-parquet, or ./costs-iceberg with --format iceberg',
    describe:
      'The lake --format parquet or iceberg writes (refused with --format duckdb, which writes none): a directory, or s3://BUCKET/PREFIX',
  },
  {
    name: 'iceberg-retention',
    kind: 'duration',
    group: 'sync',
    default: '7d',
    minMs: 0,
    describe: 'With --format iceberg: snapshots kept for time travel; older ones expire and their files are deleted',
  },
  {
    name: 'catalog',
    kind: 'string',
    group: 'catalog',
    describe:
      'Commit the lake as Iceberg tables through this Iceberg REST catalog (its base URL, e.g. https://host/api/catalog; implies --format iceberg); --out is then where new tables go (else the catalog places them)',
  },
  {
    name: 'catalog-warehouse',
    kind: 'string',
    group: 'catalog',
    describe: 'With --catalog: the warehouse to ask the catalog for (its name, an account id or a table bucket ARN)',
  },
  {
    name: 'catalog-namespace',
    kind: 'string',
    group: 'catalog',
    default: 'costsync',
    describe: 'With --catalog: the namespace of the tables (a dotted name is a multi-level namespace); created when missing',
  },
  {
    name: 'catalog-oauth-uri',
    kind: 'string',
    group: 'catalog',
    defaultText: '<catalog>/v1/oauth/tokens',
    describe: "With --catalog and COSTSYNC_CATALOG_CREDENTIAL: the OAuth2 token endpoint (the catalog's own one is deprecated)",
  },
  {
    name: 'catalog-oauth-scope',
    kind: 'string',
    group: 'catalog',
    default: 'catalog',
    describe: 'With COSTSYNC_CATALOG_CREDENTIAL: the OAuth2 scope asked for (Polaris: PRINCIPAL_ROLE:ALL)',
  },
  {
    name: 'catalog-sigv4',
    kind: 'choice',
    group: 'catalog',
    choices: ['glue', 's3tables'],
    describe:
      "With --catalog: sign requests with AWS SigV4 for AWS Glue's or S3 Tables' Iceberg endpoint (AWS credentials from the default chain)",
  },
  {
    name: 'catalog-sigv4-region',
    kind: 'string',
    group: 'catalog',
    defaultText: 'AWS_REGION',
    describe: 'With --catalog-sigv4: the AWS region',
  },
  {
    name: 'iceberg-maintenance',
    kind: 'choice',
    group: 'sync',
    choices: ['on', 'off'],
    defaultText: 'on (off with --catalog-sigv4 s3tables)',
    describe:
      'With --format iceberg: expire snapshots past --iceberg-retention and remove unreferenced files (off where the catalog maintains tables itself)',
  },
  {
    name: 'iceberg-repair',
    kind: 'bool',
    group: 'sync',
    describe:
      'With --format iceberg: a table missing a file its current snapshot names gets a new snapshot of what can still be read, its history kept; the missing rows are written again from the warehouse',
  },
  {
    name: 'anomaly-refresh-days',
    kind: 'int',
    group: 'sync',
    default: 30,
    range: [0, 3660],
    describe:
      'Days of anomalies re-read every run for status changes; those since the recheck horizon (--recheck-days) are re-read whatever this says',
  },
  { name: 'concurrency', kind: 'int', group: 'sync', default: 4, range: [1, 64], describe: 'Windows fetched at once per stream' },
  {
    name: 'sources-at-once',
    kind: 'int',
    group: 'sync',
    default: 0,
    range: [0, 100_000],
    defaultText: `0 (${SOURCES_PER_CORE} a CPU core)`,
    describe: `Sources of the config file's "sources" syncing at once; the others wait their turn (0: ${SOURCES_PER_CORE} for each CPU core, as many as a core keeps at their keys' full rate limit, in bounded memory)`,
  },
  {
    name: 'notify-severity',
    kind: 'choice',
    group: 'sync',
    default: 'high',
    choices: ['low', 'medium', 'high', 'critical'],
    describe: 'Lowest anomaly severity to send',
  },
  { name: 'notify-status-changes', kind: 'bool', group: 'sync', describe: 'Also send anomaly status changes' },
  {
    name: 'notify-max-age',
    kind: 'duration',
    group: 'sync',
    default: '48h',
    describe: 'Anomalies detected longer ago are stored, not sent',
  },
  {
    name: 'metrics-file',
    kind: 'path',
    group: 'sync',
    describe: 'Write Prometheus metrics here after every run (for node_exporter textfile collector)',
  },
  {
    name: 'reconcile',
    kind: 'choice',
    group: 'sync',
    default: 'on',
    choices: ['on', 'strict', 'off'],
    describe:
      'Check each window against its rollups before it commits and fetch it again when they disagree; strict: a disagreement left is a failure',
  },
  {
    name: 'publish-interval',
    kind: 'duration',
    group: 'sync',
    default: '10m',
    describe:
      'During a long run, publish --db after a window when the last publish is older than this; small fetched windows wait at most half of it to be stored together; 0: store and publish after every window',
  },
  {
    name: 'lease',
    kind: 'choice',
    group: 'lease',
    default: 'on',
    choices: ['on', 'off'],
    describe:
      'With --db or --out in a bucket, keep runners on different machines apart with a lease object (off: you keep them apart, e.g. concurrencyPolicy: Forbid)',
  },
  {
    name: 'lease-ttl',
    kind: 'duration',
    group: 'lease',
    default: '10m',
    minMs: 3_000,
    describe: "A lease not renewed for this long (by the bucket's clock) is stale and may be taken over",
  },
] as const satisfies readonly SettingSpec[];

export type SettingName = (typeof SETTING_SPECS)[number]['name'];

/** Where settings come from, in order of precedence: flags, the environment, the config file (and its `sources`). */
export interface ConfigSources {
  flags: Partial<Record<SettingName, unknown>>;
  env: NodeJS.ProcessEnv;
  file: Partial<Record<SettingName, unknown>>;
  /** The config file's `sources` list, when it has one. */
  fileSources?: unknown;
  nowMs: number;
  /** Reads the key file; injected so the resolution stays testable. */
  readKeyFile?: (path: string) => string;
}

/** Every setting's name: the flags, the config file's keys. */
export const SETTINGS: readonly SettingName[] = SETTING_SPECS.map((s) => s.name);

export function specOf(name: SettingName): SettingSpec {
  return SETTING_SPECS.find((s) => s.name === name)!;
}

/** `apiKeyFile` → `api-key-file`: config files may spell keys either way. */
export const camelToKebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** `COSTSYNC_BASE_URL` for `base-url`, and so on. */
export function envName(setting: string): string {
  return `COSTSYNC_${setting.toUpperCase().replaceAll('-', '_')}`;
}

/** The yargs options of the settings in `groups`, with no yargs defaults (so flags > env > file holds). */
export function settingOptions(yargs: Argv, groups: readonly SettingGroup[]): Argv {
  let out = yargs.option('config', { type: 'string', describe: 'Config file (default ./costsync.config.json when present)' });
  for (const spec of SETTING_SPECS as readonly SettingSpec[]) {
    if (!groups.includes(spec.group)) continue;
    const fallback = spec.defaultText ?? (spec.default === undefined ? null : String(spec.default));
    const describe = `${spec.describe}${fallback === null ? '' : ` [default ${fallback}]`} [env ${envName(spec.name)}]`;
    out = out.option(
      spec.name,
      spec.kind === 'choice'
        ? { choices: spec.choices!, describe }
        : spec.kind === 'bool'
          ? { type: 'boolean', describe }
          : spec.kind === 'int' || spec.kind === 'dollars'
            ? { type: 'number', describe }
            : spec.kind === 'urls'
              ? { type: 'string', array: true, describe }
              : { type: 'string', describe },
    );
  }
  return out;
}

/** Milliseconds of a duration such as `90s`, `30m`, `2h`, `1h30m`, or a bare number of seconds. Pure. */
export function parseDuration(text: string): number | null {
  const trimmed = text.trim();
  // A number alone could mean seconds or days (30 as --iceberg-retention): only 0 means one thing.
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) === 0 ? 0 : null;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(trimmed); m; m = re.exec(trimmed)) {
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms'];
    total += Number(m[1]) * unit;
    matched = re.lastIndex;
  }
  return matched === trimmed.length && matched > 0 ? Math.round(total) : null;
}

/**
 * A number as written in decimal (`12`, `-3`, `0.05`), or NaN: `''`, `0x10`, `1e3` and `7d` are not taken
 * for numbers, as `Number()` would take the first three. Pure.
 */
export function decimal(value: unknown): number {
  if (typeof value === 'number') return value;
  return typeof value === 'string' && /^\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*$/.test(value) ? Number(value) : Number.NaN;
}

/**
 * The value checks every setting and command-line flag shares: each names where the value came from
 * (`--flag`, `COSTSYNC_FLAG`, `"flag" in the config file`) and the fix, as a ConfigError (exit 2). Pure.
 */
export const check = {
  int(from: string, value: unknown, min: number, max: number, example: number): number {
    const n = decimal(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      // yargs hands a flag of type number that is not one over as NaN (JSON.stringify would say "null").
      const got = typeof value === 'number' && Number.isNaN(value) ? 'something that is not a number' : JSON.stringify(value);
      throw new ConfigError(
        `${from} must be a whole number from ${min} to ${max}; got ${got}.`,
        `For example ${from.startsWith('--') ? from : 'the value'} ${example}.`,
      );
    }
    return n;
  },
  /** An amount of money, 0 or more (a tolerance): the same words for `sync --tolerance` and `verify --tolerance`. */
  dollars(from: string, value: unknown): number {
    const n = decimal(value);
    if (!Number.isFinite(n) || n < 0) {
      const got = typeof value === 'number' && Number.isNaN(value) ? 'something that is not a number' : JSON.stringify(value);
      throw new ConfigError(
        `${from} must be a number of dollars, 0 or more; got ${got}.`,
        `For example ${from.startsWith('--') ? from : 'the value'} 0.01 (one cent).`,
      );
    }
    return n;
  },
  bool(from: string, value: unknown): boolean {
    if (typeof value === 'boolean') return value;
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    throw new ConfigError(`${from} must be true or false; got ${JSON.stringify(value)}.`, 'Use true or false.');
  },
  date(from: string, value: unknown): string {
    if (typeof value !== 'string' || !isCalendarDate(value)) {
      throw new ConfigError(`${from} must be a real calendar date as YYYY-MM-DD; got ${JSON.stringify(value)}.`, 'For example 2025-01-31.');
    }
    return value;
  },
  /**
   * A last date (sync's --until, report's --to) not after `today`, UTC: no costs exist for days that
   * have not happened. `why` says what taking one would do; `fix` how to pass a good one.
   */
  notFuture(from: string, date: string, today: string, why: string, fix: string): string {
    if (date > today) throw new ConfigError(`${from} (${date}) is after today (${today}, UTC): ${why}`, fix);
    return date;
  },
  /** A first date (sync's --since, --start-date and --drop-before, report's --from) on or before the last, `last`. */
  notAfter(from: string, date: string, last: string, fix: string, why = ''): string {
    if (date > last) throw new ConfigError(`${from} (${date}) is after the last date ${last}${why}.`, fix);
    return date;
  },
  /**
   * A list of some of `choices` (a comma list, or an array in the config file), each once, in the order
   * given; `noun` names an item in the error (`stream`).
   */
  list<T extends string>(from: string, value: unknown, choices: readonly T[], noun: string): T[] {
    const items = (Array.isArray(value) ? value.map(String) : String(value).split(',')).map((s) => s.trim()).filter((s) => s !== '');
    const unknown = items.filter((s) => !choices.includes(s as T));
    if (unknown.length > 0 || items.length === 0)
      throw new ConfigError(
        `${from} names unknown ${noun}(s): ${unknown.join(', ') || '(none given)'}.`,
        `Use a comma list of ${choices.join(',')}.`,
      );
    return [...new Set(items as T[])];
  },
  choice<T extends string>(from: string, value: unknown, choices: readonly T[]): T {
    if (!choices.includes(value as T))
      throw new ConfigError(
        `${from} must be one of ${choices.join(', ')}; got ${JSON.stringify(value)}.`,
        // A flag's example as it is typed; a config file's value alone.
        `For example ${from.startsWith('--') ? `${from} ${choices[0]}` : choices[0]}.`,
      );
    return value as T;
  },
  duration(from: string, value: unknown, minMs: number, example: string): number {
    const text = String(value).trim();
    if (/^\d+(\.\d+)?$/.test(text) && Number(text) !== 0) {
      throw new ConfigError(
        `${from} ${text}: give a unit, for example ${text}d or ${text}s.`,
        `A number alone could mean seconds or days; write it with its unit (ms, s, m, h or d), as in ${example}.`,
      );
    }
    const parsed = parseDuration(text);
    if (parsed === null || parsed < minMs) {
      const least = minMs > 1 ? ` of at least ${minMs / 1000}s,` : '';
      throw new ConfigError(
        `${from} must be a duration${least} such as 90s, 30m or 2h${minMs === 0 ? ', or 0' : minMs === 1 ? ' (more than 0)' : ''}; got ${JSON.stringify(value)}.`,
        `For example ${from.startsWith('--') ? from : 'the value'} ${example}.`,
      );
    }
    return parsed;
  },
  string(from: string, value: unknown): string {
    if (typeof value !== 'string' || value.trim() === '')
      throw new ConfigError(`${from} must be a non-empty string.`, `Set ${from} to a value.`);
    return value.trim();
  },
};
