/**
 * The registry of costsync's tables, declared as data once: where each one's columns come from, its
 * date and source columns, what it derives from, and how each lake writes it. Everything that lists
 * tables reads it: the windowed streams' spool and SQL (`TableSpec`), the names SQL templates may take,
 * `Warehouse.changed`, the Parquet lake, the Iceberg lake and the check that a `--out` holds one format.
 * The API tables' columns are declared here with the API field each comes from and its check
 * (`api/validate.ts` reads them); test/architecture/table-declared-once.unit.test.ts fails when a migration, a sync SQL
 * file or a wire type lists them otherwise.
 */
import type { SpoolColumn } from './spool.js';
import {
  ANOMALY_COLUMNS,
  LINE_ITEM_COLUMNS,
  MONEY_TYPE,
  ROLLUP_COLUMNS,
  type ColumnDecl,
  type FieldCheck,
  type FieldNames,
} from '../api/fields.js';
export type { FieldCheck };

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

/** A column of a table synced from the API. */
export interface ApiColumn extends SpoolColumn {
  /** The API record's field its value comes from; null for one costsync fills (rollups' `group_by`: the request's). */
  field: string | null;
  /** What the field is checked for as it arrives; null with no field. */
  check: FieldCheck | null;
}

export interface TableDef {
  name: string;
  origin: TableOrigin;
  /**
   * An API table's columns in the table's order, before `extra` (the fields the API sent beyond these),
   * `own` and `source`; for the windowed streams, also what is spooled. Otherwise the table is as the
   * migrations (`schema`, sql/schema/) or its view (`view`, sql/views/) make it.
   */
  columns: readonly ApiColumn[] | 'schema' | 'view';
  /** Columns costsync keeps of its own, after `extra` and before `source` (anomalies' first and last sighting). */
  own?: readonly SpoolColumn[];
  /** SQL giving a row's date: windows, full refreshes, partitions and manifests go by it. Null: written whole. */
  date: string | null;
  /** The column naming a row's source. */
  source: string;
  /** A windowed stream's table: the columns that tell its rows apart within a source (a window's replace compares the others). */
  key?: readonly string[];
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

/** Declarations as columns. Pure. */
function apiColumns(decls: readonly ColumnDecl[]): ApiColumn[] {
  return decls.map(([name, type, check]) => ({ name, type, field: check === null ? null : name, check }));
}

/** The API fields of each API table, as types: the wire types (`api/types.ts`) are checked against them. */
export interface ApiFields {
  line_items: FieldNames<typeof LINE_ITEM_COLUMNS>;
  rollups_daily: FieldNames<typeof ROLLUP_COLUMNS>;
  anomalies: FieldNames<typeof ANOMALY_COLUMNS>;
}

/**
 * Every table, in the order the lakes write them. A new table is an entry here, plus what makes it: a
 * migration in sql/schema/ (or a view in sql/views/), and the SQL that fills it.
 */
export const TABLES: readonly TableDef[] = [
  {
    name: 'line_items',
    origin: 'api',
    columns: apiColumns(LINE_ITEM_COLUMNS),
    date: 'usage_date',
    source: 'source',
    key: ['id'],
    substitutable: true,
    parquet: 'daily',
    icebergMonth: 'usage_date',
  },
  // The FOCUS views (1.2, 1.3, 1.4; sql/views/060_focus.sql, 061_focus_versions.sql): written with line
  // items' partitions, so a FOCUS tool reads its version from the lake as it is.
  ...(['focus', 'focus_1_3', 'focus_1_4'] as const).map((name): TableDef => ({
    name,
    origin: 'view',
    columns: 'view',
    date: 'CAST(ChargePeriodStart AS DATE)',
    source: 'x_source',
    derivesFrom: 'line_items',
    substitutable: false,
    parquet: 'daily',
    icebergMonth: 'ChargePeriodStart',
  })),
  {
    name: 'rollups_daily',
    origin: 'api',
    columns: apiColumns(ROLLUP_COLUMNS),
    key: ['date', 'group_by', 'provider_type', 'service', 'category'],
    date: 'date',
    source: 'source',
    substitutable: true,
    parquet: 'daily',
    icebergMonth: 'date',
  },
  {
    name: 'anomalies',
    origin: 'api',
    columns: apiColumns(ANOMALY_COLUMNS),
    own: [
      { name: 'first_seen_at', type: 'TIMESTAMPTZ' },
      { name: 'last_seen_at', type: 'TIMESTAMPTZ' },
    ],
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

/**
 * The money columns each lake writes as DOUBLE, though the warehouse holds them as MONEY_TYPE: the lakes'
 * have been doubles since the first lake, and a column's type cannot change under its readers (Iceberg
 * allows no double to decimal; a table of Parquet files of two types is one a glob reads wrongly or not at
 * all). The FOCUS table's costs were decimals from the start and stay so.
 */
export const LAKE_DOUBLES: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  TABLES.filter((t) => t.origin === 'api').map((t) => [
    t.name,
    (t.columns as readonly ApiColumn[]).filter((c) => c.type === MONEY_TYPE).map((c) => c.name),
  ]),
);

/** `*` of `table` as a lake writes it: its money columns as the lake's doubles. Pure. */
export function lakeStar(table: string): string {
  const doubles = LAKE_DOUBLES[table] ?? [];
  return doubles.length === 0 ? '*' : `* REPLACE (${doubles.map((c) => `"${c}"::DOUBLE AS "${c}"`).join(', ')})`;
}

/** Tables written whole, one file per source (and one Iceberg file per source), after every run. */
export const RUN_TABLES: readonly string[] = TABLES.filter((t) => t.parquet === 'whole').map((t) => t.name);

/** A lake table as Iceberg sees it: its source column, its date (null: written whole), the column its month comes from. */
export interface IcebergTableDef {
  source: string;
  date: string | null;
  /** The column the month partition takes; null: one file per source (small tables). */
  month: string | null;
  /** The column `date` is taken from (its bounds in a data file give the file's dates); null: written whole. */
  dateColumn: string | null;
}

/** Every table of the Iceberg lake. */
export const ICEBERG_TABLES: Readonly<Record<string, IcebergTableDef>> = Object.fromEntries(
  TABLES.map((t) => [
    t.name,
    {
      source: t.source,
      date: t.date,
      month: t.icebergMonth,
      dateColumn: t.date === null ? null : (/^CAST\((\w+) AS DATE\)$/.exec(t.date)?.[1] ?? t.date),
    },
  ]),
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
  /** The columns that tell a source's rows apart. */
  key: readonly string[];
}

/** An API table's declared columns. */
export function apiColumnsOf(table: keyof ApiFields): readonly ApiColumn[] {
  return tableDef(table)!.columns as readonly ApiColumn[];
}

/** An API table's fields and what each is checked for, in the table's order (`api/validate.ts`). */
export function fieldChecks(table: keyof ApiFields): (readonly [string, FieldCheck])[] {
  return apiColumnsOf(table).flatMap((c) => (c.field === null || c.check === null ? [] : [[c.field, c.check] as const]));
}

function windowedSpec(table: TableSpec['table']): TableSpec {
  const def = tableDef(table)!;
  return { table, dateField: def.date!, columns: apiColumnsOf(table), key: def.key! };
}

export const LINE_ITEMS: TableSpec = windowedSpec('line_items');
export const ROLLUPS_DAILY: TableSpec = windowedSpec('rollups_daily');

export const TABLE_SPECS: readonly TableSpec[] = [LINE_ITEMS, ROLLUPS_DAILY];

/**
 * The columns of a table's spooled rows (`spoolPage`: `[o, ...fields, extra]`, read by `read_json` as
 * text values `r`): each value cast to its column's type and named. Pure.
 */
export function spoolColumnsSelect(spec: TableSpec): string {
  return [{ name: 'o', type: 'INTEGER' }, ...spec.columns, { name: 'extra', type: 'JSON' }]
    .map((c, i) => `CAST(r[${i + 1}] AS ${c.type}) AS ${c.name}`)
    .join(', ');
}

/**
 * The names a table's SQL templates take (`$table`, `$date`, `$columns`, `$fields`: the stored columns
 * before `source`, in the table's order; `$changed`: whether a row `old` differs from `staged` outside
 * the key; see `loadSql`). Pure.
 */
export function tableNames(spec: TableSpec): { table: string; date: string; columns: string; fields: string; changed: string } {
  const stored = [...spec.columns.map((c) => c.name), 'extra'];
  const compared = stored.filter((c) => !spec.key.includes(c)).map((c) => (c === 'extra' ? 'extra::VARCHAR' : c));
  const tuple = (side: string) => `(${compared.map((c) => `${side}.${c}`).join(', ')})`;
  return {
    table: spec.table,
    date: spec.dateField,
    columns: spoolColumnsSelect(spec),
    fields: stored.join(', '),
    changed: `${tuple('old')} IS DISTINCT FROM ${tuple('staged')}`,
  };
}
