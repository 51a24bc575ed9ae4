/**
 * One typed configuration for `sync` (and the commands that share its options), resolved once:
 * flags win over environment variables, which win over the config file, which wins over defaults.
 * Every bad value gets a ConfigError (exit code 2) naming the setting and the fix.
 */
import { isS3Url, parseS3Url } from './outputs/s3-url.js';
import { selectSources, urlList, type SourceConfig } from './sources.js';
import { SHARD_PLACEHOLDER, resolveShard, substituteShard, type Shard } from './shards.js';
import { SETTINGS, camelToKebab, check, envName, parseDuration, specOf, type SETTING_SPECS, type SettingName } from './settings.js';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { addDays, utcDate } from './dates.js';
import { ConfigError, InternalError } from './errors.js';
import { closest } from './did-you-mean.js';
import { duckdbThreads, memoryLimit } from './storage/duckdb-settings.js';
import type { StreamName } from './api/types.js';
import type { ConfigSources } from './settings.js';
export type { ConfigSources };

/** A first run starts this many days before today (`--start-date`'s default). */
export const FIRST_RUN_DAYS = 90;

export interface SyncConfig {
  /** The first selected source's API and key (the only one's, without `sources`). */
  baseUrl: string;
  apiKey: string;
  /** Where that key came from (`COSTSYNC_API_KEY`, `the key file P (--api-key-file)`): a refused key's hint names it. */
  apiKeyFrom?: string;
  /** The sources to sync (after `--source` and `--shard`); absent means one `default` source from baseUrl and apiKey. */
  sources?: SourceConfig[];
  /** `--shard I/N` or `--shard-count N`: this run's shard, and how many sources it was chosen from (the selection before the split). */
  shard?: Shard & { sourcesBeforeSplit: number; narrowedBySource: boolean };
  db: string;
  stateDir: string;
  streams: StreamName[];
  since: string | undefined;
  until: string;
  /** Today (UTC) when the settings were resolved: state that reaches past it is mended. */
  today?: string;
  startDate: string;
  lookbackDays: number;
  /** `--recheck-days`: the recheck horizon (null: the default, `horizonStart`; 0: none). */
  recheckDays: number | undefined;
  /** `--tolerance`: the largest difference per date and group, in dollars, the recheck does not count as a change. */
  tolerance: number;
  windowDays: number;
  fullRefresh: boolean;
  /** `--drop-before`: stored line items and rollups dated before it are deleted; nothing before it is synced. */
  dropBefore: string | undefined;
  rateLimit: number;
  maxRuntimeMs: number | undefined;
  format: 'duckdb' | 'parquet' | 'iceberg';
  /** `--iceberg-retention`: how long Iceberg snapshots are kept. */
  icebergRetentionMs: number;
  /** The lake (`--out`); with a catalog, where new tables go ('' : where the catalog places them). */
  out: string;
  /** `--catalog` and its settings: the Iceberg tables are committed through a REST catalog. */
  catalog: CatalogSettings | null;
  /** `--iceberg-maintenance`: costsync expires snapshots and removes unreferenced files (off where a catalog does). */
  icebergMaintenance: boolean;
  /** `--iceberg-repair`: a table missing a file its current snapshot names gets a new snapshot of what can be read. */
  icebergRepair: boolean;
  logFormat: 'pretty' | 'json';
  quiet: boolean;
  /** Debug lines, and stacks with errors. */
  verbose: boolean;
  anomalyRefreshDays: number;
  concurrency: number;
  /** Sources syncing at once (0: `SOURCES_PER_CORE` for each CPU core, `sourcesAtOnce`); the others wait their turn. */
  sourcesAtOnce: number;
  /** Check each fetched window against its rollups: `on` re-fetches and warns, `strict` fails, `off` skips. */
  reconcile: 'on' | 'strict' | 'off';
  /** Webhook URLs (secrets) told about failed runs and new anomalies; each source may add its own. */
  notify: string[];
  notifySeverity: 'low' | 'medium' | 'high' | 'critical';
  notifyStatusChanges: boolean;
  /** Anomalies detected longer ago than this are stored but not sent. */
  notifyMaxAgeMs: number;
  notifyFormat: 'json' | 'slack';
  /** Prometheus text file written after every run (node_exporter's textfile collector). */
  metricsFile: string | undefined;
  /** During a run, publish after a commit when the last publish is older than this (0: after every commit). */
  publishIntervalMs: number;
  /** With the warehouse or lake in a bucket: a lease keeps runners on different machines apart. */
  lease: 'on' | 'off';
  leaseTtlMs: number;
}

/** An Iceberg REST catalog's settings (`--catalog…`); its secrets come from the environment only. */
export interface CatalogSettings {
  url: string;
  warehouse: string | undefined;
  /** Its levels (`a.b` is `['a', 'b']`). */
  namespace: string[];
  oauthUri: string | undefined;
  oauthScope: string;
  sigv4: 'glue' | 's3tables' | undefined;
  sigv4Region: string | undefined;
  /** The environment's catalog credentials (`COSTSYNC_CATALOG_TOKEN`, `COSTSYNC_CATALOG_CREDENTIAL`) and `AWS_REGION`: secrets, never logged. */
  env: NodeJS.ProcessEnv;
}

/** What the config file holds. */
export interface ConfigFile {
  path: string | null;
  values: Partial<Record<SettingName, unknown>>;
  /** The `sources` list, unchecked (resolveSyncConfig checks it). */
  sources?: unknown;
}

/** Reads the config file: `--config PATH`, else `./costsync.config.json` when present. */
export function readConfigFile(path: string | undefined, cwd = process.cwd()): ConfigFile {
  const file = path ?? (existsSync(resolve(cwd, 'costsync.config.json')) ? resolve(cwd, 'costsync.config.json') : null);
  if (file === null) return { path: null, values: {} };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    // A missing file is most often a typo in the path: say so, not how reading it failed.
    const missing = (cause as NodeJS.ErrnoException).code === 'ENOENT';
    throw new ConfigError(
      missing ? `The config file ${file} was not found.` : `The config file ${file} cannot be read: ${(cause as Error).message}`,
      missing
        ? `Check the path given to --config (relative paths start from ${cwd}).`
        : 'Make the file readable, or pass --config with another one.',
      cause,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(
      `The config file ${file} cannot be read as JSON: ${(cause as Error).message}`,
      'Fix the file, or pass --config with another one.',
      cause,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(
      `The config file ${file} must hold a JSON object of settings.`,
      'For example {"base-url": "https://…", "db": "./costs.duckdb"}.',
    );
  }
  const values: Partial<Record<SettingName, unknown>> = {};
  let sources: unknown;
  for (const [rawKey, value] of Object.entries(parsed)) {
    const key = camelToKebab(rawKey);
    if (key === 'sources') {
      sources = value;
      continue;
    }
    if (key === 'api-key') {
      throw new ConfigError(
        `The config file ${file} holds the API key itself.`,
        'Keep the key out of config files: use "api-key-file", or the COSTSYNC_API_KEY environment variable.',
      );
    }
    if (!(SETTINGS as readonly string[]).includes(key)) {
      const meant = closest(key, [...SETTINGS, 'sources']);
      throw new ConfigError(
        `The config file ${file} has an unknown setting "${rawKey}"${meant === null ? '' : ` (did you mean "${meant}"?)`}.`,
        `Known settings: ${SETTINGS.join(', ')}, sources.`,
      );
    }
    values[key as SettingName] = value;
  }
  return sources === undefined ? { path: file, values } : { path: file, values, sources };
}

/** Resolves and checks every setting. Needs a key and a base URL only when `needsApi`. */
type SpecNamed<N extends SettingName> = Extract<(typeof SETTING_SPECS)[number], { name: N }>;
type Camel<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;
/** A setting's value as its kind reads it: a duration in ms, a choice one of its choices, a list some of them. */
type KindValue<S> = S extends { kind: 'int' | 'dollars' | 'duration' }
  ? number
  : S extends { kind: 'bool' }
    ? boolean
    : S extends { kind: 'choice'; choices: readonly (infer C)[] }
      ? C
      : S extends { kind: 'list'; choices: readonly (infer C)[] }
        ? C[]
        : S extends { kind: 'urls' }
          ? string[]
          : S extends { kind: 'path' | 'date' }
            ? string
            : never;
/** Unset, a setting is its default; one without a default is absent (a flag false, a list every choice, URLs none). */
type Valued<S> = S extends { default: unknown } | { kind: 'bool' | 'list' | 'urls' } ? KindValue<S> : KindValue<S> | undefined;
/** The SyncConfig field a setting fills: its name in camelCase, with `Ms` after a duration's. */
type FieldName<N extends SettingName> = SpecNamed<N> extends { kind: 'duration' } ? `${Camel<N>}Ms` : Camel<N>;
type PlainFields<Names extends SettingName> = { [N in Names as FieldName<N>]: Valued<SpecNamed<N>> };

/**
 * Settings whose SyncConfig field follows from the spec alone (name, kind, default, range, choices): each
 * is read in one loop below, so adding one is a line in SETTING_SPECS and its name here. The others
 * need more than their own value: the dates with computed defaults, checked against each other
 * (DATE_RULES); the paths with {shard}; the catalog and the format it implies; the sources.
 */
const PLAIN_SETTINGS = [
  'lookback-days',
  'tolerance',
  'window-days',
  'full-refresh',
  'iceberg-retention',
  'iceberg-repair',
  'log-format',
  'quiet',
  'verbose',
  'anomaly-refresh-days',
  'concurrency',
  'sources-at-once',
  'publish-interval',
  'lease',
  'lease-ttl',
  'reconcile',
  'notify-severity',
  'notify-status-changes',
  'notify-max-age',
  'notify-format',
  'streams',
  'since',
  'drop-before',
  'recheck-days',
  'max-runtime',
  'notify',
  'metrics-file',
] as const satisfies readonly SettingName[];

// Each plain setting's field is one SyncConfig declares, of the type it declares: tsc fails here otherwise.
type PlainConfig = PlainFields<(typeof PLAIN_SETTINGS)[number]>;
const plainFieldsFit: PlainConfig extends Pick<SyncConfig, keyof PlainConfig & keyof SyncConfig>
  ? Exclude<keyof PlainConfig, keyof SyncConfig> extends never
    ? true
    : false
  : false = true;
void plainFieldsFit;

/** A setting's field name in SyncConfig (`FieldName`). Pure. */
export function fieldName(name: SettingName): string {
  const camel = name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  return specOf(name).kind === 'duration' ? `${camel}Ms` : camel;
}

/** The sources a run syncs: the config file's, or the one the flags name (`default`). Pure. */
export function configSources(config: SyncConfig): SourceConfig[] {
  return (
    config.sources ?? [
      {
        name: 'default',
        baseUrl: config.baseUrl,
        apiKey: config.apiKey,
        rateLimit: config.rateLimit,
        ...(config.apiKeyFrom !== undefined && { keyFrom: config.apiKeyFrom }),
      },
    ]
  );
}

export function resolveSyncConfig(sources: ConfigSources, needsApi = true): SyncConfig {
  const { flags, env, file } = sources;
  const pick = (name: SettingName): { value: unknown; from: string } | undefined => {
    if (flags[name] !== undefined) return { value: flags[name], from: `--${name}` };
    const e = env[envName(name)];
    if (e !== undefined && e !== '') return { value: e, from: envName(name) };
    if (file[name] !== undefined) return { value: file[name], from: `"${name}" in the config file` };
    return undefined;
  };
  const bad = (from: string, problem: string, fix: string): never => {
    throw new ConfigError(`${from} ${problem}`, fix);
  };
  // Each kind of value is checked one way (settings.ts); defaults, ranges and choices come from the spec.
  const spec = (name: SettingName) => specOf(name);
  const str = (name: SettingName): string => {
    const v = pick(name);
    return v === undefined ? String(spec(name).default ?? '') : check.string(v.from, v.value);
  };
  const int = (name: SettingName): number => {
    const v = pick(name);
    const { default: fallback, range, example } = spec(name) as { default: number; range: readonly [number, number]; example?: number };
    return v === undefined ? fallback : check.int(v.from, v.value, range[0], range[1], example ?? fallback);
  };
  const bool = (name: SettingName): boolean => {
    const v = pick(name);
    return v === undefined ? false : check.bool(v.from, v.value);
  };
  const date = (name: SettingName): string | undefined => {
    const v = pick(name);
    return v === undefined ? undefined : check.date(v.from, v.value);
  };
  const choice = <T extends string>(name: SettingName): T => {
    const v = pick(name);
    const { default: fallback, choices } = spec(name) as unknown as { default: T; choices: readonly T[] };
    return v === undefined ? fallback : check.choice(v.from, v.value, choices);
  };
  const dollars = (name: SettingName): number => {
    const v = pick(name);
    return v === undefined ? Number(spec(name).default) : check.dollars(v.from, v.value);
  };
  const duration = (name: SettingName): number | undefined => {
    const v = pick(name);
    const { default: fallback, minMs } = spec(name);
    if (v === undefined) return fallback === undefined ? undefined : parseDuration(String(fallback))!;
    return check.duration(v.from, v.value, minMs ?? 0, String(fallback ?? '45m'));
  };

  const today = utcDate(sources.nowMs);
  const until = date('until') ?? today;
  const since = date('since');
  const startDate = date('start-date') ?? addDays(until < today ? until : today, -FIRST_RUN_DAYS);
  const dropBefore = date('drop-before');
  const dates: RunDates = { today, until, since, startDate, dropBefore, startDateGiven: pick('start-date') !== undefined };
  for (const rule of DATE_RULES) rule.check(dates, (name) => pick(name)?.from ?? `--${name}`);

  const catalog = ((): CatalogSettings | null => {
    if (pick('catalog') === undefined) return null;
    const url = str('catalog').replace(/\/+$/, '');
    if (!/^https?:\/\/[^/]/i.test(url)) {
      bad(
        pick('catalog')!.from,
        `(${url}) is not an http(s) URL.`,
        "Give the catalog's base URL, the one before /v1/config (e.g. https://host/api/catalog).",
      );
    }
    const namespace = str('catalog-namespace');
    if (namespace.split('.').some((level) => level === '')) {
      bad(
        pick('catalog-namespace')?.from ?? '--catalog-namespace',
        `(${namespace}) has an empty level.`,
        'Write it as a name, or levels joined by dots (finance.costs).',
      );
    }
    const sigv4 = pick('catalog-sigv4') === undefined ? undefined : choice<'glue' | 's3tables'>('catalog-sigv4');
    const optional = (name: SettingName) => (pick(name) === undefined ? undefined : str(name));
    return {
      url,
      warehouse: optional('catalog-warehouse'),
      namespace: namespace.split('.'),
      oauthUri: optional('catalog-oauth-uri'),
      oauthScope: str('catalog-oauth-scope'),
      sigv4,
      sigv4Region: optional('catalog-sigv4-region'),
      env: Object.fromEntries(
        ['COSTSYNC_CATALOG_TOKEN', 'COSTSYNC_CATALOG_CREDENTIAL', 'AWS_REGION'].filter((k) => env[k] !== undefined).map((k) => [k, env[k]]),
      ),
    };
  })();
  const given: GivenSettings = {
    pick,
    format: choice<'duckdb' | 'parquet' | 'iceberg'>('format'),
    catalog: catalog !== null,
  };
  CATALOG_RULE.check(given);
  const rateLimit = int('rate-limit');
  const shard = resolveShard(pick('shard'), pick('shard-count'), env);
  for (const rule of PLACE_RULES) rule.check(given);
  const shardPath = (name: SettingName, value: string) => substituteShard(value, pick(name)?.from ?? `--${name}`, shard);
  const chosen = selectSources(sources, pick('source'), rateLimit, needsApi, shard);
  const first = chosen[0];
  // DuckDB's tuning variables are read where the warehouse opens; a bad one is refused here, before
  // anything is created or fetched.
  memoryLimit(env);
  duckdbThreads(env);
  const byKind = (name: SettingName): unknown => {
    const { kind, choices } = spec(name);
    const v = pick(name);
    switch (kind) {
      case 'int':
        return v === undefined && spec(name).default === undefined ? undefined : int(name);
      case 'dollars':
        return dollars(name);
      case 'bool':
        return bool(name);
      case 'choice':
        return choice(name);
      case 'duration':
        return duration(name);
      case 'date':
        return date(name);
      case 'path':
        return v === undefined && spec(name).default === undefined ? undefined : str(name);
      case 'list':
        return v === undefined ? [...choices!] : check.list(v.from, v.value, choices!, name.replace(/s$/, ''));
      case 'urls':
        return v === undefined ? [] : urlList(v.value, v.from);
      default:
        throw new InternalError(`${name}: a ${kind} setting is not read by its kind alone`);
    }
  };
  const plain = Object.fromEntries(PLAIN_SETTINGS.map((name) => [fieldName(name), byKind(name)])) as PlainConfig;

  return {
    ...plain,
    baseUrl: first?.baseUrl ?? '',
    apiKey: first?.apiKey ?? '',
    ...(first?.keyFrom !== undefined && { apiKeyFrom: first.keyFrom }),
    // A shard that owns none of the sources has an empty list, even without a "sources" list.
    ...(sources.fileSources !== undefined || (shard !== null && chosen.length === 0) ? { sources: chosen } : {}),
    ...(shard !== null && {
      shard: {
        ...shard,
        sourcesBeforeSplit: sources.fileSources === undefined ? 1 : selectSources(sources, pick('source'), rateLimit, false).length,
        narrowedBySource: pick('source') !== undefined,
      },
    }),
    db: location(shardPath('db', str('db')), '--db'),
    stateDir: shardPath('state-dir', str('state-dir')),
    until,
    today,
    startDate,
    rateLimit: first?.rateLimit ?? rateLimit,
    format: catalog !== null ? 'iceberg' : choice<'duckdb' | 'parquet' | 'iceberg'>('format'),
    // Each format its own default folder, so switching formats never mixes two lakes in one; with a
    // catalog, no default: the catalog places the tables.
    out:
      catalog !== null && pick('out') === undefined
        ? ''
        : location(
            shardPath('out', pick('out') === undefined && choice('format') === 'iceberg' ? ICEBERG_DEFAULT_OUT : str('out')),
            '--out',
          ),
    catalog,
    icebergMaintenance:
      pick('iceberg-maintenance') === undefined ? catalog?.sigv4 !== 's3tables' : choice<'on' | 'off'>('iceberg-maintenance') === 'on',
  };
}

/** The run's dates as resolved, for the rules that check them against each other. */
export interface RunDates {
  today: string;
  until: string;
  since: string | undefined;
  startDate: string;
  dropBefore: string | undefined;
  /** Whether --start-date was given (its default is never after --until). */
  startDateGiven: boolean;
}

/**
 * The checks of the run's dates against each other and today, as named rules in the order they are
 * made (the first broken one is the error); `from` names where a setting came from (`--since`, an
 * environment variable, the config file).
 */
export const DATE_RULES: readonly { name: string; check(d: RunDates, from: (name: SettingName) => string): void }[] = [
  {
    name: 'until is not after today',
    check: (d, from) =>
      check.notFuture(
        from('until'),
        d.until,
        d.today,
        'the API holds no costs for days that have not happened, and recording them as synced would make later nightly runs skip their lookback.',
        `Leave --until out (it defaults to today), or pass a date on or before ${d.today}.`,
      ),
  },
  {
    name: 'since is not after until',
    check: (d, from) => {
      if (d.since !== undefined)
        check.notAfter(from('since'), d.since, d.until, 'Pass a --since on or before --until (which defaults to today, UTC).');
    },
  },
  {
    name: 'drop-before is not after until',
    check: (d, from) => {
      if (d.dropBefore !== undefined)
        check.notAfter(
          from('drop-before'),
          d.dropBefore,
          d.until,
          'Pass a --drop-before on or before --until (which defaults to today, UTC).',
          ': it would delete everything and sync nothing',
        );
    },
  },
  {
    name: 'since is not before drop-before',
    check: (d, from) => {
      if (d.dropBefore !== undefined && d.since !== undefined && d.since < d.dropBefore)
        throw new ConfigError(
          `${from('since')} (${d.since}) is before --drop-before ${d.dropBefore}: the run would sync dates it deletes.`,
          `Pass a --since on or after ${d.dropBefore}, or leave it out.`,
        );
    },
  },
  {
    name: 'start-date is not after until',
    check: (d, from) => {
      if (d.startDateGiven) check.notAfter(from('start-date'), d.startDate, d.until, 'Pass a --start-date on or before --until.');
    },
  },
];

/** What the rules between settings read: where each was given (`pick`), the format chosen, and whether a catalog was. */
export interface GivenSettings {
  pick: (name: SettingName) => { value: unknown; from: string } | undefined;
  format: 'duckdb' | 'parquet' | 'iceberg';
  catalog: boolean;
}

/** A check between settings, named: the first broken one is the error, naming where the setting came from. */
export interface SettingRule {
  name: string;
  check(given: GivenSettings): void;
}

/** --catalog commits Iceberg tables: it implies --format iceberg, and refuses another format named. */
export const CATALOG_RULE: SettingRule = {
  name: 'a catalog commits Iceberg tables',
  check: ({ pick, format, catalog }) => {
    if (catalog && pick('format') !== undefined && format !== 'iceberg')
      throw new ConfigError(
        `--catalog commits Iceberg tables, but --format is ${format}.`,
        'Add --format iceberg, or leave --catalog out.',
      );
  },
};

/** The rules of where things go, checked in this order once the shard is known. */
export const PLACE_RULES: readonly SettingRule[] = [
  {
    // {shard} names each shard's own files; anywhere else it would be taken literally, so it is refused.
    name: '{shard} only in --db, --state-dir and --out',
    check: ({ pick }) => {
      for (const name of SETTINGS) {
        const v = pick(name);
        if (!SHARD_PATHS.includes(name) && v !== undefined && String(v.value).includes(SHARD_PLACEHOLDER))
          throw new ConfigError(
            `${v.from} holds ${SHARD_PLACEHOLDER}, which only --db, --state-dir and --out may hold (each shard's own warehouse, state and lake).`,
            `Write ${v.from} without ${SHARD_PLACEHOLDER}.`,
          );
      }
    },
  },
  {
    // --out only places a lake; without a lake format it would be ignored without a word (out's default is not the user's).
    name: '--out names a lake only with a lake format',
    check: ({ pick, format: chosen, catalog }) => {
      const out = pick('out');
      if (out === undefined || catalog || chosen !== 'duckdb') return;
      const format = pick('format');
      throw new ConfigError(
        `${out.from} (${String(out.value)}) names a lake, but ${format?.from ?? '--format'} is duckdb${format === undefined ? ' (the default)' : ''}, which writes none.`,
        `Add --format parquet or --format iceberg, or leave ${out.from} out.`,
      );
    },
  },
];

/** The settings whose paths may hold `{shard}`: each shard's own warehouse, state and lake. */
const SHARD_PATHS: readonly SettingName[] = ['db', 'state-dir', 'out'];

/** Where `--format iceberg` writes when `--out` is not given (`--format parquet`: `./costs-parquet`). */
export const ICEBERG_DEFAULT_OUT = './costs-iceberg';

/** A path, or an `s3://` URL checked now (exit 2 for one that names no bucket). */
function location(value: string, flag: string): string {
  if (isS3Url(value)) parseS3Url(value, flag);
  return value;
}
