/**
 * `--format iceberg`: every lake table as an Apache Iceberg table (format version 2) at
 * `OUT/<table>/`, exact after any crash. The same outbox as the Parquet lake says which dates of which
 * source changed; here a source's month is the unit of a file (`data/source=<s>/<date>_month=<YYYY-MM>/`),
 * rewritten whole from the warehouse, so a table never gathers small files. One batch (a table, a
 * source, up to a year of months) is one snapshot: `overwrite` when it replaces files, `append` when
 * the months are new; a month whose new file has the same bytes as its file in the table is left out,
 * so a lookback that changed nothing makes no snapshot.
 *
 * Before a batch writes anything, an intent naming its commit id is recorded in the outbox; the
 * snapshot's summary carries the same id. After a crash, the next run finds the intent: if its commit
 * landed, the batch's dates are cleared rather than committed again (a batch that made no snapshot
 * is not found, so its dates are written again, and again make none); either way the source's files
 * that no snapshot references (what the killed run wrote) are removed.
 *
 * (The COPY statements are built per table, source and month, so they are not in sql/.)
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../api/resilience.js';
import type { DataFile } from '../iceberg/avro.js';
import { SUMMARY, currentSchema, mainSnapshotId, type TableMetadata } from '../iceberg/metadata.js';
import {
  boundBytes,
  boundDate,
  evolveSchema,
  monthLabel,
  monthOrdinal,
  monthRange,
  type IcebergSchema,
  type WarehouseColumn,
} from '../iceberg/schema.js';
import {
  commitSources,
  currentManifests,
  dataDir,
  directoryCatalog,
  expireTable,
  keyOf,
  liveFiles,
  mendVersionHint,
  monthField,
  partitionSpec,
  removeUnreferenced,
  repairTable,
  type Partitioning,
  type SourceChange,
} from '../iceberg/table.js';
import type { IcebergCatalog, LoadedTable, NewTable } from '../iceberg/catalog.js';
import { ConfigError, throwIfStopped } from '../errors.js';
import { sqlString, type LakeFormat, type Warehouse } from '../storage/duckdb.js';
import { done, doneMany, mark, markMany, pending, sourcesBehind, type ItemOf } from '../storage/outbox.js';
import { API_TABLES, ICEBERG_TABLES, LAKE_DOUBLES, RUN_TABLES, tableDef, type IcebergTableDef } from '../storage/tables.js';
import { drainPendingSources, runTablesDue } from './lake.js';
import { PARQUET_OPTIONS } from '../storage/duckdb-settings.js';
import { NONE_BEHIND, catchUp, lakeName, markCaughtUp } from './lake-catch-up.js';
import { STATE_TABLE, stateObjects, stateProperty, writeStateObjects } from './lake-seed.js';
import type { OutputTarget } from './target.js';
import { failpoint } from '../failpoints.js';

/**
 * Refuses a `--out` that holds the other format's lake: Iceberg's data files under a Parquet lake's
 * table folders would be read twice by engines that list hive partitions, and a Parquet lake's files
 * under an Iceberg table are referenced by no snapshot.
 */
export async function checkLakeFormat(target: OutputTarget, format: LakeFormat): Promise<void> {
  if (format === 'iceberg') {
    for (const table of API_TABLES) {
      if ((await target.list(`${table}/source=`)).length > 0) {
        throw new ConfigError(
          `${target.url} holds a Parquet lake (${table}/source=…, written by --format parquet): Iceberg tables cannot share it.`,
          'Point --format iceberg at a new --out (an empty directory or prefix): costsync fills the tables from the warehouse, with no API request.',
        );
      }
    }
  } else {
    for (const table of API_TABLES) {
      if ((await target.list(`${table}/metadata/`)).length > 0) {
        throw new ConfigError(
          `${target.url} holds Iceberg tables (${table}/metadata/, written by --format iceberg): a Parquet lake cannot share it.`,
          'Keep --format iceberg for this --out, or give the Parquet lake a new --out.',
        );
      }
    }
  }
}

/** Months one snapshot rewrites at most: bounds a commit's statements, not the work. */
const MONTHS_PER_COMMIT = 12;

/** Default `--iceberg-retention`: time travel reaches back a week (to before last week's restatements). */
export const DEFAULT_RETENTION_MS = 7 * 86_400_000;

export interface IcebergRun {
  runId: string;
  clock: Clock;
  /** The sources this runner owns: it touches only their files. */
  sources: readonly string[];
  retentionMs: number;
  /** Whether snapshots past the retention expire, and unreferenced files are removed (`--iceberg-maintenance`). */
  maintenance?: boolean;
  /** `--iceberg-repair`: a table whose current snapshot cannot be read whole gets a new one of what can (`repairTable`). */
  repair?: boolean;
  /** Says what a repair did, for the log. */
  notice?: (message: string) => void;
  /** Opens the REST catalog the tables are committed through (`--catalog`); none: directory tables at `--out`. */
  catalog?: () => Promise<IcebergCatalog>;
  /**
   * The run's stop: once aborted no data file, upload or commit starts (CS_ERR_ABORTED); an intent left
   * pending finds its files again next run, and removes those no commit names.
   */
  signal?: AbortSignal | undefined;
}

/** A table's columns as the lake holds them: its money as doubles (LAKE_DOUBLES), the rest as the warehouse has them. */
async function columnsOf(warehouse: Warehouse, table: string): Promise<WarehouseColumn[]> {
  const doubles = new Set(LAKE_DOUBLES[table] ?? []);
  return (await warehouse.sql<{ column_name: string; column_type: string }>(`DESCRIBE ${table}`)).map((r) => ({
    name: r.column_name,
    type: doubles.has(r.column_name) ? 'DOUBLE' : r.column_type,
  }));
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** RETURN_STATS' column statistics: `[{ key: '"col"', value: [{ key: 'min', value }] }]`. */
type ColumnStats = { key: string; value: { key: string; value: string }[] }[];

/**
 * Writes the rows of `source` in `table` for one month (or all of them) into one Parquet file with
 * the schema's field ids, puts it under `data/`, and returns it as a data file with its statistics;
 * null when there are no rows, and `unchanged` when the file is the very one `live` (the source's
 * files for that month now) holds, so there is nothing to commit.
 */
async function writeDataFile(
  warehouse: Warehouse,
  target: OutputTarget,
  table: string,
  def: IcebergTableDef,
  source: string,
  month: number | null,
  schema: IcebergSchema,
  columns: readonly WarehouseColumn[],
  live: readonly DataFile[],
  signal?: AbortSignal,
): Promise<DataFile | 'unchanged' | null> {
  throwIfStopped(signal, `the Iceberg table ${table}`);
  const scratch = target.scratch(`iceberg-${table}`);
  try {
    const file = join(scratch, 'data.parquet');
    const select = columns
      .map((c) =>
        c.type === 'JSON' || c.type === 'DOUBLE'
          ? `${quote(c.name)}::${c.type === 'JSON' ? 'VARCHAR' : 'DOUBLE'} AS ${quote(c.name)}`
          : quote(c.name),
      )
      .join(', ');
    const range =
      month === null
        ? ''
        : ` AND ${def.date!} >= DATE ${sqlString(monthRange(month).start)} AND ${def.date!} < DATE ${sqlString(monthRange(month).next)}`;
    const ids = schema.fields.filter((f) => columns.some((c) => c.name === f.name));
    // Unsorted, and in bounded row groups (see PARQUET_OPTIONS): a month of any size is written in the same memory.
    const [stats] = await warehouse.sql<{ count: number; file_size_bytes: number; column_statistics: unknown }>(
      `COPY (SELECT ${select} FROM ${table} WHERE ${quote(def.source)} = ${sqlString(source)}${range})
       TO ${sqlString(file)} (${PARQUET_OPTIONS}, FIELD_IDS {${ids.map((f) => `${quote(f.name)}: ${f.id}`).join(', ')}}, RETURN_STATS true)`,
    );
    if (stats === undefined || Number(stats.count) === 0) return null;
    if (await sameFile(target, table, file, Number(stats.count), Number(stats.file_size_bytes), live)) return 'unchanged';
    const key = `${table}/data/${dataDir(source)}/${month === null ? '' : `${monthField(def.month!)}=${monthLabel(month)}/`}${randomUUID()}.parquet`;
    await target.putFile(key, file, signal);
    const dataFile: DataFile = {
      content: 0,
      file_path: target.location(key),
      file_format: 'PARQUET',
      partition: { source, ...(def.month === null ? {} : { [monthField(def.month)]: month }) },
      record_count: Number(stats.count),
      file_size_in_bytes: Number(stats.file_size_bytes),
      column_sizes: [],
      value_counts: [],
      null_value_counts: [],
      nan_value_counts: null,
      lower_bounds: [],
      upper_bounds: [],
      key_metadata: null,
      split_offsets: null,
      equality_ids: null,
      sort_order_id: null,
    };
    for (const column of stats.column_statistics as ColumnStats) {
      const field = ids.find((f) => quote(f.name) === column.key || f.name === column.key);
      if (!field) continue;
      const stat = Object.fromEntries(column.value.map((v) => [v.key, v.value]));
      if (stat.column_size_bytes !== undefined) dataFile.column_sizes!.push({ key: field.id, value: Number(stat.column_size_bytes) });
      if (stat.num_values !== undefined) dataFile.value_counts!.push({ key: field.id, value: Number(stat.num_values) });
      if (stat.null_count !== undefined) dataFile.null_value_counts!.push({ key: field.id, value: Number(stat.null_count) });
      const lower = stat.min === undefined ? null : boundBytes(field.type, stat.min);
      const upper = stat.max === undefined ? null : boundBytes(field.type, stat.max);
      if (lower !== null && upper !== null) {
        dataFile.lower_bounds!.push({ key: field.id, value: lower });
        dataFile.upper_bounds!.push({ key: field.id, value: upper });
      }
    }
    return dataFile;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Whether the Parquet file at `file` holds what `live` does: `live` is one file, of the same row count
 * and size, with the same bytes (read only when the counts agree). Another DuckDB version or thread
 * count may write the same rows differently, and so may the same rows in another order (files are not
 * sorted: a re-sync's rows go after the others): then the month is committed, as any change is.
 */
async function sameFile(
  target: OutputTarget,
  table: string,
  file: string,
  rows: number,
  size: number,
  live: readonly DataFile[],
): Promise<boolean> {
  const [old] = live;
  if (live.length !== 1 || old!.record_count !== rows || old!.file_size_in_bytes !== size) return false;
  // Equal bytes are equal rows, exactly (a hash could collide); the same rows in the same order write the same bytes.
  const bytes = await target.getBytes(keyOf(target, table, old!.file_path));
  return bytes !== null && bytes.equals(readFileSync(file));
}

/** The table's schema and partition spec as costsync creates it (a catalog may assign other ids). */
function newTable(table: string, columns: readonly WarehouseColumn[]): NewTable {
  const def = ICEBERG_TABLES[table]!;
  const { schema } = evolveSchema(columns, null, 0);
  return {
    schema,
    spec: partitionSpec(schema, { source: def.source, month: def.month }),
    properties: { 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'snappy', 'created-by': 'costsync' },
  };
}

/** One source's part of a table's commit: the months to rewrite (null: everything), and table properties it sets. */
export interface SourceBatch {
  source: string;
  months: readonly number[] | null;
  properties?: Readonly<Record<string, string>>;
}

/**
 * Writes each batch's `months` of its source in `table` as one file per month, to replace the files the
 * source has for those months (a month whose file would be the one it has is left out): the table's
 * changes for one snapshot, the table loaded once for all its sources.
 */
async function prepareTable(
  warehouse: Warehouse,
  catalog: IcebergCatalog,
  run: IcebergRun,
  table: string,
  batches: readonly SourceBatch[],
  commitId: string,
  window: string,
): Promise<{ table: string; changes: SourceChange[]; loaded: LoadedTable }> {
  const def = ICEBERG_TABLES[table]!;
  const columns = await columnsOf(warehouse, table);
  // A catalog creates the table now, so the data files carry the field ids it assigned.
  const loaded = await catalog.ensure(table, () => newTable(table, columns));
  const { metadata, store } = loaded;
  // The field ids the commit will use: the table's, with any new column after them (the same rule
  // `commitSources` applies to the newest metadata).
  const schema = evolveSchema(columns, metadata === null ? null : currentSchema(metadata), metadata?.['last-column-id'] ?? 0).schema;
  const field = def.month === null ? null : monthField(def.month);
  const inMonth = (f: DataFile, month: number | null) => month === null || field === null || f.partition[field] === month;
  // The manifest list once for every source of the batch.
  const manifests = await currentManifests(store, table, metadata);
  const partitioning: Partitioning = { source: def.source, month: def.month };
  const changes: SourceChange[] = [];
  for (const { source, months, properties } of batches) {
    const live = await liveFiles(store, table, metadata, source, manifests);
    const add: DataFile[] = [];
    const rewritten: (number | null)[] = [];
    for (const month of months ?? [null]) {
      const file = await writeDataFile(
        warehouse,
        store,
        table,
        def,
        source,
        month,
        schema,
        columns,
        live.filter((f) => inMonth(f, month)),
        run.signal,
      );
      if (file === 'unchanged') continue;
      rewritten.push(month);
      if (file !== null) add.push(file);
    }
    changes.push({
      source,
      columns,
      partitioning,
      add,
      replaces: (f) => rewritten.some((month) => inMonth(f, month)),
      summary: { [SUMMARY.runId]: run.runId, [SUMMARY.commitId]: commitId, [SUMMARY.window]: window },
      ...(properties !== undefined && { properties }),
    });
  }
  return { table, loaded, changes };
}

/**
 * What a killed run left: for each intent, its dates are cleared when its commit landed (found by its
 * id in the snapshot summaries), and the source's unreferenced files under the table are removed.
 */
async function recoverIntents(warehouse: Warehouse, catalog: IcebergCatalog, removeOrphans: boolean): Promise<number> {
  let removed = 0;
  // A batch's intents (one per source) share their commit: it is looked for once.
  const found = new Map<string, Promise<boolean>>();
  const landedOnce = (intent: ItemOf<'iceberg-commit'>) => {
    const key = `${intent.table} ${intent.commitId}`;
    if (!found.has(key)) found.set(key, landed(catalog, intent));
    return found.get(key)!;
  };
  for (const intent of await pending(warehouse, 'iceberg-commit', 'iceberg-expiry')) {
    const { table } = intent;
    // A table a newer costsync named has nothing here to recover.
    if (ICEBERG_TABLES[table] !== undefined) {
      // An expiry cleaned up for every source it names, and committed nothing.
      if (intent.kind === 'iceberg-commit' && (await landedOnce(intent))) {
        const months = intent.months === null ? null : new Set(intent.months);
        const landedDates = (await pending(warehouse, 'partition')).filter(
          (p) => p.table === table && p.source === intent.source && (months === null || months.has(monthOrdinal(p.date))),
        );
        await doneMany(warehouse, landedDates);
      }
      // Without maintenance, the catalog removes what no snapshot references.
      for (const source of !removeOrphans ? [] : intent.kind === 'iceberg-commit' ? [intent.source] : intent.sources)
        removed += await removeUnreferenced(catalog, table, source);
    }
    await done(warehouse, intent);
  }
  return removed;
}

/** Whether a commit's snapshot is in its table (found by the commit id in the snapshot summaries). */
async function landed(catalog: IcebergCatalog, intent: ItemOf<'iceberg-commit'>): Promise<boolean> {
  const { metadata } = await catalog.load(intent.table);
  return metadata?.snapshots.some((s) => s.summary[SUMMARY.commitId] === intent.commitId) ?? false;
}

/**
 * The dates to rewrite so a source's months in the lake hold what the warehouse holds: every date of a
 * month whose row count differs from the rows its live files hold (the first day of a month only the lake
 * has). Counts, not contents: what a run without this warehouse's changes wrote (another state directory's
 * run that was killed before it published, a lake new to this warehouse) differs in rows. Pure.
 */
export function monthsToRewrite(
  lakeRows: ReadonlyMap<number, number>,
  warehouseDates: readonly { date: string; rows: number }[],
): string[] {
  const months = new Map<number, { rows: number; dates: string[] }>();
  for (const { date, rows } of warehouseDates) {
    const m = months.get(monthOrdinal(date)) ?? months.set(monthOrdinal(date), { rows: 0, dates: [] }).get(monthOrdinal(date))!;
    m.rows += rows;
    m.dates.push(date);
  }
  const dates: string[] = [];
  for (const [month, { rows, dates: ds }] of months) if ((lakeRows.get(month) ?? 0) !== rows) dates.push(...ds);
  for (const [month, rows] of lakeRows) if (!months.has(month) && rows > 0) dates.push(monthRange(month).start);
  return dates.sort();
}

/** A date that stands for a source's whole file when its lake files give none (a file another writer wrote without bounds). */
const ANY_DATE = '1970-01-01';

/**
 * A table written one file a source (no month partition), where any pending date rewrites the whole
 * file: all the warehouse's dates of the source when the lake's rows differ from them in count, and the
 * lake's earliest date when the warehouse holds none (rows only the lake has); else none. Pure.
 */
export function sourceToRewrite(
  lake: { rows: number; earliest: string | null },
  warehouseDates: readonly { date: string; rows: number }[],
): string[] {
  const rows = warehouseDates.reduce((n, d) => n + d.rows, 0);
  if (rows === lake.rows) return [];
  return warehouseDates.length > 0 ? warehouseDates.map((d) => d.date).sort() : [lake.earliest ?? ANY_DATE];
}

/** The earliest date `files` hold in `column`, from their lower bounds; null when none has one. */
function earliestDate(files: readonly DataFile[], metadata: TableMetadata | null, column: string | null): string | null {
  const field = metadata === null || column === null ? undefined : currentSchema(metadata).fields.find((f) => f.name === column);
  if (field === undefined) return null;
  const dates = files.flatMap((f) => (f.lower_bounds ?? []).filter((b) => b.key === field.id).map((b) => boundDate(field.type, b.value)));
  return dates.filter((d) => d !== null).sort()[0] ?? null;
}

/**
 * At the lake's start: each table's months of each source whose rows differ from the warehouse's are
 * marked pending (a warehouse pointed at a new lake, a source new to it, or a lake another state
 * directory's unpublished run changed), so the lake fills or mends from the warehouse, a batch at a time.
 */
async function markDifferingMonths(warehouse: Warehouse, catalog: IcebergCatalog, sources: readonly string[]): Promise<void> {
  const queued = new Set((await pending(warehouse, 'partition')).map((p) => `${p.table}/${p.source}/${p.date}`));
  const mine = new Set(sources);
  // Each table's rows per source and date in one scan (a runner may own hundreds of sources); a FOCUS view
  // holds its line items' rows date for date, so it takes theirs rather than be computed again.
  const countsOf = new Map<string, Map<string, { date: string; rows: number }[]>>();
  const counts = async (table: string): Promise<Map<string, { date: string; rows: number }[]>> => {
    const base = tableDef(table)?.derivesFrom ?? table;
    let bySource = countsOf.get(base);
    if (bySource === undefined) {
      const def = ICEBERG_TABLES[base]!;
      const rows = await warehouse.sql<{ source: string; date: string; rows: number }>(
        `SELECT ${quote(def.source)} AS source, CAST(${def.date!} AS VARCHAR) AS date, count(*) AS rows FROM ${base} GROUP BY 1, 2`,
      );
      bySource = new Map();
      for (const r of rows) {
        if (!mine.has(r.source)) continue;
        const list = bySource.get(r.source) ?? [];
        list.push({ date: r.date, rows: Number(r.rows) });
        bySource.set(r.source, list);
      }
      countsOf.set(base, bySource);
    }
    return bySource;
  };
  for (const [table, def] of Object.entries(ICEBERG_TABLES)) {
    if (RUN_TABLES.includes(table)) continue;
    const { metadata, store } = await catalog.load(table);
    const field = def.month === null ? null : monthField(def.month);
    // The manifest list once a table, not once a source: a runner may own hundreds.
    const manifests = await currentManifests(store, table, metadata);
    const stored = await counts(table);
    for (const source of sources) {
      const lakeRows = new Map<number, number>();
      let lakeTotal = 0;
      const files = await liveFiles(store, table, metadata, source, manifests);
      for (const f of files) {
        lakeTotal += f.record_count;
        if (field === null) continue;
        const month = Number(f.partition[field]);
        lakeRows.set(month, (lakeRows.get(month) ?? 0) + f.record_count);
      }
      const counted = stored.get(source) ?? [];
      // A table with no month partition (anomalies) is compared whole: its files name no month.
      const differing = (
        field === null
          ? sourceToRewrite(
              { rows: lakeTotal, earliest: counted.length > 0 ? null : earliestDate(files, metadata, def.dateColumn) },
              counted,
            )
          : monthsToRewrite(lakeRows, counted)
      ).filter((date) => !queued.has(`${table}/${source}/${date}`));
      await markMany(
        warehouse,
        differing.map((date) => ({ kind: 'partition', table, source, date })),
      );
    }
  }
}

/** Tables committed together where the catalog offers transactions: the FOCUS view is over line items. */
const COMMITTED_TOGETHER = ['line_items', 'focus', 'focus_1_3', 'focus_1_4'];

/** The Iceberg lake's steps, for the derived outputs: drain after each commit, finish after the run. */
export function icebergLake(run: IcebergRun) {
  let sequence = 0;
  let catalog: IcebergCatalog | null = null;
  const nextCommitId = () => `${run.runId}.${++sequence}`;
  /** Each table's current metadata file, as this run last wrote it, with its current snapshot. */
  const current = new Map<string, { file: string; snapshotId: number | null }>();
  /** Records a table's new metadata file in the warehouse (for status) and for the run's summary. */
  const record = async (warehouse: Warehouse, table: string, file: string | null, snapshotId: number | null, at = run.clock.now()) => {
    if (file === null) return;
    current.set(table, { file, snapshotId });
    await warehouse.run('lake/record_table', [
      table,
      'iceberg',
      file,
      snapshotId,
      new Date(at).toISOString(),
      catalog?.kind === 'rest' ? catalog.where : null,
    ]);
  };
  const open = async (target: OutputTarget): Promise<IcebergCatalog> =>
    (catalog ??= run.catalog !== undefined ? await run.catalog() : directoryCatalog(target));

  /**
   * Records the intent of each table's commit (one per table and source, sharing the table's commit id),
   * commits each batch's months of its source in `tables` (one snapshot a table, every source in it; several
   * tables only through a catalog's transaction), and records the new metadata files. Returns the intents,
   * which the caller clears once what the commit covers is cleared.
   */
  const commitUnderIntent = async (
    warehouse: Warehouse,
    cat: IcebergCatalog,
    tables: readonly string[],
    batches: readonly SourceBatch[],
    window: string,
  ): Promise<ItemOf<'iceberg-commit'>[]> => {
    const commitIds = new Map(tables.map((table) => [table, nextCommitId()]));
    const intents = tables.flatMap((table) =>
      batches.map((b): ItemOf<'iceberg-commit'> => ({
        kind: 'iceberg-commit',
        table,
        source: b.source,
        commitId: commitIds.get(table)!,
        months: b.months,
      })),
    );
    // One statement: the batch's intents are recorded together or not at all.
    await markMany(warehouse, intents);
    const prepared = [];
    for (const table of tables) prepared.push(await prepareTable(warehouse, cat, run, table, batches, commitIds.get(table)!, window));
    throwIfStopped(run.signal, `the commit of ${tables.join(', ')}`);
    const results = await commitSources(cat, prepared, run.clock);
    failpoint('iceberg-commit');
    for (const [i, result] of results.entries()) await record(warehouse, tables[i]!, result.metadataLocation, result.snapshotId);
    return intents;
  };

  /**
   * `--iceberg-repair`: each table missing a file its current snapshot names gets a new snapshot of
   * what can still be read; the rows left out are then this runner's to write again (its sources'
   * counts differ, see `markDifferingMonths`), and every other runner's at its next run.
   */
  const repairTables = async (warehouse: Warehouse, cat: IcebergCatalog) => {
    const [first] = run.sources;
    if (first === undefined) return;
    for (const table of Object.keys(ICEBERG_TABLES)) {
      const repair = await repairTable(cat, table, { source: first, runId: run.runId }, run.clock);
      if (repair === null) continue;
      await record(warehouse, table, repair.metadataLocation, repair.snapshotId);
      const mine = repair.rewrite.filter((s) => run.sources.includes(s));
      const others = repair.rewrite.filter((s) => !run.sources.includes(s));
      run.notice?.(
        [
          `repaired the Iceberg table ${cat.name(table)}: snapshot ${repair.snapshotId} keeps ${repair.keptFrom === null ? 'no earlier manifest' : `the manifests of snapshot ${repair.keptFrom} that can be read`}, and the ${repair.removed.length} snapshot(s) naming a missing file left the history`,
          ...(mine.length > 0 ? [`the rows of ${mine.join(', ')} are written again from this warehouse`] : []),
          ...(others.length > 0
            ? [
                `the rows of ${others.join(', ')} are left out until ${others.length === 1 ? 'its' : 'their'} own runner's next sync writes them again`,
              ]
            : []),
        ].join('; '),
      );
    }
  };

  /** Commits every pending batch; returns the number of dates written. */
  async function drain(warehouse: Warehouse, target: OutputTarget): Promise<number> {
    throwIfStopped(run.signal, 'the Iceberg tables');
    const cat = await open(target);
    if (!started.has(cat)) {
      await warehouse.exclusive(async () => {
        // Caught up first: a killed run's landed commit then clears what it covers.
        await catchUp(warehouse, lakeName('iceberg', { url: cat.where }), run.sources);
        await recoverIntents(warehouse, cat, run.maintenance !== false);
        if (cat.kind === 'directory') for (const table of Object.keys(ICEBERG_TABLES)) await mendVersionHint(target, table);
        if (run.repair === true) await repairTables(warehouse, cat);
        await markDifferingMonths(warehouse, cat, run.sources);
      });
      started.add(cat);
    }
    return drainPendingSources(
      warehouse,
      async (table, pendingBatches) => {
        const def = ICEBERG_TABLES[table];
        // An unknown table (a newer costsync's) has nothing to write here.
        if (def === undefined) return { written: new Map(pendingBatches.map((b) => [b.source, b.dates])) };
        // Per source, up to a year of months; every source in one snapshot.
        const batches: (SourceBatch & { dates: string[] })[] = pendingBatches.map(({ source, dates }) => {
          if (def.month === null) return { source, months: null, dates };
          const months = [...new Set(dates.map(monthOrdinal))].sort((a, b) => a - b).slice(0, MONTHS_PER_COMMIT);
          const chosen = new Set(months);
          return { source, months, dates: dates.filter((d) => chosen.has(monthOrdinal(d))) };
        });
        // With a catalog's transactions, line items and FOCUS change in one commit, so no reader sees one without the other.
        const together = cat.transactions && COMMITTED_TOGETHER.includes(table) && def.month !== null;
        const tables = together ? COMMITTED_TOGETHER : [table];
        const all = batches.flatMap((b) => b.dates).sort();
        const intents = await commitUnderIntent(warehouse, cat, tables, batches, `${all[0]}..${all.at(-1)}`);
        // The dates are cleared before the intents: a crash between leaves the intents, which find the commit.
        return {
          written: new Map(batches.map((b) => [b.source, b.dates])),
          cleared: async () => {
            if (together) {
              const chosen = new Map(batches.map((b) => [b.source, new Set(b.months)]));
              const written = (await pending(warehouse, 'partition')).filter(
                (p) => p.table !== table && tables.includes(p.table) && chosen.get(p.source)?.has(monthOrdinal(p.date)) === true,
              );
              await doneMany(warehouse, written);
            }
            await doneMany(warehouse, intents);
          },
        };
      },
      run.signal,
      // Caught up in this drain's first call (above), so a drain that leaves nothing pending moves the marks.
      () => markCaughtUp(warehouse, lakeName('iceberg', { url: cat.where }), run.sources, NONE_BEHIND),
    );
  }
  const started = new Set<IcebergCatalog>();

  /** After the run: what is pending, then snapshots past the retention expired (the run tables follow the publish). */
  async function finish(warehouse: Warehouse, target: OutputTarget): Promise<number> {
    const written = await drain(warehouse, target);
    const cat = await open(target);
    await warehouse.exclusive(async () => {
      throwIfStopped(run.signal, 'the Iceberg tables');
      const behind = await sourcesBehind(warehouse);
      const upToDate = run.sources.filter((s) => !behind.has(s));
      const stamp = { runId: run.runId, now: () => run.clock.now() };
      if (run.maintenance !== false) {
        for (const table of Object.keys(ICEBERG_TABLES)) {
          // An expiry killed half way leaves files only the intent's clean-up finds.
          throwIfStopped(run.signal, `the expiry of ${table}`);
          const intent: ItemOf<'iceberg-expiry'> = { kind: 'iceberg-expiry', table, sources: run.sources, runId: run.runId };
          await mark(warehouse, intent);
          const expiry = await expireTable(cat, table, run.sources, run.retentionMs, run.clock);
          await record(warehouse, table, expiry.metadataLocation, expiry.snapshotId);
          await done(warehouse, intent);
        }
      }
      // Tables this run did not change are named in its summary and recorded too, as they are in this lake
      // (committed when their snapshot was): a record of another --out, or of a table this lake lacks, is no longer true.
      for (const table of Object.keys(ICEBERG_TABLES)) {
        if (current.has(table)) continue;
        const loaded = await cat.load(table);
        if (loaded.metadataLocation === null) await warehouse.run('lake/forget_table', [table]);
        else {
          const snapshotId = mainSnapshotId(loaded.metadata);
          const snapshot = loaded.metadata?.snapshots.find((x) => x['snapshot-id'] === snapshotId);
          await record(
            warehouse,
            table,
            loaded.metadataLocation,
            snapshotId,
            snapshot?.['timestamp-ms'] ?? loaded.metadata?.['last-updated-ms'],
          );
        }
      }
      // The Parquet lake's per-source manifests have no place in an Iceberg lake.
      await doneMany(
        warehouse,
        [null, ...run.sources].map((source) => ({ kind: 'manifest', source })),
      );
      // Directory tables: the lake holds every row of these, so their state objects say where a runner taking one over goes on from.
      if (cat.kind === 'directory') await writeStateObjects(warehouse, target, stamp, upToDate);
      await markCaughtUp(warehouse, lakeName('iceberg', { url: cat.where }), run.sources);
    });
    return written;
  }

  /**
   * After the run's publish: each source's run tables whose rows changed (the outbox's `run-tables`), so
   * the lake's sync_runs is the warehouse's and the published file's. Through a catalog, the source's
   * state object is a property of sync_runs, set by this commit (for a source with no partition pending).
   */
  async function finishRunTables(warehouse: Warehouse, target: OutputTarget): Promise<void> {
    const cat = await open(target);
    await warehouse.exclusive(async () => {
      const due = await runTablesDue(warehouse, run.sources);
      if (due.length === 0) return;
      const behind = await sourcesBehind(warehouse);
      const stamp = { runId: run.runId, now: () => run.clock.now() };
      const states =
        cat.kind === 'rest'
          ? await stateObjects(
              warehouse,
              stamp,
              due.map((d) => d.source).filter((s) => !behind.has(s)),
            )
          : new Map<string, string>();
      // Every due source in one snapshot a table; a catalog's state objects ride on sync_runs' snapshot.
      for (const table of RUN_TABLES) {
        throwIfStopped(run.signal, `the Iceberg ${table}`);
        const batches = due.map((item): SourceBatch => {
          const state = table === STATE_TABLE ? states.get(item.source) : undefined;
          return { source: item.source, months: null, ...(state !== undefined && { properties: { [stateProperty(item.source)]: state } }) };
        });
        await doneMany(warehouse, await commitUnderIntent(warehouse, cat, [table], batches, 'run'));
      }
      await doneMany(warehouse, due);
    });
  }

  return {
    drain,
    finish,
    finishRunTables,
    /** Each table this run committed to, and its current metadata file. */
    tables: (): Record<string, string> =>
      Object.fromEntries([...current].map(([t, c]) => [t, c.file] as const).sort(([a], [b]) => a.localeCompare(b))),
    /** Each table's current snapshot, as this run left it. */
    snapshots: (): Record<string, number | null> =>
      Object.fromEntries([...current].map(([t, c]) => [t, c.snapshotId] as const).sort(([a], [b]) => a.localeCompare(b))),
    /** Where the tables are: the lake's directory, or the catalog and namespace. */
    where: () => catalog?.where ?? null,
  };
}
