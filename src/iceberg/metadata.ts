/**
 * Table metadata (format version 2) as plain data, and its pure steps: a new table, and snapshots
 * expired past the retention. A commit's updates are applied by `updates.ts`; the I/O is in `table.ts`.
 */
import type { PartitionSpec } from './avro.js';
import type { IcebergSchema } from './schema.js';

export interface Snapshot {
  'snapshot-id': number;
  'parent-snapshot-id'?: number;
  'sequence-number': number;
  'timestamp-ms': number;
  'manifest-list': string;
  summary: Record<string, string> & { operation: 'append' | 'overwrite' | 'delete' | 'replace' };
  'schema-id': number;
}

export interface TableMetadata {
  'format-version': 2;
  'table-uuid': string;
  location: string;
  'last-sequence-number': number;
  'last-updated-ms': number;
  'last-column-id': number;
  'current-schema-id': number;
  schemas: IcebergSchema[];
  'default-spec-id': number;
  'partition-specs': PartitionSpec[];
  'last-partition-id': number;
  'default-sort-order-id': 0;
  'sort-orders': [{ 'order-id': 0; fields: [] }];
  properties: Record<string, string>;
  'current-snapshot-id': number;
  refs: Record<string, { 'snapshot-id': number; type: 'branch' | 'tag' }>;
  snapshots: Snapshot[];
  'snapshot-log': { 'timestamp-ms': number; 'snapshot-id': number }[];
  'metadata-log': { 'timestamp-ms': number; 'metadata-file': string }[];
}

/** Older metadata files named in `metadata-log` (and kept on storage); older ones are deleted. */
export const METADATA_FILES_KEPT = 10;

/** Summary keys costsync adds to each snapshot: which run, source and window changed what. */
export const SUMMARY = {
  runId: 'costsync.run-id',
  commitId: 'costsync.commit-id',
  source: 'costsync.source',
  /** A batch's sources, comma-separated (a snapshot of one source has only `source`). */
  sources: 'costsync.sources',
  window: 'costsync.window',
  /** A repair's snapshot (`repairTable`): the snapshot it replaced, which could not be read whole. */
  repairedFrom: 'costsync.repaired-from',
} as const;

/** A table with no snapshot yet. */
export function newTableMetadata(o: {
  uuid: string;
  location: string;
  schema: IcebergSchema;
  lastColumnId: number;
  spec: PartitionSpec;
  nowMs: number;
}): TableMetadata {
  return {
    'format-version': 2,
    'table-uuid': o.uuid,
    location: o.location,
    'last-sequence-number': 0,
    'last-updated-ms': o.nowMs,
    'last-column-id': o.lastColumnId,
    'current-schema-id': o.schema['schema-id'],
    schemas: [o.schema],
    'default-spec-id': o.spec['spec-id'],
    'partition-specs': [o.spec],
    'last-partition-id': Math.max(999, ...o.spec.fields.map((f) => f['field-id'])),
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: { 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'snappy', 'created-by': 'costsync' },
    'current-snapshot-id': -1,
    refs: {},
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
  };
}

export function currentSchema(m: TableMetadata): IcebergSchema {
  return m.schemas.find((s) => s['schema-id'] === m['current-schema-id'])!;
}

/** The snapshot `main` points at (its ref, else `current-snapshot-id`, which the spec keeps equal); null: none yet, or no table. */
export function mainSnapshotId(m: TableMetadata | null): number | null {
  // Format v1 metadata, as older writers leave it, may have no refs.
  const refs = m?.refs;
  const id = refs?.main?.['snapshot-id'] ?? m?.['current-snapshot-id'];
  return id === undefined || id === -1 ? null : id;
}

export function currentSnapshot(m: TableMetadata): Snapshot | null {
  const id = mainSnapshotId(m);
  return m.snapshots.find((s) => s['snapshot-id'] === id) ?? null;
}

/**
 * Drops snapshots older than `retentionMs` (the current one always stays, and so does the newest one
 * taken before the cutoff, so time travel to any moment within the retention still has a snapshot).
 * Returns the new metadata and the snapshots dropped. Pure.
 */
export function expireSnapshots(m: TableMetadata, nowMs: number, retentionMs: number): { metadata: TableMetadata; expired: Snapshot[] } {
  const cutoff = nowMs - retentionMs;
  const older = m.snapshots.filter((s) => s['timestamp-ms'] < cutoff).sort((a, b) => a['timestamp-ms'] - b['timestamp-ms']);
  const keepAtCutoff = older.at(-1)?.['snapshot-id'];
  // What a user asked to keep: every snapshot a tag or branch names (main among them) stays for time travel.
  const named = new Set<number>([...Object.values(m.refs ?? {}).map((r) => r['snapshot-id'])]);
  const main = mainSnapshotId(m);
  if (main !== null) named.add(main);
  const expired = older.filter((s) => s['snapshot-id'] !== keepAtCutoff && !named.has(s['snapshot-id']));
  if (expired.length === 0) return { metadata: m, expired };
  return { metadata: withoutSnapshots(m, new Set(expired.map((s) => s['snapshot-id']))), expired };
}

/**
 * `m` without the snapshots `gone`. The snapshot log loses every entry up to the last one naming a
 * snapshot no longer kept, as the spec says: an entry dropped from the middle would claim the snapshot
 * before it was current during the removed one's time. Pure.
 */
export function withoutSnapshots(m: TableMetadata, gone: ReadonlySet<number>): TableMetadata {
  const snapshots = m.snapshots.filter((s) => !gone.has(s['snapshot-id']));
  const kept = new Set(snapshots.map((s) => s['snapshot-id']));
  const log = m['snapshot-log'];
  return { ...m, snapshots, 'snapshot-log': log.slice(log.findLastIndex((e) => !kept.has(e['snapshot-id'])) + 1) };
}

/** The key (relative to the table) of metadata version `n`. */
export function metadataKey(n: number): string {
  return `metadata/v${n}.metadata.json`;
}

/** The version number of a metadata key or URL (`…/v12.metadata.json` → 12), else null. */
export function metadataVersion(name: string): number | null {
  const m = /(?:^|\/)v(\d+)\.metadata\.json$/.exec(name);
  return m ? Number(m[1]) : null;
}
