import { describe, expect, it } from 'vitest';
import {
  decodeManifest,
  decodeManifestList,
  encodeManifest,
  encodeManifestList,
  type ManifestEntry,
  type PartitionSpec,
} from '../../src/iceberg/avro.js';
import {
  currentSnapshot,
  expireSnapshots,
  mainSnapshotId,
  metadataVersion,
  newTableMetadata,
  withoutSnapshots,
  type Snapshot,
  type TableMetadata,
} from '../../src/iceberg/metadata.js';
import { applyUpdates, expiryChange, snapshotChange } from '../../src/iceberg/updates.js';
import { tableTarget, vendedConfig } from '../../src/outputs/iceberg-catalog.js';
import type { OutputTarget } from '../../src/outputs/target.js';

/** A snapshot committed as a catalog applies it. */
const withSnapshot = (m: TableMetadata, s: Snapshot, previousFile: string | null) =>
  applyUpdates(m, snapshotChange(m, s, null).updates, { previousFile, nowMs: s['timestamp-ms'] });
import { boundBytes, boundDate, evolveSchema, icebergType, monthLabel, monthOrdinal, monthRange } from '../../src/iceberg/schema.js';
import { backoffMs, parseVersionHint, partitionSpec } from '../../src/iceberg/table.js';

const COLUMNS = [
  { name: 'id', type: 'VARCHAR' },
  { name: 'usage_date', type: 'DATE' },
  { name: 'amount', type: 'DOUBLE' },
  { name: 'source', type: 'VARCHAR' },
];

describe('Iceberg schemas from the warehouse (pure)', () => {
  it('maps each DuckDB type the tables use, and refuses one it does not know', () => {
    expect(
      ['VARCHAR', 'JSON', 'DATE', 'TIMESTAMP WITH TIME ZONE', 'DOUBLE', 'BIGINT', 'INTEGER', 'DECIMAL(38,10)'].map(icebergType),
    ).toEqual(['string', 'string', 'date', 'timestamptz', 'double', 'long', 'int', 'decimal(38, 10)']);
    expect(() => icebergType('BLOB')).toThrow(/BLOB/);
  });

  it('a new column gets a new schema id and the next field id; known columns keep theirs; no change, no new schema', () => {
    const first = evolveSchema(COLUMNS, null, 0);
    expect(first.schema.fields.map((f) => [f.id, f.name])).toEqual([
      [1, 'id'],
      [2, 'usage_date'],
      [3, 'amount'],
      [4, 'source'],
    ]);
    expect(evolveSchema(COLUMNS, first.schema, first.lastColumnId)).toMatchObject({ changed: false, schema: first.schema });
    const added = evolveSchema(
      [...COLUMNS.slice(0, 3), { name: 'region', type: 'VARCHAR' }, COLUMNS[3]!],
      first.schema,
      first.lastColumnId,
    );
    expect(added.changed).toBe(true);
    expect(added.schema['schema-id']).toBe(1);
    expect(added.schema.fields.map((f) => [f.id, f.name])).toEqual([
      [1, 'id'],
      [2, 'usage_date'],
      [3, 'amount'],
      [5, 'region'],
      [4, 'source'],
    ]);
  });

  it("months: the ordinal of Iceberg's month transform, and its date range", () => {
    expect(monthOrdinal('1970-01-31')).toBe(0);
    expect(monthOrdinal('2025-06-15')).toBe((2025 - 1970) * 12 + 5);
    expect(monthRange(monthOrdinal('2025-12-03'))).toEqual({ start: '2025-12-01', next: '2026-01-01' });
    expect(monthLabel(monthOrdinal('2025-02-28'))).toBe('2025-02');
  });

  it('bounds in the single-value binary form: dates as days, times as microseconds, doubles and decimals; strings get none', () => {
    expect(boundBytes('date', '1970-01-02')).toEqual(Buffer.from([1, 0, 0, 0]));
    const ts = boundBytes('timestamptz', '1970-01-01 00:00:01.5+00')!;
    expect(ts.readBigInt64LE()).toBe(1_500_000n);
    expect(boundBytes('double', '2.5')!.readDoubleLE()).toBe(2.5);
    expect(boundBytes('decimal(38, 10)', '1.5')).toEqual(Buffer.from([0x03, 0x7e, 0x11, 0xd6, 0x00]));
    expect(boundBytes('decimal(38, 2)', '-1.00')).toEqual(Buffer.from([0x9c]));
    expect(boundBytes('decimal(38, 2)', '-1.29')).toEqual(Buffer.from([0xff, 0x7f]));
    expect(boundBytes('decimal(38, 2)', '1.28')).toEqual(Buffer.from([0x00, 0x80]));
    expect(boundBytes('string', 'abc')).toBeNull();
  });

  it('the date a bound falls on (UTC), read back from the form boundBytes writes; another type or a broken bound gives none', () => {
    expect(boundDate('date', boundBytes('date', '2025-06-30')!)).toBe('2025-06-30');
    expect(boundDate('timestamptz', boundBytes('timestamptz', '2025-06-30 23:59:59.999+00')!)).toBe('2025-06-30');
    expect(boundDate('timestamptz', boundBytes('timestamptz', '2025-07-01 01:00:00+02')!)).toBe('2025-06-30');
    expect(boundDate('double', boundBytes('double', '2.5')!)).toBeNull();
    expect(boundDate('timestamptz', Buffer.from([1, 2, 3]))).toBeNull();
    expect(boundDate('timestamptz', Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]))).toBeNull();
  });
});

describe('table metadata (pure)', () => {
  const schema = evolveSchema(COLUMNS, null, 0).schema;
  const spec: PartitionSpec = partitionSpec(schema, { source: 'source', month: 'usage_date' });
  const base = newTableMetadata({ uuid: 'u', location: 'file:///lake/t', schema, lastColumnId: 4, spec, nowMs: 1_000 });
  const snap = (id: number, ms: number, seq: number): Snapshot => ({
    'snapshot-id': id,
    'sequence-number': seq,
    'timestamp-ms': ms,
    'manifest-list': `file:///lake/t/metadata/snap-${id}.avro`,
    summary: { operation: 'append' },
    'schema-id': 0,
  });

  it('the partition spec: the source (identity) first, then the month of the date column', () => {
    expect(spec.fields).toEqual([
      { name: 'source', transform: 'identity', 'source-id': 4, 'field-id': 1000 },
      { name: 'usage_date_month', transform: 'month', 'source-id': 2, 'field-id': 1001 },
    ]);
  });

  it('a snapshot becomes current, on main, in the snapshot log; the file it was built on joins the metadata log', () => {
    const one = withSnapshot(base, snap(11, 2_000, 1), null);
    const two = withSnapshot(one, snap(22, 3_000, 2), 'file:///lake/t/metadata/v1.metadata.json');
    expect(two).toMatchObject({
      'current-snapshot-id': 22,
      'last-sequence-number': 2,
      refs: { main: { 'snapshot-id': 22, type: 'branch' } },
    });
    expect(two['snapshot-log'].map((e) => e['snapshot-id'])).toEqual([11, 22]);
    expect(two['metadata-log']).toEqual([{ 'timestamp-ms': 2_000, 'metadata-file': 'file:///lake/t/metadata/v1.metadata.json' }]);
    expect(metadataVersion('file:///lake/t/metadata/v12.metadata.json')).toBe(12);
  });

  it("main's snapshot: its ref, else current-snapshot-id (format v1 metadata has no refs); none for -1, a table with no snapshot or no table", () => {
    const two = withSnapshot(withSnapshot(base, snap(11, 2_000, 1), null), snap(22, 3_000, 2), null);
    expect(mainSnapshotId(two)).toBe(22);
    expect(currentSnapshot(two)?.['snapshot-id']).toBe(22);
    const { refs: _refs, ...v1 } = two;
    expect(mainSnapshotId(v1 as TableMetadata)).toBe(22);
    expect(currentSnapshot({ ...two, refs: { main: { 'snapshot-id': 11, type: 'branch' } } })?.['snapshot-id']).toBe(11);
    expect(mainSnapshotId(base)).toBeNull();
    expect(mainSnapshotId({ ...two, refs: {}, 'current-snapshot-id': -1 })).toBeNull();
    expect(mainSnapshotId(null)).toBeNull();
  });

  it('a commit states what it was built on: the table, main (null before any snapshot), and with a new schema the schema and last column id it extends', () => {
    const one = withSnapshot(base, snap(11, 2_000, 1), null);
    const wider = evolveSchema([...COLUMNS, { name: 'extra', type: 'BIGINT' }], schema, 4);
    expect(snapshotChange(base, snap(11, 2_000, 1), null).requirements).toEqual([
      { type: 'assert-table-uuid', uuid: 'u' },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null },
    ]);
    const change = snapshotChange(one, snap(22, 3_000, 2), wider.schema);
    expect(change.requirements).toEqual([
      { type: 'assert-table-uuid', uuid: 'u' },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 11 },
      { type: 'assert-current-schema-id', 'current-schema-id': 0 },
      { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 4 },
    ]);
    expect(change.updates.map((u) => u.action)).toEqual(['add-schema', 'set-current-schema', 'add-snapshot', 'set-snapshot-ref']);
    const two = applyUpdates(one, change.updates, { previousFile: 'file:///lake/t/metadata/v1.metadata.json', nowMs: 3_000 });
    expect(two).toMatchObject({ 'current-schema-id': 1, 'last-column-id': 5, 'current-snapshot-id': 22 });
    expect(two.schemas.map((s) => s['schema-id'])).toEqual([0, 1]);
    // An expiry is built on main too, and drops the snapshots it names.
    const expired = applyUpdates(two, expiryChange(two, [11]).updates, { previousFile: null, nowMs: 4_000 });
    expect(expiryChange(two, [11]).requirements).toContainEqual({ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 22 });
    expect(expired.snapshots.map((s) => s['snapshot-id'])).toEqual([22]);
    expect(expired['last-updated-ms']).toBe(4_000);
    expect(() => applyUpdates(one, [{ action: 'set-current-schema', 'schema-id': -1 }], { previousFile: null, nowMs: 0 })).toThrow(
      /without a schema added/,
    );
  });

  it("a catalog's table anywhere is written with the lake's keys (<table>/…); vended storage settings are the longest matching prefix's", async () => {
    const seen: string[] = [];
    const inner = {
      location: (key: string) => (key === '' ? 's3://b/wh/t-1/' : `s3://b/wh/t-1/${key}`),
      putBytes: async (key: string) => {
        seen.push(key);
      },
      list: async (prefix: string) => [`${prefix}x.avro`],
    } as unknown as OutputTarget;
    const t = tableTarget(inner, 'line_items');
    expect(t.location('line_items')).toBe('s3://b/wh/t-1');
    expect(t.location('line_items/')).toBe('s3://b/wh/t-1/');
    expect(t.location('line_items/metadata/m.avro')).toBe('s3://b/wh/t-1/metadata/m.avro');
    await t.putBytes('line_items/data/f.parquet', Buffer.from(''));
    expect(seen).toEqual(['data/f.parquet']);
    expect(await t.list('line_items/metadata/')).toEqual(['line_items/metadata/x.avro']);
    expect(() => t.location('focus/metadata/m.avro')).toThrow(/not under the table line_items/);

    const result = {
      metadata: {} as TableMetadata,
      config: { 's3.access-key-id': 'general' },
      'storage-credentials': [
        { prefix: 's3://b/', config: { 's3.access-key-id': 'bucket' } },
        { prefix: 's3://b/wh/t-1', config: { 's3.access-key-id': 'table' } },
        { prefix: 's3://other/', config: { 's3.access-key-id': 'elsewhere' } },
      ],
    };
    expect(vendedConfig(result, 's3://b/wh/t-1')).toEqual({ 's3.access-key-id': 'table' });
    expect(vendedConfig({ metadata: result.metadata, config: result.config }, 's3://b/wh/t-1')).toEqual({ 's3.access-key-id': 'general' });
    expect(vendedConfig({ metadata: result.metadata, config: { 'client.region': 'x' } }, 's3://b/wh/t-1')).toBeNull();
  });

  it('expiry keeps the current snapshot and the newest one before the cutoff (time travel to any moment within the retention)', () => {
    let m = base;
    [1, 2, 3, 4, 5].forEach((day, i) => {
      m = withSnapshot(m, snap(day, day * 86_400_000, i + 1), null);
    });
    const { metadata, expired } = expireSnapshots(m, 5 * 86_400_000, 2.5 * 86_400_000);
    expect(expired.map((s) => s['snapshot-id'])).toEqual([1]);
    expect(metadata.snapshots.map((s) => s['snapshot-id'])).toEqual([2, 3, 4, 5]);
    // Everything past the retention: only the current snapshot is left.
    expect(expireSnapshots(m, 100 * 86_400_000, 0).metadata.snapshots.map((s) => s['snapshot-id'])).toEqual([5]);
  });

  it('expiry keeps every snapshot a tag or branch names: the time travel a user asked to keep', () => {
    let m = base;
    [1, 2, 3, 4, 5].forEach((day, i) => {
      m = withSnapshot(m, snap(day, day * 86_400_000, i + 1), null);
    });
    const tagged = {
      ...m,
      refs: {
        ...m.refs,
        'month-close-2026-10': { 'snapshot-id': 2, type: 'tag' as const },
        audit: { 'snapshot-id': 3, type: 'branch' as const },
      },
    };
    expect(expireSnapshots(tagged, 100 * 86_400_000, 0).metadata.snapshots.map((s) => s['snapshot-id'])).toEqual([2, 3, 5]);
  });

  it('the version hint: bare digits, or digits with whitespace around them (older lakes end it in a newline); anything else names no version', () => {
    expect(['6', '6\n', ' 12\r\n', '', 'x', '-1', '6.5', '6\n7'].map(parseVersionHint)).toEqual([6, 6, 12, 0, 0, 0, 0, 0]);
    expect(parseVersionHint(null)).toBe(0);
  });

  it("removing snapshots truncates the snapshot log after the last entry of one removed, never in the middle (the spec's rule)", () => {
    let m = base;
    [1, 2, 3, 4, 5].forEach((id, i) => {
      m = withSnapshot(m, snap(id, id * 1_000, i + 1), null);
    });
    // 2 stays (another writer's, say) though 1 and 3 go: its entry would say it was current while 3 was.
    const without = withoutSnapshots(m, new Set([1, 3]));
    expect(without.snapshots.map((s) => s['snapshot-id'])).toEqual([2, 4, 5]);
    expect(without['snapshot-log'].map((e) => e['snapshot-id'])).toEqual([4, 5]);
    expect(withoutSnapshots(m, new Set([1, 2]))['snapshot-log'].map((e) => e['snapshot-id'])).toEqual([3, 4, 5]);
    expect(withoutSnapshots(m, new Set())).toEqual(m);
  });

  it('a lost race waits a little longer each time, jittered, and never more than 3 s', () => {
    expect(backoffMs(1, () => 0.5)).toBe(50);
    expect(backoffMs(3, () => 0)).toBe(100);
    expect(backoffMs(30, () => 1)).toBe(3_000);
  });
});

describe('manifests and manifest lists (Avro)', () => {
  const schema = evolveSchema(COLUMNS, null, 0).schema;
  const spec = partitionSpec(schema, { source: 'source', month: 'usage_date' });
  const entry: ManifestEntry = {
    status: 1,
    snapshot_id: 7,
    sequence_number: 3,
    file_sequence_number: 3,
    data_file: {
      content: 0,
      file_path: 'file:///lake/t/data/a.parquet',
      file_format: 'PARQUET',
      partition: { source: 'default', usage_date_month: 665 },
      record_count: 10,
      file_size_in_bytes: 1234,
      column_sizes: [{ key: 1, value: 100 }],
      value_counts: [{ key: 1, value: 10 }],
      null_value_counts: [{ key: 1, value: 0 }],
      nan_value_counts: null,
      lower_bounds: [{ key: 2, value: Buffer.from([1, 0, 0, 0]) }],
      upper_bounds: [{ key: 2, value: Buffer.from([9, 0, 0, 0]) }],
      key_metadata: null,
      split_offsets: null,
      equality_ids: null,
      sort_order_id: null,
    },
  };

  it('a manifest round-trips, and its header carries the schema, the spec and the field ids readers map by', async () => {
    const bytes = await encodeManifest([entry], schema, spec);
    expect(await decodeManifest(bytes)).toEqual([entry]);
    const header = bytes.subarray(0, 4000).toString('latin1');
    expect(header).toContain('"field-id":102');
    expect(header).toContain('format-version');
    expect(header).toContain('partition-spec');
    expect(header).toContain('usage_date_month');
  });

  it('a manifest list round-trips', async () => {
    const file = {
      manifest_path: 'file:///lake/t/metadata/m.avro',
      manifest_length: 99,
      partition_spec_id: 0,
      content: 0 as const,
      sequence_number: 3,
      min_sequence_number: 1,
      added_snapshot_id: 7,
      added_files_count: 1,
      existing_files_count: 2,
      deleted_files_count: 0,
      added_rows_count: 10,
      existing_rows_count: 20,
      deleted_rows_count: 0,
      partitions: [{ contains_null: false, contains_nan: false, lower_bound: Buffer.from('default'), upper_bound: Buffer.from('default') }],
      key_metadata: null,
    };
    expect(await decodeManifestList(await encodeManifestList([file], { id: 7, parentId: null, sequenceNumber: 3 }))).toEqual([file]);
  });
});
