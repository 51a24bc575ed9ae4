/**
 * A commit as the REST catalog protocol states it (requirements, then updates applied in order), and
 * the pure step that applies one to table metadata, as a catalog does: the directory tables apply
 * their own commits with it, so both kinds of table take the same change.
 */
import { InternalError } from '../errors.js';
import { METADATA_FILES_KEPT, mainSnapshotId, withoutSnapshots, type Snapshot, type TableMetadata } from './metadata.js';
import type { IcebergSchema } from './schema.js';
import type { TableChange, TableRequirement, TableUpdate } from './rest-types.js';

/** The highest field id of a schema (its last assigned column id, for `add-schema`). */
export function lastFieldId(schema: IcebergSchema): number {
  return Math.max(0, ...schema.fields.map((f) => f.id));
}

/**
 * The change that makes `snapshot` the current one of `base`, with `schema` added first when it is
 * new. Its requirements are what the snapshot was built on: the table, the current snapshot of `main`
 * (null for a table without one), and with a new schema the schema and last column id it extends. Pure.
 */
export function snapshotChange(base: TableMetadata, snapshot: Snapshot, schema: IcebergSchema | null): TableChange {
  const requirements: TableRequirement[] = [
    { type: 'assert-table-uuid', uuid: base['table-uuid'] },
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': mainSnapshotId(base) },
  ];
  const updates: TableUpdate[] = [];
  if (schema !== null) {
    requirements.push(
      { type: 'assert-current-schema-id', 'current-schema-id': base['current-schema-id'] },
      { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': base['last-column-id'] },
    );
    updates.push(
      { action: 'add-schema', schema, 'last-column-id': lastFieldId(schema) },
      { action: 'set-current-schema', 'schema-id': -1 },
    );
  }
  updates.push(
    { action: 'add-snapshot', snapshot },
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshot['snapshot-id'] },
  );
  return { requirements, updates };
}

/** The change that expires `ids` from `base`, built on its current snapshot of `main`. Pure. */
export function expiryChange(base: TableMetadata, ids: readonly number[]): TableChange {
  return {
    requirements: [
      { type: 'assert-table-uuid', uuid: base['table-uuid'] },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': mainSnapshotId(base) },
    ],
    updates: [{ action: 'remove-snapshots', 'snapshot-ids': [...ids] }],
  };
}

/**
 * `base` with `updates` applied in order, as a catalog applies a commit; `previousFile` (the metadata
 * file `base` was read from, null for a new table) joins the metadata log. Pure.
 */
export function applyUpdates(
  base: TableMetadata,
  updates: readonly TableUpdate[],
  o: { previousFile: string | null; nowMs: number },
): TableMetadata {
  let m = base;
  let lastAddedSchema: number | null = null;
  for (const u of updates) {
    switch (u.action) {
      case 'add-schema':
        m = {
          ...m,
          schemas: [...m.schemas.filter((s) => s['schema-id'] !== u.schema['schema-id']), u.schema],
          'last-column-id': Math.max(m['last-column-id'], u['last-column-id'] ?? lastFieldId(u.schema)),
        };
        lastAddedSchema = u.schema['schema-id'];
        break;
      case 'set-current-schema': {
        const id = u['schema-id'] === -1 ? lastAddedSchema : u['schema-id'];
        if (id === null) throw new InternalError('set-current-schema -1 without a schema added before it.');
        m = { ...m, 'current-schema-id': id };
        break;
      }
      case 'add-snapshot':
        m = {
          ...m,
          snapshots: [...m.snapshots, u.snapshot],
          'last-sequence-number': Math.max(m['last-sequence-number'], u.snapshot['sequence-number']),
          'last-updated-ms': Math.max(m['last-updated-ms'], u.snapshot['timestamp-ms']),
        };
        break;
      case 'set-snapshot-ref':
        m = {
          ...m,
          refs: { ...m.refs, [u['ref-name']]: { 'snapshot-id': u['snapshot-id'], type: 'branch' } },
          ...(u['ref-name'] === 'main' && {
            'current-snapshot-id': u['snapshot-id'],
            'snapshot-log': [...m['snapshot-log'], { 'timestamp-ms': snapshotTime(m, u['snapshot-id']), 'snapshot-id': u['snapshot-id'] }],
          }),
        };
        break;
      case 'remove-snapshots':
        m = withoutSnapshots(m, new Set(u['snapshot-ids']));
        break;
      case 'set-properties':
        m = { ...m, properties: { ...m.properties, ...u.updates } };
        break;
      case 'remove-properties':
        m = { ...m, properties: Object.fromEntries(Object.entries(m.properties).filter(([k]) => !u.removals.includes(k))) };
        break;
    }
  }
  const log =
    o.previousFile === null
      ? m['metadata-log']
      : [...m['metadata-log'], { 'timestamp-ms': base['last-updated-ms'], 'metadata-file': o.previousFile }];
  return { ...m, 'last-updated-ms': Math.max(o.nowMs, m['last-updated-ms']), 'metadata-log': log.slice(-METADATA_FILES_KEPT) };
}

function snapshotTime(m: TableMetadata, id: number): number {
  return m.snapshots.find((s) => s['snapshot-id'] === id)?.['timestamp-ms'] ?? m['last-updated-ms'];
}
