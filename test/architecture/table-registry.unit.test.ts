import { describe, expect, it } from 'vitest';
import {
  API_TABLES,
  ICEBERG_TABLES,
  LAKE_TABLES,
  LINE_ITEMS,
  ROLLUPS_DAILY,
  RUN_TABLES,
  SUBSTITUTABLE,
  TABLES,
  TABLE_SPECS,
  changesWith,
  tableDef,
} from '../../src/storage/tables.js';

describe('the table registry (storage/tables.ts) and the lists derived from it', () => {
  it('the Parquet lake partitions seven tables by date, each with its date expression and source column', () => {
    expect(LAKE_TABLES).toEqual({
      line_items: { date: 'usage_date', source: 'source' },
      focus: { date: 'CAST(ChargePeriodStart AS DATE)', source: 'x_source' },
      focus_1_3: { date: 'CAST(ChargePeriodStart AS DATE)', source: 'x_source' },
      focus_1_4: { date: 'CAST(ChargePeriodStart AS DATE)', source: 'x_source' },
      rollups_daily: { date: 'date', source: 'source' },
      anomalies: { date: 'CAST(detected_date AS DATE)', source: 'source' },
      anomaly_status_history: { date: 'CAST(observed_at AS DATE)', source: 'source' },
    });
    expect(Object.keys(LAKE_TABLES)).toEqual([
      'line_items',
      'focus',
      'focus_1_3',
      'focus_1_4',
      'rollups_daily',
      'anomalies',
      'anomaly_status_history',
    ]);
  });

  it('the run tables are written whole, and Iceberg takes every table, partitioned by month where it has a month column', () => {
    expect(RUN_TABLES).toEqual(['sync_runs', 'sync_run_streams']);
    expect(Object.keys(ICEBERG_TABLES)).toEqual([...Object.keys(LAKE_TABLES), ...RUN_TABLES]);
    expect(Object.fromEntries(Object.entries(ICEBERG_TABLES).map(([t, d]) => [t, [d.source, d.month]]))).toEqual({
      line_items: ['source', 'usage_date'],
      focus: ['x_source', 'ChargePeriodStart'],
      focus_1_3: ['x_source', 'ChargePeriodStart'],
      focus_1_4: ['x_source', 'ChargePeriodStart'],
      rollups_daily: ['source', 'date'],
      anomalies: ['source', null],
      anomaly_status_history: ['source', null],
      sync_runs: ['source', null],
      sync_run_streams: ['source', null],
    });
    // A month partition reads its range by the table's date.
    for (const def of Object.values(ICEBERG_TABLES)) if (def.month !== null) expect(def.date).not.toBeNull();
  });

  it('the FOCUS tables change with line_items; every other table only with itself', () => {
    expect(changesWith('line_items')).toEqual(['line_items', 'focus', 'focus_1_3', 'focus_1_4']);
    for (const t of ['rollups_daily', 'anomalies', 'anomaly_status_history', 'focus', 'focus_1_3']) expect(changesWith(t)).toEqual([t]);
    // A table named by a newer costsync is its own.
    expect(changesWith('budgets')).toEqual(['budgets']);
  });

  it('SQL templates take the synced tables and the anomaly stage, nothing else; the format check probes the synced tables', () => {
    expect([...SUBSTITUTABLE].sort()).toEqual(['_stage_anomalies', 'anomalies', 'line_items', 'rollups_daily']);
    expect(API_TABLES).toEqual(['line_items', 'rollups_daily', 'anomalies']);
  });

  it("the windowed streams' specs are the registry's entries", () => {
    expect(TABLE_SPECS).toEqual([LINE_ITEMS, ROLLUPS_DAILY]);
    for (const spec of TABLE_SPECS) {
      const def = tableDef(spec.table)!;
      expect(spec.dateField).toBe(def.date);
      expect(spec.columns).toBe(def.columns);
    }
    expect(LINE_ITEMS.columns.map((c) => c.name)).toEqual([
      'id',
      'usage_date',
      'provider_type',
      'provider_service',
      'net_amount_usd',
      'currency_original',
      'project_id',
      'user_email',
    ]);
    expect(new Set(TABLES.map((t) => t.name)).size).toBe(TABLES.length);
    expect(tableDef('budgets')).toBeUndefined();
  });
});
