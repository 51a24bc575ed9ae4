/**
 * Which sources (workspaces) a run works on: the config file's `sources`, checked and narrowed by
 * `--source`, or one `default` source from --base-url and the key; and where each key comes from
 * (a key file, or a named environment variable; never the config file or a flag).
 */
import { readFileSync } from 'node:fs';
import { parseBaseUrl } from './api/client.js';
import { ConfigError } from './errors.js';
import { closest } from './did-you-mean.js';
import { parseWebhook } from './outputs/notify.js';
import { camelToKebab, envName, type ConfigSources } from './settings.js';
import { shardOf, type Shard } from './shards.js';

/** One workspace to sync: its name (the `source` column), API and key, and its own rate limit. */
export interface SourceConfig {
  name: string;
  baseUrl: string;
  apiKey: string;
  rateLimit: number;
  /** Where its key came from (a refused key's hint names it): `the key file /etc/eu.key (source "eu"'s "api-key-file")`. */
  keyFrom?: string;
  /** Webhooks of this source, besides the global `notify` ones. */
  notify?: string[];
}

/** Source names: lower-case letters, digits, `-` and `_` (they name state files and lake partitions). */
export const SOURCE_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;

const SOURCE_FIELDS = ['name', 'base-url', 'api-key-file', 'api-key-env', 'rate-limit', 'notify'];

/** Webhook URLs from a flag (repeatable), an environment variable (space-separated) or a config list; checked, never echoed. */
export function urlList(value: unknown, from: string): string[] {
  const urls = (Array.isArray(value) ? value.map(String) : String(value).split(/\s+/)).map((u) => u.trim()).filter((u) => u !== '');
  for (const url of urls) parseWebhook(url, from);
  return urls;
}

/**
 * The sources to work on: the config file's `sources` (checked), narrowed by `--source`, then to those
 * `shard` owns; without `sources`, one named `default` from --base-url and the key (none when another
 * shard owns it). Keys are read only when `needsApi`, and only for the sources kept.
 */
export function selectSources(
  sources: ConfigSources,
  only: { value: unknown; from: string } | undefined,
  rateLimit: number,
  needsApi: boolean,
  shard: Shard | null = null,
): SourceConfig[] {
  const owned = (name: string) => shard === null || shardOf(name, shard.count) === shard.index;
  const wanted =
    only === undefined
      ? null
      : String(only.value)
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
  if (sources.fileSources === undefined) {
    if (wanted !== null && wanted.some((n) => n !== 'default')) {
      throw new ConfigError(
        `${only!.from} names ${wanted.join(', ')}, but the config file has no "sources": the only source is "default".`,
        'Add a "sources" list to the config file, or leave out --source.',
      );
    }
    if (!needsApi || !owned('default')) return [];
    const base = sources.flags['base-url'] ?? (sources.env.COSTSYNC_BASE_URL || undefined) ?? sources.file['base-url'];
    if (base === undefined) {
      throw new ConfigError(
        'No base URL: costsync does not know which API to talk to.',
        'Pass --base-url https://… or set COSTSYNC_BASE_URL (for the emulator: http://127.0.0.1:8787).',
      );
    }
    const baseUrl = String(base).replace(/\/+$/, '');
    parseBaseUrl(baseUrl);
    const key = resolveApiKey(sources);
    return [{ name: 'default', baseUrl, apiKey: key.value, keyFrom: key.from, rateLimit }];
  }
  const list = sources.fileSources;
  const fix =
    'Each source is {"name": "acme-eu", "base-url": "https://…", "api-key-file": "/run/secrets/acme-eu"} or with "api-key-env": "ACME_EU_KEY", and optionally "rate-limit".';
  if (!Array.isArray(list) || list.length === 0) throw new ConfigError('"sources" in the config file must be a non-empty list.', fix);
  for (const setting of ['base-url', 'api-key-file'] as const) {
    if (sources.flags[setting] !== undefined)
      throw new ConfigError(
        `--${setting} cannot be combined with "sources" in the config file: each source has its own.`,
        'Set it on the source in the config file, and pick sources with --source NAME.',
      );
  }
  const all: { name: string; raw: Record<string, unknown> }[] = [];
  list.forEach((entry, i) => {
    const where = `sources[${i}] in the config file`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ConfigError(`${where} must be an object.`, fix);
    const raw: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(entry as Record<string, unknown>)) raw[camelToKebab(k)] = v;
    if ('api-key' in raw)
      throw new ConfigError(
        `${where} holds the API key itself.`,
        'Keep keys out of config files: use "api-key-file" (a file holding only the key) or "api-key-env" (the name of an environment variable).',
      );
    const unknown = Object.keys(raw).filter((k) => !SOURCE_FIELDS.includes(k));
    if (unknown.length > 0) {
      const named = unknown.map((k) => {
        const meant = closest(k, SOURCE_FIELDS);
        return meant === null ? k : `${k} (did you mean "${meant}"?)`;
      });
      throw new ConfigError(`${where} has unknown field(s): ${named.join(', ')}.`, `Known fields: ${SOURCE_FIELDS.join(', ')}.`);
    }
    const name = raw.name;
    if (typeof name !== 'string' || !SOURCE_NAME_RE.test(name)) {
      throw new ConfigError(
        `${where} needs a "name" of lower-case letters, digits, "-" and "_"; got ${JSON.stringify(name)}.`,
        'For example "name": "acme-eu".',
      );
    }
    if (all.some((s) => s.name === name))
      throw new ConfigError(`Two sources in the config file are named "${name}".`, 'Give each source its own name.');
    all.push({ name, raw });
  });
  const unknownNames = (wanted ?? []).filter((n) => !all.some((s) => s.name === n));
  if (unknownNames.length > 0) {
    throw new ConfigError(
      `${only!.from} names unknown source(s): ${unknownNames.join(', ')}.`,
      `The config file's sources are: ${all.map((s) => s.name).join(', ')}.`,
    );
  }
  // A source's shard depends on its name alone, so narrowing by --source first changes no source's shard.
  const chosen = (wanted === null ? all : all.filter((s) => wanted.includes(s.name))).filter((s) => owned(s.name));
  // The file's own top-level base-url is a default for its sources, as its other settings are; the
  // flag and its variable are not, so a shell's COSTSYNC_BASE_URL cannot move a listed workspace.
  const fileBase = sources.file['base-url'];
  if (!needsApi) {
    return chosen.map(({ name, raw }) => ({
      name,
      baseUrl: '',
      apiKey: '',
      rateLimit,
      ...(raw.notify !== undefined ? { notify: urlList(raw.notify, `source "${name}": "notify"`) } : {}),
    }));
  }
  return chosen.map(({ name, raw }) => {
    const where = `source "${name}" in the config file`;
    const base = raw['base-url'] ?? fileBase;
    if (typeof base !== 'string' || base.trim() === '') {
      const envNote = sources.env.COSTSYNC_BASE_URL ? ' (COSTSYNC_BASE_URL, like --base-url, is not used for sources)' : '';
      throw new ConfigError(
        `${where} has no "base-url", and the config file has no top-level "base-url"${envNote}.`,
        `Give the source a "base-url", or put one "base-url" at the top of the config file for every source without its own. ${fix}`,
      );
    }
    const baseUrl = base.trim().replace(/\/+$/, '');
    parseBaseUrl(baseUrl);
    let apiKey: string;
    let keyFrom: string;
    if (typeof raw['api-key-file'] === 'string' && raw['api-key-env'] === undefined) {
      apiKey = readKeyFile(sources, raw['api-key-file'], where);
      keyFrom = `the key file ${raw['api-key-file']} (source "${name}"'s "api-key-file" in the config file)`;
    } else if (typeof raw['api-key-env'] === 'string' && raw['api-key-file'] === undefined) {
      const value = sources.env[raw['api-key-env']];
      if (value === undefined || value.trim() === '') {
        throw new ConfigError(
          `${where}: the environment variable ${raw['api-key-env']} (its "api-key-env") is not set.`,
          `Set ${raw['api-key-env']} to the source's API key.`,
        );
      }
      apiKey = value.trim();
      keyFrom = `the environment variable ${raw['api-key-env']} (source "${name}"'s "api-key-env" in the config file)`;
    } else {
      throw new ConfigError(`${where} needs exactly one of "api-key-file" and "api-key-env".`, fix);
    }
    let own = rateLimit;
    if (raw['rate-limit'] !== undefined) {
      own = Number(raw['rate-limit']);
      if (!Number.isInteger(own) || own < 1 || own > 1_000_000)
        throw new ConfigError(
          `${where}: "rate-limit" must be a whole number from 1 to 1000000; got ${JSON.stringify(raw['rate-limit'])}.`,
          'For example "rate-limit": 120.',
        );
    }
    return {
      name,
      baseUrl,
      apiKey,
      keyFrom,
      rateLimit: own,
      ...(raw.notify !== undefined ? { notify: urlList(raw.notify, `${where}: "notify"`) } : {}),
    };
  });
}

function readKeyFile(sources: ConfigSources, path: string, from: string): string {
  const read = sources.readKeyFile ?? ((p: string) => readFileSync(p, 'utf8'));
  let text: string;
  try {
    text = read(path);
  } catch (cause) {
    throw new ConfigError(
      `${from}: cannot read the key file ${path} (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`,
      'Check the path and that this user may read it.',
      cause,
    );
  }
  const key = text.trim();
  // An empty file is a key not written yet (or truncated), not a file holding more than the key.
  if (key === '')
    throw new ConfigError(`${from}: the key file ${path} is empty.`, `Write the API key into ${path} (the key alone, on one line).`);
  if (/\s/.test(key))
    throw new ConfigError(
      `${from}: the key file ${path} holds more than one word; it must hold the key alone, on one line.`,
      'Write only the key into the file.',
    );
  return key;
}

/** The key and where it came from: `--api-key-file` wins over COSTSYNC_API_KEY, which wins over the file's "api-key-file". */
function resolveApiKey(sources: ConfigSources): { value: string; from: string } {
  const fromFile = (path: string, from: string) => ({ value: readKeyFile(sources, path, from), from: `the key file ${path} (${from})` });
  if (sources.flags['api-key-file'] !== undefined) return fromFile(String(sources.flags['api-key-file']), '--api-key-file');
  const envKey = sources.env.COSTSYNC_API_KEY;
  if (envKey !== undefined && envKey.trim() !== '') return { value: envKey.trim(), from: 'COSTSYNC_API_KEY' };
  const envFile = sources.env[envName('api-key-file')];
  if (envFile) return fromFile(envFile, envName('api-key-file'));
  if (sources.file['api-key-file'] !== undefined)
    return fromFile(String(sources.file['api-key-file']), '"api-key-file" in the config file');
  throw new ConfigError(
    'No API key.',
    'Set COSTSYNC_API_KEY, or pass --api-key-file PATH (a file holding only the key). For the emulator the key is demo-key.',
  );
}
