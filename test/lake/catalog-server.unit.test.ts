/**
 * The pure steps of the tests' Iceberg REST catalog (test/catalog/server.mjs): ids assigned on create,
 * requirements, updates, durations. Its routes are tested over HTTP in test/lake/catalog-server.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { applyUpdates, checkRequirements, durationMs, newTableMetadata } from '../catalog/server.mjs';

const create = (request: unknown, firstFieldId = 1) => newTableMetadata(request, { location: 'file:///t', firstFieldId, nowMs: 1000 });

const status = (fn: () => unknown): number | 'ok' => {
  try {
    fn();
    return 'ok';
  } catch (error) {
    return (error as { status: number }).status;
  }
};

describe('the test catalog’s table metadata', () => {
  it('numbers a struct’s fields before the fields inside them, as a catalog assigns fresh ids', () => {
    const metadata = create(
      {
        name: 't',
        schema: {
          type: 'struct',
          fields: [
            {
              id: 7,
              name: 'tags',
              required: false,
              type: { type: 'map', 'key-id': 8, key: 'string', 'value-id': 9, value: 'string', 'value-required': false },
            },
            {
              id: 3,
              name: 'point',
              required: false,
              type: { type: 'struct', fields: [{ id: 4, name: 'x', required: true, type: 'double' }] },
            },
            { id: 5, name: 'list', required: false, type: { type: 'list', 'element-id': 6, element: 'long', 'element-required': true } },
          ],
          'identifier-field-ids': [],
        },
        'write-order': {
          'order-id': 5,
          fields: [{ 'source-id': 5, transform: 'identity', direction: 'asc', 'null-order': 'nulls-first' }],
        },
      },
      11,
    );
    const [tags, point, list] = metadata.schemas[0].fields;
    expect([tags.id, point.id, list.id]).toEqual([11, 12, 13]);
    expect([tags.type['key-id'], tags.type['value-id'], point.type.fields[0].id, list.type['element-id']]).toEqual([14, 15, 16, 17]);
    expect(metadata['last-column-id']).toBe(17);
    expect(metadata['sort-orders']).toEqual([{ 'order-id': 1, fields: [expect.objectContaining({ 'source-id': 13 })] }]);
    expect(metadata['last-partition-id']).toBe(999);
  });

  it('refuses a spec naming a column the schema lacks, a month of a string, and format versions but 2; gives zstd unless asked otherwise', () => {
    const schema = { type: 'struct', fields: [{ id: 1, name: 's', required: true, type: 'string' }] };
    const spec = (sourceId: number, transform: string) => ({ fields: [{ name: 'p', transform, 'source-id': sourceId }] });
    expect(status(() => create({ name: 't', schema, 'partition-spec': spec(2, 'identity') }))).toBe(400);
    expect(status(() => create({ name: 't', schema, 'partition-spec': spec(1, 'month') }))).toBe(400);
    expect(status(() => create({ name: 't', schema, properties: { 'format-version': '3' } }))).toBe(400);
    expect(create({ name: 't', schema, properties: { 'format-version': '2', a: 'b' } }).properties).toEqual({
      a: 'b',
      'write.parquet.compression-codec': 'zstd',
    });
    expect(create({ name: 't', schema, properties: { 'write.parquet.compression-codec': 'snappy' } }).properties).toEqual({
      'write.parquet.compression-codec': 'snappy',
    });
  });
});

describe('the test catalog’s commits', () => {
  const base = () => {
    const m = create({ name: 't', schema: { type: 'struct', fields: [{ id: 1, name: 's', required: true, type: 'string' }] } });
    const snap = (id: number, parent: number | null, seq: number) => ({
      'snapshot-id': id,
      ...(parent !== null && { 'parent-snapshot-id': parent }),
      'sequence-number': seq,
      'timestamp-ms': 2000 + id,
      'manifest-list': `file:///t/metadata/snap-${id}.avro`,
      summary: { operation: 'append' },
      'schema-id': 0,
    });
    const add = (id: number, parent: number | null, seq: number) => [
      { action: 'add-snapshot', snapshot: snap(id, parent, seq) },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id },
    ];
    return applyUpdates(m, [...add(1, null, 1), ...add(2, 1, 2), ...add(3, 2, 3)], 5000).metadata;
  };

  it('asserting that a ref does not exist fails once it does', () => {
    const m = base();
    expect(status(() => checkRequirements(m, [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }]))).toBe(409);
    expect(status(() => checkRequirements(m, [{ type: 'assert-ref-snapshot-id', ref: 'audit', 'snapshot-id': null }]))).toBe('ok');
    expect(status(() => checkRequirements(m, [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 3 }]))).toBe('ok');
    expect(status(() => checkRequirements(m, [{ type: 'assert-something-else' }]))).toBe(400);
  });

  it('removing snapshots drops the refs to them and the snapshot log up to the last one gone', () => {
    const m = base();
    expect(m['snapshot-log'].map((e: any) => e['snapshot-id'])).toEqual([1, 2, 3]);
    const tagged = applyUpdates(m, [{ action: 'set-snapshot-ref', 'ref-name': 'keep', type: 'tag', 'snapshot-id': 2 }], 6000).metadata;
    const removed = applyUpdates(tagged, [{ action: 'remove-snapshots', 'snapshot-ids': [2] }], 7000).metadata;
    expect(removed.snapshots.map((s: any) => s['snapshot-id'])).toEqual([1, 3]);
    expect(Object.keys(removed.refs)).toEqual(['main']);
    expect(removed['snapshot-log'].map((e: any) => e['snapshot-id'])).toEqual([3]);
    const all = applyUpdates(m, [{ action: 'remove-snapshots', 'snapshot-ids': [3] }], 7000).metadata;
    expect(all['current-snapshot-id']).toBe(-1);
    expect(all.refs).toEqual({});
  });

  it('an identical schema added again keeps its id; a lower last-column-id and a column’s type changed but by promotion are refused', () => {
    const m = base();
    const same = applyUpdates(
      m,
      [
        { action: 'add-schema', schema: { ...m.schemas[0], 'schema-id': 9 } },
        { action: 'set-current-schema', 'schema-id': -1 },
      ],
      1,
    );
    expect(same.metadata.schemas).toHaveLength(1);
    expect(same.metadata['current-schema-id']).toBe(0);
    expect(status(() => applyUpdates(m, [{ action: 'add-schema', schema: m.schemas[0], 'last-column-id': 0 }], 1))).toBe(400);
    expect(status(() => applyUpdates(m, [{ action: 'set-current-schema', 'schema-id': -1 }], 1))).toBe(400);
    const retyped = (type: string) => ({ type: 'struct', fields: [{ id: 1, name: 's', required: true, type }] });
    expect(status(() => applyUpdates(m, [{ action: 'add-schema', schema: retyped('long') }], 1))).toBe(400);
    const decimal = applyUpdates(
      m,
      [{ action: 'add-schema', schema: { type: 'struct', fields: [{ id: 2, name: 'd', required: false, type: 'decimal(9, 2)' }] } }],
      1,
    );
    expect(
      status(() =>
        applyUpdates(
          decimal.metadata,
          [{ action: 'add-schema', schema: { type: 'struct', fields: [{ id: 2, name: 'd', required: false, type: 'decimal(12,2)' }] } }],
          1,
        ),
      ),
    ).toBe('ok');
    expect(
      status(() =>
        applyUpdates(
          decimal.metadata,
          [{ action: 'add-schema', schema: { type: 'struct', fields: [{ id: 2, name: 'd', required: false, type: 'decimal(12,3)' }] } }],
          1,
        ),
      ),
    ).toBe(400);
  });
});

describe('ISO 8601 durations', () => {
  it('reads days, hours, minutes and seconds, and refuses what is not one', () => {
    expect(durationMs('PT30M')).toBe(1_800_000);
    expect(durationMs('P1DT1H1M1.5S')).toBe(90_061_500);
    expect(() => durationMs('30M')).toThrow();
    expect(() => durationMs('PT')).toThrow();
  });
});
