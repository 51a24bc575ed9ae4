/**
 * Manifests and manifest lists: Avro object container files in the shapes the Iceberg spec (format
 * version 2) gives, with its field ids, written and read through `avsc`.
 */
import type avro from 'avsc';
import { avsc } from '../cjs-libraries.js';
import type { IcebergSchema } from './schema.js';

/** A partition spec's field, as the table metadata holds it. */
export interface PartitionField {
  name: string;
  transform: 'identity' | 'month';
  'source-id': number;
  'field-id': number;
}

export interface PartitionSpec {
  'spec-id': number;
  fields: PartitionField[];
}

/** A partition's values, by partition field name (`source` a string, `<date>_month` months since 1970). */
export type PartitionValues = Record<string, string | number | null>;

export interface DataFile {
  content: 0;
  file_path: string;
  file_format: 'PARQUET';
  partition: PartitionValues;
  record_count: number;
  file_size_in_bytes: number;
  column_sizes: { key: number; value: number }[] | null;
  value_counts: { key: number; value: number }[] | null;
  null_value_counts: { key: number; value: number }[] | null;
  nan_value_counts: { key: number; value: number }[] | null;
  lower_bounds: { key: number; value: Buffer }[] | null;
  upper_bounds: { key: number; value: Buffer }[] | null;
  key_metadata: null;
  split_offsets: null;
  equality_ids: null;
  sort_order_id: null;
}

/** 0 existing, 1 added, 2 deleted (in the snapshot that wrote the manifest). */
export type EntryStatus = 0 | 1 | 2;

export interface ManifestEntry {
  status: EntryStatus;
  snapshot_id: number;
  sequence_number: number;
  file_sequence_number: number;
  data_file: DataFile;
}

export interface FieldSummary {
  contains_null: boolean;
  contains_nan: boolean | null;
  lower_bound: Buffer | null;
  upper_bound: Buffer | null;
}

export interface ManifestFile {
  manifest_path: string;
  manifest_length: number;
  partition_spec_id: number;
  content: 0;
  sequence_number: number;
  min_sequence_number: number;
  added_snapshot_id: number;
  added_files_count: number;
  existing_files_count: number;
  deleted_files_count: number;
  added_rows_count: number;
  existing_rows_count: number;
  deleted_rows_count: number;
  partitions: FieldSummary[] | null;
  key_metadata: null;
}

const optional = (type: unknown) => ['null', type];

/** An Iceberg map with non-string keys: an Avro array of key/value records. */
function intMap(name: string, keyId: number, valueId: number, valueType: string) {
  return {
    type: 'array',
    logicalType: 'map',
    items: {
      type: 'record',
      name,
      fields: [
        { name: 'key', type: 'int', 'field-id': keyId },
        { name: 'value', type: valueType, 'field-id': valueId },
      ],
    },
  };
}

function partitionRecord(spec: PartitionSpec) {
  return {
    type: 'record',
    name: 'r102',
    fields: spec.fields.map((f) => ({
      name: f.name,
      type: optional(f.transform === 'month' ? 'int' : 'string'),
      default: null,
      'field-id': f['field-id'],
    })),
  };
}

/** The manifest entry schema for a partition spec. */
export function manifestEntrySchema(spec: PartitionSpec) {
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      { name: 'status', type: 'int', 'field-id': 0 },
      { name: 'snapshot_id', type: optional('long'), default: null, 'field-id': 1 },
      { name: 'sequence_number', type: optional('long'), default: null, 'field-id': 3 },
      { name: 'file_sequence_number', type: optional('long'), default: null, 'field-id': 4 },
      {
        name: 'data_file',
        'field-id': 2,
        type: {
          type: 'record',
          name: 'r2',
          fields: [
            { name: 'content', type: 'int', 'field-id': 134 },
            { name: 'file_path', type: 'string', 'field-id': 100 },
            { name: 'file_format', type: 'string', 'field-id': 101 },
            { name: 'partition', type: partitionRecord(spec), 'field-id': 102 },
            { name: 'record_count', type: 'long', 'field-id': 103 },
            { name: 'file_size_in_bytes', type: 'long', 'field-id': 104 },
            { name: 'column_sizes', type: optional(intMap('k117_v118', 117, 118, 'long')), default: null, 'field-id': 108 },
            { name: 'value_counts', type: optional(intMap('k119_v120', 119, 120, 'long')), default: null, 'field-id': 109 },
            { name: 'null_value_counts', type: optional(intMap('k121_v122', 121, 122, 'long')), default: null, 'field-id': 110 },
            { name: 'nan_value_counts', type: optional(intMap('k138_v139', 138, 139, 'long')), default: null, 'field-id': 137 },
            { name: 'lower_bounds', type: optional(intMap('k126_v127', 126, 127, 'bytes')), default: null, 'field-id': 125 },
            { name: 'upper_bounds', type: optional(intMap('k129_v130', 129, 130, 'bytes')), default: null, 'field-id': 128 },
            { name: 'key_metadata', type: optional('bytes'), default: null, 'field-id': 131 },
            { name: 'split_offsets', type: optional({ type: 'array', items: 'long', 'element-id': 133 }), default: null, 'field-id': 132 },
            { name: 'equality_ids', type: optional({ type: 'array', items: 'int', 'element-id': 136 }), default: null, 'field-id': 135 },
            { name: 'sort_order_id', type: optional('int'), default: null, 'field-id': 140 },
          ],
        },
      },
    ],
  };
}

export const MANIFEST_FILE_SCHEMA = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    { name: 'manifest_path', type: 'string', 'field-id': 500 },
    { name: 'manifest_length', type: 'long', 'field-id': 501 },
    { name: 'partition_spec_id', type: 'int', 'field-id': 502 },
    { name: 'content', type: 'int', 'field-id': 517 },
    { name: 'sequence_number', type: 'long', 'field-id': 515 },
    { name: 'min_sequence_number', type: 'long', 'field-id': 516 },
    { name: 'added_snapshot_id', type: 'long', 'field-id': 503 },
    { name: 'added_files_count', type: 'int', 'field-id': 504 },
    { name: 'existing_files_count', type: 'int', 'field-id': 505 },
    { name: 'deleted_files_count', type: 'int', 'field-id': 506 },
    { name: 'added_rows_count', type: 'long', 'field-id': 512 },
    { name: 'existing_rows_count', type: 'long', 'field-id': 513 },
    { name: 'deleted_rows_count', type: 'long', 'field-id': 514 },
    {
      name: 'partitions',
      default: null,
      'field-id': 507,
      type: optional({
        type: 'array',
        'element-id': 508,
        items: {
          type: 'record',
          name: 'r508',
          fields: [
            { name: 'contains_null', type: 'boolean', 'field-id': 509 },
            { name: 'contains_nan', type: optional('boolean'), default: null, 'field-id': 518 },
            { name: 'lower_bound', type: optional('bytes'), default: null, 'field-id': 510 },
            { name: 'upper_bound', type: optional('bytes'), default: null, 'field-id': 511 },
          ],
        },
      }),
    },
    { name: 'key_metadata', type: optional('bytes'), default: null, 'field-id': 519 },
  ],
};

/** Longs are JavaScript numbers (avsc refuses one past 2^53; costsync's ids and counts stay below it). */
function encode(schema: object, records: readonly object[], metadata: Record<string, string>): Promise<Buffer> {
  return new Promise((resolvePromise, reject) => {
    // Given the schema itself (not a Type), the header keeps it as written: with its field ids.
    const encoder = new (avsc().streams.BlockEncoder)(
      schema as avro.Schema,
      {
        codec: 'deflate',
        metadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, Buffer.from(v)])),
      } as never,
    );
    const chunks: Buffer[] = [];
    encoder.on('data', (c: Buffer) => chunks.push(c));
    encoder.on('error', reject);
    encoder.on('end', () => resolvePromise(Buffer.concat(chunks)));
    for (const r of records) encoder.write(r);
    encoder.end();
  });
}

/**
 * The Avro types of the writer schemas read so far, by their text: a manifest's header carries its
 * schema, and compiling it is most of reading a small manifest (a runner reads one a source and table
 * at a run's start). A table's manifests share a handful of schemas; the cache is bounded all the same.
 */
const parsedTypes = new Map<string, unknown>();
const PARSED_TYPES_MAX = 64;

function parsedType(schema: unknown): unknown {
  const key = JSON.stringify(schema);
  let type = parsedTypes.get(key);
  if (type === undefined) {
    type = avsc().Type.forSchema(schema as never);
    if (parsedTypes.size >= PARSED_TYPES_MAX) parsedTypes.delete(parsedTypes.keys().next().value!);
    parsedTypes.set(key, type);
  }
  return type;
}

function decode<T>(bytes: Buffer): Promise<{ records: T[]; metadata: Record<string, string> }> {
  return new Promise((resolvePromise, reject) => {
    const records: T[] = [];
    let metadata: Record<string, string> = {};
    const decoder = new (avsc().streams.BlockDecoder)({ parseHook: parsedType as never });
    decoder.on('metadata', (_type: unknown, _codec: unknown, header: { meta: Record<string, Buffer> }) => {
      metadata = Object.fromEntries(Object.entries(header.meta).map(([k, v]) => [k, v.toString()]));
    });
    decoder.on('data', (r: T) => records.push(r));
    decoder.on('error', reject);
    decoder.on('end', () => resolvePromise({ records, metadata }));
    decoder.end(bytes);
  });
}

/** A manifest of data files, with the header metadata readers use to interpret its partitions. */
export function encodeManifest(entries: readonly ManifestEntry[], schema: IcebergSchema, spec: PartitionSpec): Promise<Buffer> {
  return encode(manifestEntrySchema(spec), entries, {
    schema: JSON.stringify(schema),
    'schema-id': String(schema['schema-id']),
    'partition-spec': JSON.stringify(spec.fields),
    'partition-spec-id': String(spec['spec-id']),
    'format-version': '2',
    content: 'data',
  });
}

export async function decodeManifest(bytes: Buffer): Promise<ManifestEntry[]> {
  return (await decode<ManifestEntry>(bytes)).records;
}

export function encodeManifestList(
  manifests: readonly ManifestFile[],
  snapshot: { id: number; parentId: number | null; sequenceNumber: number },
): Promise<Buffer> {
  return encode(MANIFEST_FILE_SCHEMA, manifests, {
    'snapshot-id': String(snapshot.id),
    'parent-snapshot-id': snapshot.parentId === null ? 'null' : String(snapshot.parentId),
    'sequence-number': String(snapshot.sequenceNumber),
    'format-version': '2',
  });
}

export async function decodeManifestList(bytes: Buffer): Promise<ManifestFile[]> {
  return (await decode<ManifestFile>(bytes)).records;
}
