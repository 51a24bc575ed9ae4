/**
 * The outbox (`_costsync_outbox`): derived outputs recorded as pending in the transaction that causes
 * them, produced after the commit, and cleared once in place, so a killed run leaves them for the next.
 * Items are typed here, and this module alone turns them into the stored (kind, key) pair and back,
 * including the forms earlier versions wrote: the stored kinds stay as they were (metrics and older
 * warehouses read them), whatever the items are called.
 */
import type { DuckDBValue } from '@duckdb/node-api';

export type OutboxItem =
  /** A lake partition (either format) to rewrite from the warehouse: the rows of one date of one source. */
  | { kind: 'partition'; table: string; source: string; date: string }
  /** An Iceberg commit in flight: its dates are cleared if it landed, and the source's unreferenced files removed. */
  | { kind: 'iceberg-commit'; table: string; source: string; commitId: string; months: readonly number[] | null }
  /** An Iceberg expiry in flight: the files it may have left are removed. */
  | { kind: 'iceberg-expiry'; table: string; sources: readonly string[]; runId: string }
  /** A Parquet lake's manifest of one source; null: an earlier version's one manifest of the whole lake. */
  | { kind: 'manifest'; source: string | null }
  /**
   * A source's rows of the run tables (sync_runs, …) changed since the lake's copy was written: written
   * after the run's publish, so the lake holds the rows as the warehouse and the published file do.
   */
  | { kind: 'run-tables'; source: string }
  /** The working copy has commits the published warehouse lacks. */
  | { kind: 'publish' }
  /** A snapshot of the working copy is taken and its upload to the bucket is due. */
  | { kind: 'upload' };

export type OutboxKind = OutboxItem['kind'];
export type ItemOf<K extends OutboxKind> = Extract<OutboxItem, { kind: K }>;

/** An item as stored. */
export interface OutboxRow {
  kind: string;
  key: string;
}

/** An item read from the outbox, with the row it was read from (which may be an earlier version's form). */
export type Pending<T extends OutboxItem = OutboxItem> = T & { readonly row: OutboxRow };

/** The stored kind of each item kind. */
const STORED: Record<OutboxKind, string> = {
  // Both lakes take their pending dates from here; the name is from when Parquet was the only one.
  partition: 'parquet',
  'iceberg-commit': 'iceberg',
  'iceberg-expiry': 'iceberg',
  manifest: 'manifest',
  'run-tables': 'run_tables',
  publish: 'publish',
  upload: 'publish',
};

/** What an expiry's commit id ends with (after the run id). */
const EXPIRE = '.expire';
/** The source of partitions recorded before there were sources (migration 004 gave their rows this one). */
const SOURCE_BEFORE_SOURCES = 'default';

const DATE = String.raw`\d{4}-\d{2}-\d{2}`;
const PARTITION = new RegExp(String.raw`^([^/]+)/([^/]+)/(${DATE})$`);
const PARTITION_BEFORE_SOURCES = new RegExp(String.raw`^([^/]+)/(${DATE})$`);
const INTENT = /^([^/]+)\/([^/]+)\/([^/]+)\/([^/]*)$/;

/** The row that stores `item`. Pure. */
export function encode(item: OutboxItem): OutboxRow {
  const kind = STORED[item.kind];
  switch (item.kind) {
    case 'partition':
      return { kind, key: `${item.table}/${item.source}/${item.date}` };
    case 'iceberg-commit':
      return { kind, key: `${item.table}/${item.source}/${item.commitId}/${item.months === null ? '*' : item.months.join(',')}` };
    case 'iceberg-expiry':
      return { kind, key: `${item.table}/${item.sources.join(',')}/${item.runId}${EXPIRE}/` };
    case 'manifest':
      return { kind, key: item.source ?? '' };
    case 'run-tables':
      return { kind, key: item.source };
    case 'publish':
      return { kind, key: '' };
    case 'upload':
      return { kind, key: 'upload' };
  }
}

/** The item a row stores (this version's form or an earlier one's), or null for a row this version cannot read. Pure. */
export function decode(row: OutboxRow): OutboxItem | null {
  switch (row.kind) {
    case 'parquet': {
      const m = PARTITION.exec(row.key);
      if (m) return { kind: 'partition', table: m[1]!, source: m[2]!, date: m[3]! };
      const old = PARTITION_BEFORE_SOURCES.exec(row.key);
      return old ? { kind: 'partition', table: old[1]!, source: SOURCE_BEFORE_SOURCES, date: old[2]! } : null;
    }
    case 'iceberg': {
      const m = INTENT.exec(row.key);
      if (!m) return null;
      const [, table, sources, commitId, months] = m as unknown as [string, string, string, string, string];
      if (commitId.endsWith(EXPIRE) && months === '')
        return { kind: 'iceberg-expiry', table, sources: sources.split(','), runId: commitId.slice(0, -EXPIRE.length) };
      const list = months === '*' ? null : months === '' ? [] : months.split(',').map(Number);
      if (list?.some((n) => !Number.isInteger(n))) return null;
      return { kind: 'iceberg-commit', table, source: sources, commitId, months: list };
    }
    case 'manifest':
      return { kind: 'manifest', source: row.key === '' ? null : row.key };
    case 'run_tables':
      return row.key === '' ? null : { kind: 'run-tables', source: row.key };
    case 'publish':
      return row.key === 'upload' ? { kind: 'upload' } : { kind: 'publish' };
    default:
      return null;
  }
}

/** What the outbox needs of the warehouse. */
export interface OutboxStore {
  run(name: string, params?: DuckDBValue[]): Promise<number>;
  query<T = Record<string, unknown>>(name: string, params?: DuckDBValue[]): Promise<T[]>;
}

/** The pending items of `kinds`, oldest key first within each stored kind; rows this version cannot read are left alone. */
export async function pending<K extends OutboxKind>(store: Pick<OutboxStore, 'query'>, ...kinds: K[]): Promise<Pending<ItemOf<K>>[]> {
  const wanted = new Set<OutboxKind>(kinds);
  const items: Pending<ItemOf<K>>[] = [];
  for (const kind of new Set(kinds.map((k) => STORED[k]))) {
    for (const { key } of await store.query<{ key: string }>('outbox/pending', [kind])) {
      const row = { kind, key };
      const item = decode(row);
      if (item !== null && wanted.has(item.kind)) items.push({ ...(item as ItemOf<K>), row });
    }
  }
  return items;
}

/** The stored kinds of `kinds`, for SQL that counts rows by kind. Pure. */
export function storedKinds(kinds: readonly OutboxKind[]): string[] {
  return [...new Set(kinds.map((k) => STORED[k]))];
}

/** Records `item` as pending (idempotent). */
export async function mark(store: OutboxStore, item: OutboxItem): Promise<void> {
  const { kind, key } = encode(item);
  await store.run('outbox/mark', [kind, key]);
}

/** Records `items` as pending (idempotent), one statement per stored kind. */
export async function markMany(store: OutboxStore, items: readonly OutboxItem[]): Promise<void> {
  for (const [kind, keys] of keysByKind(items.map(encode))) await store.run('outbox/mark_many', [kind, keys]);
}

/** Clears `items` (as `done` does each), one statement per stored kind: a lake's batch clears a statement, not one a date. */
export async function doneMany(store: OutboxStore, items: readonly (OutboxItem | Pending)[]): Promise<void> {
  const rows = items.map((item) => ('row' in item ? item.row : encode(item)));
  for (const [kind, keys] of keysByKind(rows)) await store.run('outbox/done_many', [kind, keys]);
}

/** Stored rows grouped by kind, each kind's keys one a line (no key holds a line break). */
function keysByKind(rows: readonly OutboxRow[]): Map<string, string> {
  const byKind = new Map<string, string[]>();
  for (const { kind, key } of rows) (byKind.get(kind) ?? byKind.set(kind, []).get(kind)!).push(key);
  return new Map([...byKind].map(([kind, keys]) => [kind, keys.join('\n')]));
}

/** Clears `item`: the row it was read from, or this version's form of it. */
export async function done(store: OutboxStore, item: OutboxItem | Pending): Promise<void> {
  const { kind, key } = 'row' in item ? item.row : encode(item);
  await store.run('outbox/done', [kind, key]);
}

/** Clears the publish and the upload both, in one statement (a snapshot taken supersedes either). */
export async function donePublishing(store: OutboxStore): Promise<void> {
  await store.run('outbox/done_kind', [STORED.publish]);
}

/** The sources with a lake partition pending. */
export async function sourcesBehind(store: OutboxStore): Promise<Set<string>> {
  return new Set((await pending(store, 'partition')).map((p) => p.source));
}
