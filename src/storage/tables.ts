/**
 * The registry of costsync's tables, declared as data once: where each one's columns come from, its
 * date and source columns, what it derives from, and how each lake writes it. Everything that lists
 * tables reads it: the windowed streams' spool and SQL (`TableSpec`), the names SQL templates may take,
 * `Warehouse.changed`, the Parquet lake, the Iceberg lake and the check that a `--out` holds one format.
 * A test compares each spec with `DESCRIBE` of its table.
 */
import type { SpoolColumn } from './spool.js';

/** Where a table's rows come from. */
export type TableOrigin =
  /** As the API gives them, synced by a stream. */
  | 'api'
  /** Costsync's own record of what the sync saw (anomalies' status changes). */
  | 'history'
  /** A view over another table. */
  | 'view'
  /** One row per run and source (`sync_runs`, `sync_run_streams`). */
  | 'run';

export interface TableDef {
  name: string;
  origin: TableOrigin;
  /**
   * The API's fields, as spooled and stored in the table's order (then `extra` and `source`), for the
   * windowed streams; otherwise the table is as the migrations (`schema`, sql/schema/) or its view
   * (`view`, sql/views/) make it.
   */
  columns: readonly SpoolColumn[] | 'schema' | 'view';
  /** SQL giving a row's date: windows, full refreshes, partitions and manifests go by it. Null: written whole. */
  date: string | null;
  /** The column naming a row's source. */
  source: string;
  /** A table whose partitions change whenever this one's do (the view it is over). */
  derivesFrom?: string;
  /** Whether SQL templates may take its name as `$table`. */
  substitutable: boolean;
  /** Its staging table, which SQL templates may take as `$stage`. */
  stage?: string;
  /**
   * The Parquet lake: `daily`, a file per source and date (`<table>/source=<s>/date=<d>/data.parquet`),
   * rewritten as dates change; `whole`, a file per source rewritten after every run.
   */
  parquet: 'daily' | 'whole';
  /** The Iceberg lake: partitioned by source and by the month of this column; null, by source alone. */
  icebergMonth: string | null;
}

/** Fields as `name type` pairs, in the table's order. Pure. */
function fields(text: string): SpoolColumn[] {
  return text
    .trim()
    .split(/,\s*/)
    .map((pair) => {
      const [name, type] = pair.split(' ') as [string, SpoolColumn['type']];
      return { name, type };
    });
}

/**
 * Every table, in the order the lakes write them. A new table is an entry here, plus what makes it: a
 * migration in sql/schema/ (or a view in sql/views/), and the SQL that fills it.
 */
export const TABLES: readonly TableDef[] = [
  {
    name: 'line_items',
    origin: 'api',
    columns: fields(`id VARCHAR, usage_date DATE, provider_type VARCHAR, provider_service VARCHAR, net_amount_usd DOUBLE,
      currency_original VARCHAR, project_id VARCHAR, user_email VARCHAR`),
    date: 'usage_date',
    source: 'source',
    substitutable: true,
    parquet: 'daily',
    icebergMonth: 'usage_date',
  },
  {
    // The FOCUS 1.2 view: written with line items' partitions, so FOCUS tools read the lake as it is.
    name: 'focus',
    origin: 'view',
    columns: 'view',
    date: 'CAST(ChargePeriodStart AS DATE)',
    source: 'x_source',
    derivesFrom: 'line_items',
    substitutable: false,
    parquet: 'daily',
    icebergMonth: 'ChargePeriodStart',
  },
  {
    name: 'rollups_daily',
    origin: 'api',
    columns: fields('date DATE, group_by VARCHAR, provider_type VARCHAR, service VARCHAR, category VARCHAR, cost_usd DOUBLE'),
    date: 'date',
    source: 'source',
    substitutable: true,
    parquet: 'daily',
    icebergMonth: 'date',
  },
  {
    name: 'anomalies',
    origin: 'api',
    columns: 'schema',
    date: 'CAST(detected_date AS DATE)',
    source: 'source',
    substitutable: true,
    stage: '_stage_anomalies',
    parquet: 'daily',
    icebergMonth: null,
  },
  {
    name: 'anomaly_status_history',
    origin: 'history',
    columns: 'schema',
    date: 'CAST(observed_at AS DATE)',
    source: 'source',
    substitutable: false,
    parquet: 'daily',
    icebergMonth: null,
  },
  {
    name: 'sync_runs',
    origin: 'run',
    columns: 'schema',
    date: null,
    source: 'source',
    substitutable: false,
    parquet: 'whole',
    icebergMonth: null,
  },
  {
    name: 'sync_run_streams',
    origin: 'run',
    columns: 'schema',
    date: null,
    source: 'source',
    substitutable: false,
    parquet: 'whole',
    icebergMonth: null,
  },
];

/** The registry's entry for `name`, or undefined (a table a newer costsync named). */
export function tableDef(name: string): TableDef | undefined {
  return TABLES.find((t) => t.name === name);
}

/** The tables whose partitions change with `table`'s: itself, then what derives from it. */
export function changesWith(table: string): string[] {
  return [table, ...TABLES.filter((t) => t.derivesFrom === table).map((t) => t.name)];
}

/** The Parquet lake's partitioned tables: each row's partition date, and the column naming its source. */
export const LAKE_TABLES: Readonly<Record<string, { date: string; source: string }>> = Object.fromEntries(
  TABLES.filter((t) => t.parquet === 'daily').map((t) => [t.name, { date: t.date!, source: t.source }]),
);

/** Tables written whole, one file per source (and one Iceberg file per source), after every run. */
export const RUN_TABLES: readonly string[] = TABLES.filter((t) => t.parquet === 'whole').map((t) => t.name);

/** A lake table as Iceberg sees it: its source column, its date (null: written whole), the column its month comes from. */
export interface IcebergTableDef {
  source: string;
  date: string | null;
  /** The column the month partition takes; null: one file per source (small tables). */
  month: string | null;
}

/** Every table of the Iceberg lake. */
export const ICEBERG_TABLES: Readonly<Record<string, IcebergTableDef>> = Object.fromEntries(
  TABLES.map((t) => [t.name, { source: t.source, date: t.date, month: t.icebergMonth }]),
);

/** The tables every lake of a sync holds, by which a `--out` shows its format. */
export const API_TABLES: readonly string[] = TABLES.filter((t) => t.origin === 'api').map((t) => t.name);

/** The names SQL templates may take as `$table` or `$stage`. */
export const SUBSTITUTABLE: ReadonlySet<string> = new Set(
  TABLES.flatMap((t) => [...(t.stage === undefined ? [] : [t.stage]), ...(t.substitutable ? [t.name] : [])]),
);

/** A windowed stream's table: its date column and the fields the API gives (any other field goes into `extra`). */
export interface TableSpec {
  table: 'line_items' | 'rollups_daily';
  /** The column holding a row's date: windows, full refreshes and lake partitions go by it. */
  dateField: string;
  /** The API's fields, as spooled and stored, in the table's order; then `extra` and `source`. */
  columns: readonly SpoolColumn[];
}

function windowedSpec(table: TableSpec['table']): TableSpec {
  const def = tableDef(table)!;
  return { table, dateField: def.date!, columns: def.columns as readonly SpoolColumn[] };
}

export const LINE_ITEMS: TableSpec = windowedSpec('line_items');
export const ROLLUPS_DAILY: TableSpec = windowedSpec('rollups_daily');

export const TABLE_SPECS: readonly TableSpec[] = [LINE_ITEMS, ROLLUPS_DAILY];

/** The `read_json` column struct of a table's spooled pages: the line's place `o`, the fields, `extra`. Pure. */
export function spoolColumnsStruct(spec: TableSpec): string {
  return `{${[{ name: 'o', type: 'INTEGER' }, ...spec.columns, { name: 'extra', type: 'JSON' }].map((c) => `${c.name}: '${c.type}'`).join(', ')}}`;
}

/** The names a table's SQL templates take (`$table`, `$date`, `$columns`; see `loadSql`). Pure. */
export function tableNames(spec: TableSpec): { table: string; date: string; columns: string } {
  return { table: spec.table, date: spec.dateField, columns: spoolColumnsStruct(spec) };
}
