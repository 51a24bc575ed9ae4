/**
 * A source that moves between runners sharing one lake resumes where it was (docs/moving-sources.md).
 * After each run, the lake holds per source a state object (`_costsync_state.<source>.json` under `--out`,
 * or through a catalog a property of `sync_runs`): the sync state the warehouse carried, and the dates the
 * lake holds for each table, written only once the lake holds everything that state describes. A
 * warehouse that lacks a source's rows in the lake reads them back (`seedFromLake`) before the lake's
 * start check could take their absence for deletions; with a complete state object it adopts the state
 * too, so the run is a nightly.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { mapAtMost } from '../at-most.js';
import type { IcebergCatalog } from '../iceberg/catalog.js';
import { keyOf, liveFiles } from '../iceberg/table.js';
import { decodeCarried, decodeLakeObject, encodeLakeObject, type LakeStateObject } from '../state/progress.js';
import { carriedFromLake } from '../state/source-state.js';
import { sqlString, type Warehouse } from '../storage/duckdb.js';
import { RUN_TABLES, TABLES } from '../storage/tables.js';
import type { OutputTarget } from './target.js';

/** The state object of one source under `--out`: beside its manifest, outside every table's prefix. Pure. */
export function stateObjectKey(source: string): string {
  return `_costsync_state.${source}.json`;
}

/** What a state object holds (declared, encoded and decoded by the progress codec). */
export type { LakeStateObject };

/** The tables whose rows a source's state describes: stored, not derived (focus is a view over line items). */
export const SEEDED_TABLES: readonly { name: string; date: string; source: string }[] = TABLES.filter(
  (t) => t.parquet === 'daily' && t.origin !== 'view',
).map((t) => ({ name: t.name, date: t.date!, source: t.source }));

/** The dates a state object lists that the rows read back lack, as `table/date`. Pure. */
export function missingDates(listed: LakeStateObject['tables'], present: Readonly<Record<string, readonly string[]>>): string[] {
  const missing: string[] = [];
  for (const [table, dates] of Object.entries(listed)) {
    const there = new Set(present[table] ?? []);
    for (const date of dates) if (!there.has(date)) missing.push(`${table}/${date}`);
  }
  return missing;
}

/** The dates of each stored table's rows of each of `sources` (null: every source), by source. */
async function datesOf(warehouse: Warehouse, sources: readonly string[] | null): Promise<Map<string, Record<string, string[]>>> {
  const dates = new Map<string, Record<string, string[]>>();
  for (const { name, date, source } of SEEDED_TABLES) {
    const where = sources === null ? '' : `WHERE ${source} IN (${sources.map(sqlString).join(', ')})`;
    const rows = await warehouse.sql<{ source: string; dates: string[] }>(
      `SELECT ${source} AS source, list_sort(list(DISTINCT strftime(${date}, '%Y-%m-%d'))) AS dates FROM ${name} ${where} GROUP BY ALL`,
    );
    for (const row of rows) (dates.get(row.source) ?? dates.set(row.source, {}).get(row.source)!)[name] = [...row.dates];
  }
  return dates;
}

/** With a catalog: the table whose properties hold the state objects (a commit of it ends every run). */
export const STATE_TABLE = 'sync_runs';

/** With a catalog: the property of `STATE_TABLE` holding a source's state object. Pure. */
export function stateProperty(source: string): string {
  return `costsync.state.${source}`;
}

/**
 * The state object (its text) of each of `sources` that carries a state: call with nothing committing (in
 * `exclusive`) and only for sources none of whose partitions is pending, so the lake holds every row the
 * state describes.
 */
export async function stateObjects(
  warehouse: Warehouse,
  run: { runId: string; now: () => number },
  sources: readonly string[],
): Promise<Map<string, string>> {
  const objects = new Map<string, string>();
  if (sources.length === 0) return objects;
  const carried = new Map((await warehouse.query<{ source: string; state: string }>('state/carried_all')).map((r) => [r.source, r.state]));
  const dates = await datesOf(warehouse, sources);
  for (const source of sources) {
    const state = carried.get(source);
    // A source that never carried a state (nothing synced yet) has nothing to resume from.
    if (state === undefined) continue;
    const tables = Object.fromEntries(SEEDED_TABLES.map((t) => [t.name, dates.get(source)?.[t.name] ?? []]));
    objects.set(
      source,
      encodeLakeObject({ source, run_id: run.runId, written_at: new Date(run.now()).toISOString(), state: decodeCarried(state), tables }),
    );
  }
  return objects;
}

/** Writes the state objects of `sources` beside their manifests (see `stateObjects` for when). */
export async function writeStateObjects(
  warehouse: Warehouse,
  target: OutputTarget,
  run: { runId: string; now: () => number },
  sources: readonly string[],
): Promise<void> {
  for (const [source, text] of await stateObjects(warehouse, run, sources)) await target.putText(stateObjectKey(source), `${text}\n`);
}

/** What the seed tells the log. */
export interface SeedLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** A file of a source's rows in the lake. */
export interface LakeFile {
  table: string;
  /** Its key (relative to the lake), kept in the scratch directory's layout. */
  key: string;
  /** Its bytes (null: gone since it was listed). */
  get: () => Promise<Buffer | null>;
}

/** A lake as the seed reads it: where its state objects are, and the files of a source's rows. */
export interface SeedLake {
  /** The lake's objects (the state objects) and its scratch directories. */
  readonly target: OutputTarget;
  /** Whether a file names its source (and date) in its path only, as hive partitioning has it. */
  readonly hive: boolean;
  /** The text of `source`'s state object, or null. */
  stateText(source: string): Promise<string | null>;
  /** The files holding `source`'s rows of the stored tables and the run tables. */
  files(source: string): Promise<LakeFile[]>;
}

/** The Parquet lake: a source's partitions and its run tables' files. */
export function parquetSeedLake(target: OutputTarget): SeedLake {
  return {
    target,
    hive: true,
    stateText: (source) => target.getText(stateObjectKey(source)),
    async files(source) {
      const files: LakeFile[] = [];
      for (const table of [...SEEDED_TABLES.map((t) => t.name), ...RUN_TABLES]) {
        for (const key of await target.list(`${table}/source=${source}/`))
          if (key.endsWith('.parquet')) files.push({ table, key, get: () => target.getBytes(key) });
      }
      return files;
    },
  };
}

/**
 * Iceberg tables: the data files a source has live in each table's current snapshot. The state objects are
 * beside directory tables, and a property of `STATE_TABLE` through a catalog.
 */
export function icebergSeedLake(target: OutputTarget, catalog: IcebergCatalog): SeedLake {
  let properties: Promise<Record<string, string>> | undefined;
  return {
    target,
    hive: false,
    async stateText(source) {
      if (catalog.kind === 'directory') return target.getText(stateObjectKey(source));
      properties ??= catalog.load(STATE_TABLE).then((t) => t.metadata?.properties ?? {});
      return (await properties)[stateProperty(source)] ?? null;
    },
    async files(source) {
      const files: LakeFile[] = [];
      for (const table of [...SEEDED_TABLES.map((t) => t.name), ...RUN_TABLES]) {
        const { metadata, store } = await catalog.load(table);
        for (const file of await liveFiles(store, table, metadata, source)) {
          const key = keyOf(store, table, file.file_path);
          files.push({ table, key, get: () => store.getBytes(key) });
        }
      }
      return files;
    },
  };
}

/** What was read back for one source. */
export interface SeededSource {
  source: string;
  /** Rows read back, per table. */
  rows: Record<string, number>;
  /** Whether its state was adopted (false: a backfill follows, over the rows read back). */
  adopted: boolean;
}

/** State objects read at once at a run's start: small GETs, one per source. */
const OBJECTS_AT_ONCE = 8;

/**
 * At a run's start, before the lake's start check, each of `sources` whose rows in the lake this
 * warehouse lacks is read back from the lake (its stored tables' rows and its run tables), in one
 * transaction, with nothing marked pending (the lake holds it already):
 * - a source this warehouse holds no row and no state of, and the lake holds rows of (moved here);
 * - a source whose state object was written by a run this warehouse does not know (it moved away and
 *   back, or the warehouse is an older copy): its rows here are older than the lake's, and are replaced.
 * Its state is adopted when the rows read back cover every date its state object lists; otherwise (no
 * object, an unreadable one, a partition gone) the run backfills it with a warning, over what was read
 * back, so nothing the lake had is lost.
 */
export async function seedFromLake(
  warehouse: Warehouse,
  lake: SeedLake,
  sources: readonly string[],
  log: SeedLog,
): Promise<SeededSource[]> {
  const { target } = lake;
  const known = new Set(
    (
      await warehouse.sql<{ source: string }>(
        [
          'SELECT source FROM _costsync_sync_state',
          ...SEEDED_TABLES.map((t) => `SELECT DISTINCT ${t.source} AS source FROM ${t.name}`),
        ].join(' UNION '),
      )
    ).map((r) => r.source),
  );
  const objects = await mapAtMost(sources, OBJECTS_AT_ONCE, (source) => readStateObject(lake, source, log));
  const seeded: SeededSource[] = [];
  for (const [i, source] of sources.entries()) {
    const object = objects[i]!;
    let stale = false;
    if (known.has(source)) {
      if (object === null) continue;
      // Every run this warehouse made or read back is in its sync_runs: one it lacks ran elsewhere, later.
      const [ours] = await warehouse.sql<{ n: number }>(
        `SELECT count(*)::INT AS n FROM sync_runs WHERE source = ${sqlString(source)} AND run_id = ${sqlString(object.run_id)}`,
      );
      if (ours!.n > 0) continue;
      stale = true;
    }
    const files = await lake.files(source);
    if (!stale && !files.some((f) => !RUN_TABLES.includes(f.table))) continue;
    const scratch = target.scratch(`seed-${source}`);
    let read: { rows: Record<string, number>; missing: string[] };
    try {
      read = await insertRows(warehouse, source, await download(files, scratch), { hive: lake.hive, object, replace: stale });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    const adopted = object !== null && read.missing.length === 0;
    seeded.push({ source, rows: read.rows, adopted });
    const counted = Object.entries(read.rows)
      .map(([t, n]) => `${n} ${t}`)
      .join(', ');
    const what = stale
      ? `its rows here are older than the lake's at ${target.url} (a run this warehouse does not know wrote them), replaced by the lake's (${counted})`
      : `read back from the lake at ${target.url} (${counted})`;
    if (adopted) {
      log.info(`${source}: ${what}; going on from the state the lake carries for it`, { source });
    } else {
      const { missing } = read;
      const why =
        object === null
          ? 'the lake holds no state object for it'
          : `the lake lacks ${missing.length} partition(s) its state lists (${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', …' : ''})`;
      log.warn(`${source}: ${what}, but ${why}: backfilling it from the start date, over the rows read back`, { source });
    }
  }
  return seeded;
}

/** The source's state object, or null (none, or one this costsync cannot read: said in the log). */
async function readStateObject(lake: SeedLake, source: string, log: SeedLog): Promise<LakeStateObject | null> {
  const text = await lake.stateText(source);
  if (text === null) return null;
  const object = decodeLakeObject(text, source);
  if (object !== null) return object;
  log.warn(`${source}: its state object in ${lake.target.url} is not one this costsync reads; it is ignored`, { source });
  return null;
}

/** Downloads `files` into `scratch` (DuckDB reads them there, with or without a bucket): each table's files. */
async function download(files: readonly LakeFile[], scratch: string): Promise<Map<string, string[]>> {
  const byTable = new Map<string, string[]>();
  for (const { table, key, get } of files) {
    const bytes = await get();
    if (bytes === null) continue;
    const file = join(scratch, key);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, bytes);
    (byTable.get(table) ?? byTable.set(table, []).get(table)!).push(file);
  }
  return byTable;
}

/**
 * Inserts the rows of each table's files by column name, in one transaction (with `replace`, after
 * deleting the source's rows and state), then the object's state when the rows cover every date it
 * lists. Returns the rows per table, and the dates listed but not read back.
 */
async function insertRows(
  warehouse: Warehouse,
  source: string,
  byTable: ReadonlyMap<string, readonly string[]>,
  how: { hive: boolean; object: LakeStateObject | null; replace: boolean },
): Promise<{ rows: Record<string, number>; missing: string[] }> {
  const rows: Record<string, number> = {};
  let missing: string[] = [];
  await warehouse.transaction(async () => {
    if (how.replace) {
      for (const { name, source: column } of SEEDED_TABLES)
        await warehouse.sql(`DELETE FROM ${name} WHERE ${column} = ${sqlString(source)}`);
      for (const table of RUN_TABLES) await warehouse.sql(`DELETE FROM ${table} WHERE source = ${sqlString(source)}`);
      await carriedFromLake.drop(warehouse, source);
    }
    for (const [table, paths] of byTable) {
      const types = RUN_TABLES.includes(table) ? "{'source': VARCHAR}" : "{'source': VARCHAR, 'date': DATE}";
      const hive = how.hive ? `hive_partitioning = true, hive_types = ${types}` : 'hive_partitioning = false';
      const from = `read_parquet([${paths.map(sqlString).join(', ')}], ${hive}, union_by_name = true)`;
      const inFile = new Set((await warehouse.sql<{ column_name: string }>(`DESCRIBE SELECT * FROM ${from}`)).map((r) => r.column_name));
      const columns = (
        await warehouse.sql<{ c: string }>(
          `SELECT column_name AS c FROM duckdb_columns() WHERE table_name = ${sqlString(table)} AND database_name = current_database() AND schema_name = current_schema() ORDER BY column_index`,
        )
      )
        .map((r) => r.c)
        .filter((c) => inFile.has(c))
        .map((c) => `"${c}"`)
        .join(', ');
      // A run of this source the warehouse already records (one that stopped before it stored any row,
      // so the source looked new here) keeps its row: the lake's copy of the same run is not added twice.
      const unknownRuns = RUN_TABLES.includes(table)
        ? ` WHERE NOT EXISTS (SELECT 1 FROM ${table} AS here WHERE here.run_id = lake.run_id AND here.source = lake.source)`
        : '';
      const [inserted] = await warehouse.sql<{ Count: number }>(
        `INSERT INTO ${table} BY NAME SELECT ${columns} FROM ${from} AS lake${unknownRuns}`,
      );
      rows[table] = Number(inserted?.Count ?? 0);
    }
    const { object } = how;
    if (object === null) return;
    missing = missingDates(object.tables, (await datesOf(warehouse, [source])).get(source) ?? {});
    if (missing.length === 0) await carriedFromLake.adopt(warehouse, source, object.state, object.written_at);
  });
  return { rows, missing };
}
