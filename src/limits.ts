/**
 * The defaults and limits the docs state, in one table: every setting's default and range (settings.ts),
 * the variables' (env-vars.ts), and the built-in ones, each read from the constant the code uses. `npm run
 * docs` writes docs/reference/limits.md from it; each limit's `stated` are the words prose pages use for
 * it, made from the same constant, and a test finds each in its page: a changed constant fails that test
 * until the page says the new value.
 */
import { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUTS } from './api/client.js';
import { DEFAULT_RETRY_POLICY } from './api/resilience.js';
import { FIRST_RUN_DAYS } from './config.js';
import { DISK_MB } from './errors.js';
import { COMMIT_ATTEMPTS } from './iceberg/table.js';
import { METADATA_FILES_KEPT } from './iceberg/metadata.js';
import { DEFAULT_CATALOG_TIMEOUT_MS } from './iceberg/rest-client.js';
import { DEFAULT_SEND, EVENTS_PER_MESSAGE } from './outputs/notify.js';
import { COMPACT_FREE_RATIO, COMPACT_MIN_FREE_BYTES } from './outputs/publish.js';
import { DEFAULT_PART_SIZE, MIN_PART_SIZE, PARTS_IN_PARALLEL } from './outputs/s3.js';
import { DEFAULT_RECHECK_DAYS } from './plan/horizon.js';
import { PUSH_MEMORY_LIMIT } from './push/reader.js';
import { DEFAULT_BATCH_SIZE } from './push/push.js';
import { MAX_TABLE_ROWS } from './query.js';
import { SETTING_SPECS, SOURCES_PER_CORE, envName, type SettingSpec } from './settings.js';
import { MAX_SHARDS } from './shards.js';
import { DUCKDB_THREADS, MIN_MEMORY_LIMIT } from './storage/duckdb-settings.js';
import { ANOMALY_PAGE_LIMIT } from './sync/anomalies.js';
import { MAX_FETCH_ATTEMPTS } from './sync/reconcile.js';
import { LINE_ITEM_PAGE_LIMIT } from './sync/streams.js';
import { CURSOR_SAVE_MS, CURSOR_SAVE_PAGES, MAX_WINDOW_RESTARTS } from './sync/window-fetch.js';

export interface Limit {
  /** What it bounds or sets, as a person asks about it. */
  what: string;
  /** Its value, as the docs write it. */
  value: string;
  /** Where the code holds it. */
  code: string;
  /** The words prose pages state it with (made from the constant): each must be found in its page. */
  stated?: readonly { page: string; text: string }[];
}

const seconds = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);
const mib = (bytes: number) => `${bytes / 2 ** 20} MiB`;
const ordinal = (n: number) => ['', 'every', 'every second', 'every third', 'every fourth'][n] ?? `every ${n}th`;
const count = (n: number) => n.toLocaleString('en-US');

/** A duration setting's least value as the docs write it ("0: at once" where 0 is allowed). Pure. */
export function leastDuration(spec: Pick<SettingSpec, 'minMs'>): string {
  const min = spec.minMs ?? 0;
  return min === 0 ? '0 (at once)' : min < 1000 ? `${min}ms` : `${min / 1000}s`;
}

/** Each setting's default and range: the table's first part. Pure. */
function settingLimits(): Limit[] {
  return (SETTING_SPECS as readonly SettingSpec[])
    .filter((s) => s.default !== undefined || s.defaultText !== undefined || s.range !== undefined || s.kind === 'duration')
    .map((s) => {
      const fallback = s.defaultText ?? (s.default === undefined ? 'none' : String(s.default));
      const bounds =
        s.range !== undefined
          ? `; ${count(s.range[0])} to ${count(s.range[1])}`
          : s.kind === 'duration'
            ? `; at least ${leastDuration(s)}`
            : s.kind === 'dollars'
              ? '; 0 or more'
              : '';
      return { what: `--${s.name} (${envName(s.name)})`, value: `default ${fallback}${bounds}`, code: 'SETTING_SPECS in src/settings.ts' };
    });
}

/** Built-in defaults and limits, and those of the variables that are not settings. */
const BUILT_IN: readonly Limit[] = [
  {
    what: 'COSTSYNC_DUCKDB_MEMORY_LIMIT',
    value: `default and least ${MIN_MEMORY_LIMIT}`,
    code: 'MIN_MEMORY_LIMIT in src/storage/duckdb-settings.ts',
  },
  {
    what: 'COSTSYNC_DUCKDB_THREADS',
    value: `default ${DUCKDB_THREADS.default}; 1 to ${DUCKDB_THREADS.max}`,
    code: 'DUCKDB_THREADS in src/storage/duckdb-settings.ts',
  },
  { what: 'COSTSYNC_PUSH_MEMORY_LIMIT', value: `default ${PUSH_MEMORY_LIMIT}`, code: 'PUSH_MEMORY_LIMIT in src/push/reader.ts' },
  {
    what: 'COSTSYNC_S3_PART_SIZE (multipart upload parts)',
    value: `default ${mib(DEFAULT_PART_SIZE)}; at least ${mib(MIN_PART_SIZE)}; ${PARTS_IN_PARALLEL} at a time`,
    code: 'DEFAULT_PART_SIZE, MIN_PART_SIZE, PARTS_IN_PARALLEL in src/outputs/s3.ts',
  },
  {
    what: 'line items a page',
    value: count(LINE_ITEM_PAGE_LIMIT),
    code: 'LINE_ITEM_PAGE_LIMIT in src/sync/streams.ts',
    stated: [{ page: 'docs/backfills.md', text: `${count(LINE_ITEM_PAGE_LIMIT)} rows a page` }],
  },
  { what: 'anomalies a page', value: count(ANOMALY_PAGE_LIMIT), code: 'ANOMALY_PAGE_LIMIT in src/sync/anomalies.ts' },
  {
    what: "how often a window's cursor is saved (so how many pages a killed run fetches again)",
    value: `${ordinal(CURSOR_SAVE_PAGES)} page or ${seconds(CURSOR_SAVE_MS)}, whichever comes first, and at once after the last page, a stop or a failure`,
    code: 'CURSOR_SAVE_PAGES, CURSOR_SAVE_MS in src/sync/window-fetch.ts',
    stated: [
      { page: 'docs/backfills.md', text: `${ordinal(CURSOR_SAVE_PAGES)} page or second` },
      { page: 'docs/backfills.md', text: `at most ${CURSOR_SAVE_PAGES} pages` },
      {
        page: 'docs/guarantees.md',
        text: `${ordinal(CURSOR_SAVE_PAGES)} page or second per window: a kill refetches at most ${CURSOR_SAVE_PAGES} pages`,
      },
      {
        page: 'docs/guarantees.md',
        text: `${ordinal(CURSOR_SAVE_PAGES)} page or second, so a SIGKILL refetches at most ${CURSOR_SAVE_PAGES} of its pages`,
      },
    ],
  },
  {
    what: 'fetches of a window whose line items and rollups disagree',
    value: `${MAX_FETCH_ATTEMPTS} in all, then the last is stored with a warning`,
    code: 'MAX_FETCH_ATTEMPTS in src/sync/reconcile.ts',
    stated: [
      { page: 'docs/backfills.md', text: `up to ${MAX_FETCH_ATTEMPTS} fetches in all` },
      { page: 'docs/guarantees.md', text: `up to ${MAX_FETCH_ATTEMPTS} fetches in all` },
    ],
  },
  {
    what: 'restarts of a window whose cursor expired',
    value: String(MAX_WINDOW_RESTARTS),
    code: 'MAX_WINDOW_RESTARTS in src/sync/window-fetch.ts',
  },
  {
    what: 'the largest response read',
    value: mib(DEFAULT_MAX_RESPONSE_BYTES),
    code: 'DEFAULT_MAX_RESPONSE_BYTES in src/api/client.ts',
    stated: [{ page: 'docs/guarantees.md', text: `bodies above ${DEFAULT_MAX_RESPONSE_BYTES / 2 ** 20} MB not read` }],
  },
  {
    what: 'request timeouts: connect, headers, body, whole request',
    value: [DEFAULT_TIMEOUTS.connectMs, DEFAULT_TIMEOUTS.headersMs, DEFAULT_TIMEOUTS.bodyMs, DEFAULT_TIMEOUTS.totalMs]
      .map(seconds)
      .join(', '),
    code: 'DEFAULT_TIMEOUTS in src/api/client.ts',
    stated: [{ page: 'docs/guarantees.md', text: `a request deadline (${seconds(DEFAULT_TIMEOUTS.totalMs)})` }],
  },
  {
    what: 'retries of a failed request (429s counted apart)',
    value: `${DEFAULT_RETRY_POLICY.retries}, backoff ${seconds(DEFAULT_RETRY_POLICY.minTimeoutMs)} to ${seconds(DEFAULT_RETRY_POLICY.maxTimeoutMs)}; up to ${DEFAULT_RETRY_POLICY.maxRateLimitRetries} holds for 429s`,
    code: 'DEFAULT_RETRY_POLICY in src/api/resilience.ts',
  },
  {
    what: 'where a first run starts (--start-date unset)',
    value: `${FIRST_RUN_DAYS} days before today`,
    code: 'FIRST_RUN_DAYS in src/config.ts',
  },
  {
    what: "the recheck's horizon (--recheck-days unset)",
    value: `${DEFAULT_RECHECK_DAYS} days, or back to the first of the previous month when that is earlier`,
    code: 'DEFAULT_RECHECK_DAYS in src/plan/horizon.ts',
  },
  {
    what: 'sources syncing at once with --sources-at-once 0',
    value: `${SOURCES_PER_CORE} a CPU core`,
    code: 'SOURCES_PER_CORE in src/settings.ts',
  },
  {
    what: 'webhook sends',
    value: `${seconds(DEFAULT_SEND.timeoutMs)} an attempt, ${DEFAULT_SEND.retries} retries within the run; ${EVENTS_PER_MESSAGE} events a message`,
    code: 'DEFAULT_SEND, EVENTS_PER_MESSAGE in src/outputs/notify.ts',
    stated: [{ page: 'docs/nightly.md', text: `${DEFAULT_SEND.retries} retries with backoff within the run` }],
  },
  {
    what: 'a publish rewrites the file compactly instead of copying it',
    value: `when more than ${COMPACT_FREE_RATIO * 100}% of the working copy's blocks are free, and they hold at least ${COMPACT_MIN_FREE_BYTES / 1024 / 1024} MiB`,
    code: 'COMPACT_FREE_RATIO, COMPACT_MIN_FREE_BYTES in src/outputs/publish.ts',
  },
  {
    what: 'disk a run needs',
    value: `about ${DISK_MB.keptPerMillionHeld} MB a million line items held, and ${DISK_MB.peakPerMillionFetched} MB a million fetched in one window`,
    code: 'DISK_MB in src/errors.ts (measured: docs/benchmarks.md)',
  },
  { what: 'Iceberg commit attempts', value: String(COMMIT_ATTEMPTS), code: 'COMMIT_ATTEMPTS in src/iceberg/table.ts' },
  { what: 'Iceberg metadata files kept', value: String(METADATA_FILES_KEPT), code: 'METADATA_FILES_KEPT in src/iceberg/metadata.ts' },
  {
    what: 'an Iceberg catalog request',
    value: seconds(DEFAULT_CATALOG_TIMEOUT_MS),
    code: 'DEFAULT_CATALOG_TIMEOUT_MS in src/iceberg/rest-client.ts',
  },
  { what: 'shards (--shard I/N, --shard-count N)', value: `at most ${count(MAX_SHARDS)}`, code: 'MAX_SHARDS in src/shards.ts' },
  { what: 'rows push sends a request', value: String(DEFAULT_BATCH_SIZE), code: 'DEFAULT_BATCH_SIZE in src/push/push.ts' },
  { what: 'rows costsync query prints as a table', value: count(MAX_TABLE_ROWS), code: 'MAX_TABLE_ROWS in src/query.ts' },
];

/** The one table: the settings' defaults and ranges, then the variables' and the built-in ones. */
export function limits(): Limit[] {
  return [...settingLimits(), ...BUILT_IN];
}
