/**
 * One typed configuration for `sync` (and the commands that share its options), resolved once:
 * flags win over environment variables, which win over the config file, which wins over defaults.
 * Every bad value gets a ConfigError (exit code 2) naming the setting and the fix.
 */
import { isS3Url, parseS3Url } from './outputs/s3-url.js';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseBaseUrl } from './api/client.js';
import { parseWebhook } from './outputs/notify.js';
import { addDays, isCalendarDate, utcDate } from './dates.js';
import { ConfigError } from './errors.js';
import { STREAM_NAMES, type StreamName } from './sync/context.js';

export const DEFAULTS = {
  db: './costs.duckdb',
  stateDir: './state',
  lookbackDays: 3,
  /** A month per window: few windows keeps requests near ceil(rows / 1000), pages still save progress. */
  windowDays: 30,
  rateLimit: 60,
  format: 'duckdb',
  out: './costs-parquet',
  logFormat: 'pretty',
  anomalyRefreshDays: 30,
  firstRunDays: 90,
  concurrency: 4,
  /** How often a long run publishes what it committed so far. */
  publishIntervalMs: 10 * 60_000,
  // Renewed every third of it: long enough for a paused pod or a slow upload, short enough that a
  // killed runner's lease frees the next night's run.
  leaseTtlMs: 10 * 60_000,
} as const;

/** One workspace to sync: its name (the `source` column), API and key, and its own rate limit. */
export interface SourceConfig {
  name: string;
  baseUrl: string;
  apiKey: string;
  rateLimit: number;
  /** Webhooks of this source, besides the global `notify` ones. */
  notify?: string[];
}

/** Source names: lower-case letters, digits, `-` and `_` (they name state files and lake partitions). */
export const SOURCE_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export interface SyncConfig {
  /** The first selected source's API and key (the only one's, without `sources`). */
  baseUrl: string;
  apiKey: string;
  /** The sources to sync (after `--source`); absent means one `default` source from baseUrl and apiKey. */
  sources?: SourceConfig[];
  db: string;
  stateDir: string;
  streams: StreamName[];
  since: string | undefined;
  until: string;
  /** Today (UTC) when the settings were resolved: state that reaches past it is mended. */
  today?: string;
  startDate: string;
  lookbackDays: number;
  windowDays: number;
  fullRefresh: boolean;
  rateLimit: number;
  maxRuntimeMs: number | undefined;
  format: 'duckdb' | 'parquet';
  out: string;
  logFormat: 'pretty' | 'json';
  quiet: boolean;
  /** Debug lines, and stacks with errors. */
  verbose: boolean;
  anomalyRefreshDays: number;
  concurrency: number;
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

/** Settings by their flag names; the config file and environment use the same names. */
export const SETTINGS = [
  'base-url', 'api-key-file', 'db', 'state-dir', 'streams', 'since', 'until', 'start-date', 'lookback-days',
  'window-days', 'full-refresh', 'rate-limit', 'max-runtime', 'format', 'out', 'log-format', 'quiet', 'verbose',
  'anomaly-refresh-days', 'concurrency', 'publish-interval', 'reconcile', 'source', 'lease', 'lease-ttl',
  'notify', 'notify-severity', 'notify-status-changes', 'notify-max-age', 'notify-format', 'metrics-file',
] as const;
export type SettingName = (typeof SETTINGS)[number];

/** `COSTSYNC_BASE_URL` for `base-url`, and so on. */
export function envName(setting: string): string {
  return `COSTSYNC_${setting.toUpperCase().replaceAll('-', '_')}`;
}

const camelToKebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

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
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (cause) {
    throw new ConfigError(`The config file ${file} cannot be read as JSON: ${(cause as Error).message}`, 'Fix the file, or pass --config with another one.', cause);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`The config file ${file} must hold a JSON object of settings.`, 'For example {"base-url": "https://…", "db": "./costs.duckdb"}.');
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
      throw new ConfigError(`The config file ${file} holds the API key itself.`, 'Keep the key out of config files: use "api-key-file", or the COSTSYNC_API_KEY environment variable.');
    }
    if (!(SETTINGS as readonly string[]).includes(key)) {
      throw new ConfigError(`The config file ${file} has an unknown setting "${rawKey}".`, `Known settings: ${SETTINGS.join(', ')}.`);
    }
    values[key as SettingName] = value;
  }
  return sources === undefined ? { path: file, values } : { path: file, values, sources };
}

/** Milliseconds of a duration such as `90s`, `30m`, `2h`, `1h30m`, or a bare number of seconds. Pure. */
export function parseDuration(text: string): number | null {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
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

/** Resolves and checks every setting. Needs a key and a base URL only when `needsApi`. */
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
  const str = (name: SettingName, fallback: string): string => {
    const v = pick(name);
    if (v === undefined) return fallback;
    if (typeof v.value !== 'string' || v.value.trim() === '') bad(v.from, 'must be a non-empty string.', `Set ${v.from} to a value.`);
    return (v.value as string).trim();
  };
  const int = (name: SettingName, fallback: number, min: number, max: number): number => {
    const v = pick(name);
    if (v === undefined) return fallback;
    const n = Number(v.value);
    if (!Number.isInteger(n) || n < min || n > max) bad(v.from, `must be a whole number from ${min} to ${max}; got ${JSON.stringify(v.value)}.`, `For example ${v.from.startsWith('--') ? v.from : `--${name}`} ${fallback}.`);
    return n;
  };
  const bool = (name: SettingName): boolean => {
    const v = pick(name);
    if (v === undefined) return false;
    if (typeof v.value === 'boolean') return v.value;
    if (v.value === 'true' || v.value === '1') return true;
    if (v.value === 'false' || v.value === '0') return false;
    return bad(v.from, `must be true or false; got ${JSON.stringify(v.value)}.`, 'Use true or false.');
  };
  const date = (name: SettingName): string | undefined => {
    const v = pick(name);
    if (v === undefined) return undefined;
    if (typeof v.value !== 'string' || !isCalendarDate(v.value)) {
      bad(v.from, `must be a real calendar date as YYYY-MM-DD; got ${JSON.stringify(v.value)}.`, 'For example 2025-01-31.');
    }
    return v.value as string;
  };
  const choice = <T extends string>(name: SettingName, fallback: T, choices: readonly T[]): T => {
    const v = pick(name);
    if (v === undefined) return fallback;
    if (!choices.includes(v.value as T)) bad(v.from, `must be one of ${choices.join(', ')}; got ${JSON.stringify(v.value)}.`, `For example ${fallback}.`);
    return v.value as T;
  };

  const today = utcDate(sources.nowMs);
  const until = date('until') ?? today;
  if (until > today) {
    bad(pick('until')!.from, `(${until}) is after today (${today}, UTC): the API holds no costs for days that have not happened, and recording them as synced would make later nightly runs skip their lookback.`,
      `Leave --until out (it defaults to today), or pass a date on or before ${today}.`);
  }
  const since = date('since');
  const startDate = date('start-date') ?? addDays(until < today ? until : today, -DEFAULTS.firstRunDays);
  if (since !== undefined && since > until) {
    bad(pick('since')!.from, `(${since}) is after the last date ${until}.`, 'Pass a --since on or before --until (which defaults to today, UTC).');
  }
  if (startDate > until) bad(pick('start-date')!.from, `(${startDate}) is after the last date ${until}.`, 'Pass a --start-date on or before --until.');

  const streamsValue = pick('streams');
  let streams: StreamName[] = [...STREAM_NAMES];
  if (streamsValue !== undefined) {
    const list = Array.isArray(streamsValue.value) ? streamsValue.value.map(String) : String(streamsValue.value).split(',');
    streams = list.map((s) => s.trim()).filter((s) => s !== '') as StreamName[];
    const unknown = streams.filter((s) => !STREAM_NAMES.includes(s));
    if (unknown.length > 0 || streams.length === 0) {
      bad(streamsValue.from, `names unknown stream(s): ${unknown.join(', ') || '(none given)'}.`, `Use a comma list of ${STREAM_NAMES.join(',')}.`);
    }
    streams = [...new Set(streams)];
  }

  const maxRuntime = pick('max-runtime');
  let maxRuntimeMs: number | undefined;
  if (maxRuntime !== undefined) {
    const parsed = parseDuration(String(maxRuntime.value));
    if (parsed === null || parsed <= 0) bad(maxRuntime.from, `must be a duration such as 90s, 30m or 2h; got ${JSON.stringify(maxRuntime.value)}.`, 'For example --max-runtime 45m.');
    maxRuntimeMs = parsed!;
  }

  const publishInterval = pick('publish-interval');
  let publishIntervalMs: number = DEFAULTS.publishIntervalMs;
  if (publishInterval !== undefined) {
    const parsed = parseDuration(String(publishInterval.value));
    if (parsed === null) bad(publishInterval.from, `must be a duration such as 10m, 30s or 0 (after every window); got ${JSON.stringify(publishInterval.value)}.`, 'For example --publish-interval 10m.');
    publishIntervalMs = parsed!;
  }
  const leaseTtl = pick('lease-ttl');
  let leaseTtlMs: number = DEFAULTS.leaseTtlMs;
  if (leaseTtl !== undefined) {
    const parsed = parseDuration(String(leaseTtl.value));
    if (parsed === null || parsed < 3_000) bad(leaseTtl.from, `must be a duration of at least 3s, such as 10m; got ${JSON.stringify(leaseTtl.value)}.`, 'For example --lease-ttl 10m.');
    leaseTtlMs = parsed!;
  }

  const rateLimit = int('rate-limit', DEFAULTS.rateLimit, 1, 1_000_000);
  const notifyValue = pick('notify');
  const notify = notifyValue === undefined ? [] : urlList(notifyValue.value, notifyValue.from);
  const maxAge = pick('notify-max-age');
  let notifyMaxAgeMs = 48 * 3_600_000;
  if (maxAge !== undefined) {
    const parsed = parseDuration(String(maxAge.value));
    if (parsed === null) bad(maxAge.from, `must be a duration such as 48h or 7d; got ${JSON.stringify(maxAge.value)}.`, 'For example --notify-max-age 48h.');
    notifyMaxAgeMs = parsed!;
  }
  const chosen = selectSources(sources, pick('source'), rateLimit, needsApi);
  const first = chosen[0];

  return {
    baseUrl: first?.baseUrl ?? '',
    apiKey: first?.apiKey ?? '',
    ...(sources.fileSources !== undefined ? { sources: chosen } : {}),
    db: location(str('db', DEFAULTS.db), '--db'),
    stateDir: str('state-dir', DEFAULTS.stateDir),
    streams,
    since,
    until,
    today,
    startDate,
    lookbackDays: int('lookback-days', DEFAULTS.lookbackDays, 0, 365),
    windowDays: int('window-days', DEFAULTS.windowDays, 1, 3660),
    fullRefresh: bool('full-refresh'),
    rateLimit: first?.rateLimit ?? rateLimit,
    maxRuntimeMs,
    format: choice('format', DEFAULTS.format, ['duckdb', 'parquet'] as const),
    out: location(str('out', DEFAULTS.out), '--out'),
    logFormat: choice('log-format', DEFAULTS.logFormat, ['pretty', 'json'] as const),
    quiet: bool('quiet'),
    verbose: bool('verbose'),
    anomalyRefreshDays: int('anomaly-refresh-days', DEFAULTS.anomalyRefreshDays, 0, 3660),
    concurrency: int('concurrency', DEFAULTS.concurrency, 1, 64),
    publishIntervalMs,
    lease: choice('lease', 'on', ['on', 'off'] as const),
    leaseTtlMs,
    reconcile: choice('reconcile', 'on', ['on', 'strict', 'off'] as const),
    notify,
    notifySeverity: choice('notify-severity', 'high', ['low', 'medium', 'high', 'critical'] as const),
    notifyStatusChanges: bool('notify-status-changes'),
    notifyMaxAgeMs,
    notifyFormat: choice('notify-format', 'json', ['json', 'slack'] as const),
    metricsFile: pick('metrics-file') === undefined ? undefined : str('metrics-file', ''),
  };
}

/** A path, or an `s3://` URL checked now (exit 2 for one that names no bucket). */
function location(value: string, flag: string): string {
  if (isS3Url(value)) parseS3Url(value, flag);
  return value;
}

const SOURCE_FIELDS = ['name', 'base-url', 'api-key-file', 'api-key-env', 'rate-limit', 'notify'];

/** Webhook URLs from a flag (repeatable), an environment variable (space-separated) or a config list; checked, never echoed. */
function urlList(value: unknown, from: string): string[] {
  const urls = (Array.isArray(value) ? value.map(String) : String(value).split(/\s+/)).map((u) => u.trim()).filter((u) => u !== '');
  for (const url of urls) parseWebhook(url, from);
  return urls;
}

/**
 * The sources to work on: the config file's `sources` (checked), narrowed by `--source`; without
 * `sources`, one named `default` from --base-url and the key. Keys are read only when `needsApi`.
 */
function selectSources(sources: ConfigSources, only: { value: unknown; from: string } | undefined, rateLimit: number, needsApi: boolean): SourceConfig[] {
  const wanted = only === undefined ? null : String(only.value).split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (sources.fileSources === undefined) {
    if (wanted !== null && wanted.some((n) => n !== 'default')) {
      throw new ConfigError(`${only!.from} names ${wanted.join(', ')}, but the config file has no "sources": the only source is "default".`, 'Add a "sources" list to the config file, or leave out --source.');
    }
    if (!needsApi) return [];
    const base = sources.flags['base-url'] ?? (sources.env.COSTSYNC_BASE_URL || undefined) ?? sources.file['base-url'];
    if (base === undefined) {
      throw new ConfigError('No base URL: costsync does not know which API to talk to.', 'Pass --base-url https://… or set COSTSYNC_BASE_URL (for the emulator: http://127.0.0.1:8787).');
    }
    const baseUrl = String(base).replace(/\/+$/, '');
    parseBaseUrl(baseUrl);
    return [{ name: 'default', baseUrl, apiKey: resolveApiKey(sources), rateLimit }];
  }
  const list = sources.fileSources;
  const fix = 'Each source is {"name": "acme-eu", "base-url": "https://…", "api-key-file": "/run/secrets/acme-eu"} or with "api-key-env": "ACME_EU_KEY", and optionally "rate-limit".';
  if (!Array.isArray(list) || list.length === 0) throw new ConfigError('"sources" in the config file must be a non-empty list.', fix);
  for (const setting of ['base-url', 'api-key-file'] as const) {
    if (sources.flags[setting] !== undefined) throw new ConfigError(`--${setting} cannot be combined with "sources" in the config file: each source has its own.`, 'Set it on the source in the config file, and pick sources with --source NAME.');
  }
  const all: { name: string; raw: Record<string, unknown> }[] = [];
  list.forEach((entry, i) => {
    const where = `sources[${i}] in the config file`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ConfigError(`${where} must be an object.`, fix);
    const raw: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(entry)) raw[camelToKebab(k)] = v;
    if ('api-key' in raw) throw new ConfigError(`${where} holds the API key itself.`, 'Keep keys out of config files: use "api-key-file" (a file holding only the key) or "api-key-env" (the name of an environment variable).');
    const unknown = Object.keys(raw).filter((k) => !SOURCE_FIELDS.includes(k));
    if (unknown.length > 0) throw new ConfigError(`${where} has unknown field(s): ${unknown.join(', ')}.`, `Known fields: ${SOURCE_FIELDS.join(', ')}.`);
    const name = raw.name;
    if (typeof name !== 'string' || !SOURCE_NAME_RE.test(name)) {
      throw new ConfigError(`${where} needs a "name" of lower-case letters, digits, "-" and "_"; got ${JSON.stringify(name)}.`, 'For example "name": "acme-eu".');
    }
    if (all.some((s) => s.name === name)) throw new ConfigError(`Two sources in the config file are named "${name}".`, 'Give each source its own name.');
    all.push({ name, raw });
  });
  const unknownNames = (wanted ?? []).filter((n) => !all.some((s) => s.name === n));
  if (unknownNames.length > 0) {
    throw new ConfigError(`${only!.from} names unknown source(s): ${unknownNames.join(', ')}.`, `The config file's sources are: ${all.map((s) => s.name).join(', ')}.`);
  }
  const chosen = wanted === null ? all : all.filter((s) => wanted.includes(s.name));
  if (!needsApi) {
    return chosen.map(({ name, raw }) => ({ name, baseUrl: '', apiKey: '', rateLimit, ...(raw.notify !== undefined ? { notify: urlList(raw.notify, `source "${name}": "notify"`) } : {}) }));
  }
  return chosen.map(({ name, raw }) => {
    const where = `source "${name}" in the config file`;
    if (typeof raw['base-url'] !== 'string' || raw['base-url'].trim() === '') throw new ConfigError(`${where} has no "base-url".`, fix);
    const baseUrl = raw['base-url'].trim().replace(/\/+$/, '');
    parseBaseUrl(baseUrl);
    let apiKey: string;
    if (typeof raw['api-key-file'] === 'string' && raw['api-key-env'] === undefined) {
      apiKey = readKeyFile(sources, raw['api-key-file'], where);
    } else if (typeof raw['api-key-env'] === 'string' && raw['api-key-file'] === undefined) {
      const value = sources.env[raw['api-key-env']];
      if (value === undefined || value.trim() === '') {
        throw new ConfigError(`${where}: the environment variable ${raw['api-key-env']} (its "api-key-env") is not set.`, `Set ${raw['api-key-env']} to the source's API key.`);
      }
      apiKey = value.trim();
    } else {
      throw new ConfigError(`${where} needs exactly one of "api-key-file" and "api-key-env".`, fix);
    }
    let own = rateLimit;
    if (raw['rate-limit'] !== undefined) {
      own = Number(raw['rate-limit']);
      if (!Number.isInteger(own) || own < 1 || own > 1_000_000) throw new ConfigError(`${where}: "rate-limit" must be a whole number from 1 to 1000000; got ${JSON.stringify(raw['rate-limit'])}.`, 'For example "rate-limit": 120.');
    }
    return { name, baseUrl, apiKey, rateLimit: own, ...(raw.notify !== undefined ? { notify: urlList(raw.notify, `${where}: "notify"`) } : {}) };
  });
}

function readKeyFile(sources: ConfigSources, path: string, from: string): string {
  const read = sources.readKeyFile ?? ((p: string) => readFileSync(p, 'utf8'));
  let text: string;
  try {
    text = read(path);
  } catch (cause) {
    throw new ConfigError(`${from}: cannot read the key file ${path} (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`, 'Check the path and that this user may read it.', cause);
  }
  const key = text.trim();
  if (key === '' || /\s/.test(key)) throw new ConfigError(`${from}: the key file ${path} must hold the key alone, on one line.`, 'Write only the key into the file.');
  return key;
}

/** The key: `--api-key-file` wins over COSTSYNC_API_KEY, which wins over the file's "api-key-file". */
function resolveApiKey(sources: ConfigSources): string {
  const fromFile = (path: string, from: string) => readKeyFile(sources, path, from);
  if (sources.flags['api-key-file'] !== undefined) return fromFile(String(sources.flags['api-key-file']), '--api-key-file');
  const envKey = sources.env.COSTSYNC_API_KEY;
  if (envKey !== undefined && envKey.trim() !== '') return envKey.trim();
  const envFile = sources.env[envName('api-key-file')];
  if (envFile) return fromFile(envFile, envName('api-key-file'));
  if (sources.file['api-key-file'] !== undefined) return fromFile(String(sources.file['api-key-file']), '"api-key-file" in the config file');
  throw new ConfigError('No API key.', 'Set COSTSYNC_API_KEY, or pass --api-key-file PATH (a file holding only the key). For the emulator the key is demo-key.');
}
