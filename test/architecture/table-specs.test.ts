import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSql, withWarehouse } from '../../src/storage/duckdb.js';
import { LAKE_TABLES, TABLES, TABLE_SPECS, spoolColumnsSelect, tableNames } from '../../src/storage/tables.js';
import { lineItemsStream, rollupsStream } from '../../src/sync/streams.js';
import { withTempDir } from '../support/helpers.js';

describe('one table spec per windowed stream (storage/tables.ts)', () => {
  it('each spec is its table as the migrations make it: the fields, then extra and source, by name and type', async () => {
    await withTempDir(async (dir) =>
      withWarehouse(join(dir, 'w.duckdb'), async (wh) => {
        for (const spec of TABLE_SPECS) {
          const described = await wh.sql<{ column_name: string; column_type: string }>(`DESCRIBE ${spec.table}`);
          expect(
            described.map((c) => [c.column_name, c.column_type]),
            spec.table,
          ).toEqual([...spec.columns.map((c) => [c.name, c.type]), ['extra', 'JSON'], ['source', 'VARCHAR']]);
        }
      }),
    );
  });

  it('every table of the registry is in a fresh warehouse, with its source column; its date expression and Iceberg month column read it', async () => {
    await withTempDir(async (dir) =>
      withWarehouse(join(dir, 'w.duckdb'), async (wh) => {
        for (const def of TABLES) {
          const [row] = await wh.sql<{ n: number }>(
            `SELECT count(*) AS n FROM (SELECT ${[def.source, def.date, def.icebergMonth].filter((c) => c !== null).join(', ')} FROM ${def.name})`,
          );
          expect({ table: def.name, n: row!.n }).toEqual({ table: def.name, n: 0 });
          for (const stage of def.stage === undefined ? [] : [def.stage])
            expect(await wh.sql(`SELECT count(*) AS n FROM ${stage}`)).toEqual([{ n: 0 }]);
        }
      }),
    );
  });

  it("drives the streams, the spooled columns, the window SQL and the lake's partition date", () => {
    expect([lineItemsStream.table, rollupsStream.table]).toEqual(TABLE_SPECS);
    for (const spec of TABLE_SPECS) {
      expect(LAKE_TABLES[spec.table]!.date).toBe(spec.dateField);
      const names = tableNames(spec);
      expect(loadSql('sync/window_delete', names)).toContain(`DELETE FROM ${spec.table} WHERE ${spec.dateField} BETWEEN`);
      expect(spoolColumnsSelect(spec)).toBe(
        [
          'CAST(r[1] AS INTEGER) AS o',
          ...spec.columns.map((c, i) => `CAST(r[${i + 2}] AS ${c.type}) AS ${c.name}`),
          `CAST(r[${spec.columns.length + 2}] AS JSON) AS extra`,
        ].join(', '),
      );
    }
    expect(loadSql('sync/line_items_insert_window', tableNames(TABLE_SPECS[0]!))).toContain(
      `SELECT ${spoolColumnsSelect(TABLE_SPECS[0]!)}, filename`,
    );
    // The stored columns and what a replace compares come from the registry, not lists restated in SQL.
    for (const [spec, insert, diff] of [
      [TABLE_SPECS[0]!, 'sync/line_items_insert_window', 'sync/line_items_diff'],
      [TABLE_SPECS[0]!, 'sync/line_items_insert_unique', 'sync/line_items_diff'],
      [TABLE_SPECS[1]!, 'sync/rollups_insert_window', 'sync/rollups_diff'],
    ] as const) {
      const stored = [...spec.columns.map((c) => c.name), 'extra'];
      expect(loadSql(insert, tableNames(spec))).toContain(`INSERT INTO ${spec.table} (${stored.join(', ')}, source)`);
      const compared = stored.filter((c) => !spec.key.includes(c));
      expect(loadSql(diff, tableNames(spec))).toContain(`(old.${compared.join(', old.')}::VARCHAR) IS DISTINCT FROM (staged.`);
      expect(loadSql(diff, tableNames(spec))).not.toMatch(/\$[a-z]/);
    }
    expect(() => loadSql('sync/line_items_insert_window', { fields: 'id) SELECT 1; --' })).toThrow(/not a substitutable fields/);
    // Only names of these shapes are written into SQL.
    expect(() => loadSql('sync/window_count', { table: 'line_items; DROP TABLE x' })).toThrow(/not a substitutable table/);
    expect(() => loadSql('sync/window_count', { date: 'usage_date OR 1=1' })).toThrow(/not a substitutable date/);
  });
});
