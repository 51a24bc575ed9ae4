import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { MONEY_TYPE } from '../../src/api/fields.js';
import { withWarehouse } from '../../src/storage/duckdb.js';
import { ExitCode } from '../../src/errors.js';
import { decimalText } from '../../src/query.js';
import { run, withTempDir } from '../support/helpers.js';

describe('money', () => {
  it('is held as exact decimals: any sum an analyst writes is exact to the cent, in the tables and the views', async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'c.duckdb');
      await withWarehouse(db, async (wh) => {
        // 0.1 + 0.2 + 0.1 as doubles is 0.4000000000000001; ten of them 1.0000000000000002.
        for (const [day, usd] of [
          ['2025-06-01', '0.1'],
          ['2025-06-02', '0.2'],
          ['2025-06-03', '0.1'],
        ])
          await wh.sql(
            `INSERT INTO rollups_daily (source, date, group_by, provider_type, cost_usd) VALUES ('default', '${day}', 'provider', 'aws', ${usd})`,
          );
        for (let i = 0; i < 10; i++)
          await wh.sql(
            `INSERT INTO line_items (source, id, usage_date, provider_type, net_amount_usd) VALUES ('default', 'li-${i}', '2025-06-04', 'gcp', 0.1)`,
          );
        const types = await wh.sql<{ table_name: string; column_name: string; data_type: string }>(
          `SELECT table_name, column_name, data_type FROM duckdb_columns()
           WHERE column_name IN ('net_amount_usd', 'cost_usd', 'actual_cost', 'expected_cost') AND table_name IN ('line_items', 'rollups_daily', 'anomalies')
           ORDER BY ALL`,
        );
        expect(types.map((t) => t.data_type)).toEqual(types.map(() => MONEY_TYPE));
        expect(types).toHaveLength(4);
      });
      const csv = await run([
        'query',
        '--db',
        db,
        '--format',
        'csv',
        `SELECT (SELECT sum(cost_usd) FROM rollups_daily) AS rollups, (SELECT sum(net_amount_usd) FROM line_items) AS items,
                (SELECT sum(cost_usd) FROM daily_spend_by_provider) AS view`,
      ]);
      expect(csv.code, csv.stderr).toBe(ExitCode.OK);
      // CSV prints money: the exact decimal, down to two places.
      expect(csv.stdout).toBe('rollups,items,view\n0.40,1.00,1.40\n');
      const json = await run(['query', '--db', db, '--format', 'json', 'SELECT sum(cost_usd) AS rollups FROM rollups_daily']);
      expect(JSON.parse(json.stdout)).toEqual([{ rollups: 0.4 }]);
    });
  });

  it('a decimal prints as money: its trailing zeros dropped down to two places, no digit of the amount lost', () => {
    expect(decimalText('60965.4200000000')).toBe('60965.42');
    expect(decimalText('10.0000000000')).toBe('10.00');
    expect(decimalText('6378.30')).toBe('6378.30');
    expect(decimalText('0.0004000000')).toBe('0.0004');
    expect(decimalText('-1.5000000000')).toBe('-1.50');
    expect(decimalText('5.5')).toBe('5.5');
    expect(decimalText('42')).toBe('42');
    expect(decimalText('12.3456789012')).toBe('12.3456789012');
  });
});
