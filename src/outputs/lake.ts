/**
 * `--format parquet`: a hive-partitioned Parquet lake in a directory or a bucket prefix
 * (`OUT/<table>/source=<name>/date=YYYY-MM-DD/data.parquet`), exact after any crash. The partitions to
 * rewrite are recorded in the working copy's outbox in the same transaction as the change (see
 * `Warehouse.changed`), written here after the commit, and only then cleared. A partition is written
 * whole at its final key (a rename on disk, one complete object in a bucket), so DuckDB, Athena, Spark
 * or Trino never see a partial file. Everything is per source, so runners with disjoint sources
 * (shards) can share one `--out`: the run tables as `<table>/source=<name>/data.parquet`, and a
 * manifest per source (`_costsync_manifest.<name>.json`), written last, when none of the source's
 * partitions is pending, beside its state object (`_costsync_state.<name>.json`, `lake-seed.ts`), which
 * lets a source moved to another runner resume where it was.
 *
 * (The COPY statements are built per table, partition and path, so they are not in sql/.)
 */
import { PARQUET_OPTIONS } from '../storage/duckdb-settings.js';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { addDays } from '../dates.js';
import { throwIfStopped } from '../errors.js';
import { sqlString, type Warehouse } from '../storage/duckdb.js';
import { done, doneMany, markMany, pending, sourcesBehind, type OutboxItem } from '../storage/outbox.js';
import { LAKE_TABLES, RUN_TABLES, lakeStar, tableDef } from '../storage/tables.js';
import { NONE_BEHIND, catchUp, lakeName, markCaughtUp } from './lake-catch-up.js';
import { writeStateObjects } from './lake-seed.js';
import type { OutputTarget } from './target.js';

/** The manifest of one source: a key with `manifest` in its name, outside every table's prefix. */
export function manifestKey(source: string): string {
  return `_costsync_manifest.${source}.json`;
}

/** The key of one partition. Pure. */
export function partitionKey(table: string, source: string, date: string): string {
  return `${table}/source=${source}/date=${date}/data.parquet`;
}

/** Whether `key` (relative to the lake) is one of `sources`' objects: what a shard may touch. Pure. */
export function ownedBy(sources: readonly string[]): (key: string) => boolean {
  const names = new Set(sources);
  return (key) => {
    const partition = /^[a-z0-9_]+\/(?:data\/)?source=([^/]+)\//.exec(key);
    if (partition) return names.has(partition[1]!);
    const manifest = /^_costsync_(?:manifest|state)\.(.+)\.json$/.exec(key);
    return manifest !== null && names.has(manifest[1]!);
  };
}

/** What an earlier costsync wrote for the whole (local) lake, replaced by per-source objects. */
const LEGACY_KEYS = ['_costsync_manifest.json', ...RUN_TABLES.map((t) => `${t}/data.parquet`)];

/**
 * At the lake's start: what it lacks is marked pending, so an empty or new --out is filled from the
 * warehouse and a lake that missed runs catches up. Partitions the warehouse holds and the lake does
 * not (and the reverse) are pending, and so is every partition changed since the lake's mark
 * (`lake-catch-up.ts`); each source's manifest is rewritten at the end, to say what is there now.
 */
export async function fillLake(warehouse: Warehouse, target: OutputTarget, sources: readonly string[]): Promise<void> {
  await warehouse.exclusive(() => markMissing(warehouse, target, sources));
}

async function markMissing(warehouse: Warehouse, target: OutputTarget, sources: readonly string[]): Promise<void> {
  const owned = new Set(sources);
  const missing: OutboxItem[] = [];
  // Each table's dates per source in one scan (a runner may own hundreds of sources); a FOCUS view holds its
  // line items' dates, so it takes theirs rather than be computed again.
  const scanned = new Map<string, Map<string, Set<string>>>();
  const datesOf = async (table: string): Promise<Map<string, Set<string>>> => {
    const base = tableDef(table)?.derivesFrom ?? table;
    let bySource = scanned.get(base);
    if (bySource === undefined) {
      const { date, source: column } = LAKE_TABLES[base]!;
      bySource = new Map();
      for (const r of await warehouse.sql<{ s: string; d: string }>(
        `SELECT DISTINCT ${column} AS s, strftime(${date}, '%Y-%m-%d') AS d FROM ${base}`,
      )) {
        if (!owned.has(r.s)) continue;
        (bySource.get(r.s) ?? bySource.set(r.s, new Set()).get(r.s)!).add(r.d);
      }
      scanned.set(base, bySource);
    }
    return bySource;
  };
  for (const table of Object.keys(LAKE_TABLES)) {
    const inLake = new Map<string, Set<string>>();
    for (const key of await target.list(`${table}/source=`)) {
      const m = /^[a-z0-9_]+\/source=([^/]+)\/date=(\d{4}-\d{2}-\d{2})\//.exec(key);
      if (m === null || !owned.has(m[1]!)) continue;
      (inLake.get(m[1]!) ?? inLake.set(m[1]!, new Set()).get(m[1]!)!).add(m[2]!);
    }
    const storedDates = await datesOf(table);
    for (const source of sources) {
      const stored = storedDates.get(source) ?? new Set<string>();
      const present = inLake.get(source) ?? new Set<string>();
      for (const d of stored) if (!present.has(d)) missing.push({ kind: 'partition', table, source, date: d });
      for (const d of present) if (!stored.has(d)) missing.push({ kind: 'partition', table, source, date: d });
    }
  }
  await markMany(warehouse, missing);
  await catchUp(warehouse, lakeName('parquet', target), sources);
  await markMany(
    warehouse,
    sources.map((source) => ({ kind: 'manifest', source })),
  );
}

/**
 * Days one batch spans from its first pending date, a slot of the write queue (window commits wait for
 * it): its rows are read by date range, so this bounds what is read besides the pending dates.
 */
const DAYS_PER_BATCH = 31;

/**
 * Writes every pending partition, then clears it from the outbox. Each batch (one table and source)
 * is one slot of the write queue: the COPY sees committed rows only, and a change committed meanwhile
 * cannot be cleared unwritten. Returns the number of partitions written. With `sources` (a run's, once
 * `fillLake` has caught the lake up), a drain that leaves nothing pending moves the lake's marks of those
 * sources, so a stop later in the run leaves its next run only what is still pending.
 */
export async function drainLake(
  warehouse: Warehouse,
  target: OutputTarget,
  signal?: AbortSignal,
  sources?: readonly string[],
): Promise<number> {
  return drainPending(
    warehouse,
    async ({ table, source, dates }) => {
      const last = addDays(dates[0]!, DAYS_PER_BATCH - 1);
      const batch = dates.filter((d) => d <= last);
      if (LAKE_TABLES[table] !== undefined) await replacePartitions(warehouse, target, table, source, batch, signal);
      return { written: batch };
    },
    signal,
    sources && (() => markCaughtUp(warehouse, lakeName('parquet', target), sources, NONE_BEHIND)),
  );
}

/** The pending partitions of one table and source. */
export interface PendingBatch {
  table: string;
  source: string;
  /** Its pending dates, oldest first. */
  dates: string[];
}

/**
 * Until nothing is pending: takes the first table and source with pending dates and hands them to
 * `write`, which writes some or all of them and returns those it wrote; they are cleared from the
 * outbox, then its `cleared` step runs (what must follow the clear). `drainPendingSources` one source at
 * a time: see it for the slots, the stop and `caughtUp`. Returns the number of dates written.
 */
export function drainPending(
  warehouse: Warehouse,
  write: (batch: PendingBatch) => Promise<{ written: string[]; cleared?: () => Promise<void> }>,
  signal?: AbortSignal,
  caughtUp?: () => Promise<void>,
): Promise<number> {
  return drainPendingSources(
    warehouse,
    async (_table, [batch]) => {
      const { written, cleared } = await write(batch!);
      return { written: new Map([[batch!.source, written]]), ...(cleared !== undefined && { cleared }) };
    },
    signal,
    caughtUp,
    1,
  );
}

/** The most sources one call of `drainPendingSources` hands over: a commit's work (and the files it writes before it lands) stays bounded. */
export const SOURCES_PER_BATCH = 250;

/**
 * Until nothing is pending: takes the first table with pending dates and hands over its sources' pending
 * dates (up to `maxSources`, in the order they became pending; Iceberg commits them in one snapshot) to
 * `write`, which returns the dates it wrote per source; they are cleared from the outbox, then its
 * `cleared` step runs (what must follow the clear). Each batch is one slot of the write queue, so a write
 * sees committed rows only and a change committed meanwhile cannot be cleared unwritten. Returns the
 * number of dates written. Once `signal` is aborted no batch starts (CS_ERR_ABORTED): what is pending stays
 * in the outbox for the next run. `caughtUp` runs, in the slot that found nothing pending, once this call
 * has written something.
 */
export async function drainPendingSources(
  warehouse: Warehouse,
  write: (
    table: string,
    batches: PendingBatch[],
  ) => Promise<{ written: ReadonlyMap<string, readonly string[]>; cleared?: () => Promise<void> }>,
  signal?: AbortSignal,
  caughtUp?: () => Promise<void>,
  maxSources = SOURCES_PER_BATCH,
): Promise<number> {
  let written = 0;
  for (;;) {
    throwIfStopped(signal, 'the lake');
    const count = await warehouse.exclusive(async () => {
      throwIfStopped(signal, 'the lake');
      const partitions = await pending(warehouse, 'partition');
      if (partitions.length === 0 && written > 0) await caughtUp?.();
      if (partitions.length === 0) return 0;
      const { table } = partitions[0]!;
      const ofTable = partitions.filter((p) => p.table === table);
      const sources = [...new Set(ofTable.map((p) => p.source))].slice(0, maxSources);
      const batches = sources.map((source) => ({
        table,
        source,
        dates: [...new Set(ofTable.filter((p) => p.source === source).map((p) => p.date))].sort(),
      }));
      const { written: wrote, cleared: afterClear } = await write(table, batches);
      // An earlier version's form of a partition may be pending beside this version's: both are cleared.
      const cleared = new Set([...wrote].flatMap(([source, dates]) => dates.map((d) => `${source}/${d}`)));
      await doneMany(
        warehouse,
        ofTable.filter((p) => cleared.has(`${p.source}/${p.date}`)),
      );
      await afterClear?.();
      return [...wrote.values()].reduce((n, d) => n + d.length, 0);
    });
    if (count === 0) return written;
    written += count;
  }
}

/**
 * Writes the rows of `dates` of `source` in `table` to one Parquet file in a scratch directory, then cuts
 * each date's file from it and puts it at its key; a date with no rows loses its object. One file is open
 * at a time (a COPY … PARTITION_BY buffers a row group for every date at once, past the limit for focus),
 * and the table is read once (focus's date filter runs only after joining every row of the source).
 */
async function replacePartitions(
  warehouse: Warehouse,
  target: OutputTarget,
  table: string,
  source: string,
  dates: readonly string[],
  signal?: AbortSignal,
): Promise<void> {
  const scratch = target.scratch(table);
  const { date: dateExpr, source: sourceColumn } = LAKE_TABLES[table]!;
  // rollups_daily's own `date` is the partition column; the others get one (and a `source`, if named otherwise).
  const columns = [
    lakeStar(table),
    ...(dateExpr === 'date' ? [] : [`${dateExpr} AS date`]),
    ...(sourceColumn === 'source' ? [] : [`${sourceColumn} AS source`]),
  ].join(', ');
  const rows = join(scratch, 'dates.parquet');
  try {
    // A range rather than the list of dates: DuckDB joins a long IN list, which takes memory the writer needs.
    await warehouse.sql(`COPY (SELECT ${columns} FROM ${table} WHERE ${sourceColumn} = ${sqlString(source)}
      AND ${dateExpr} BETWEEN ${sqlString(dates[0]!)}::DATE AND ${sqlString(dates.at(-1)!)}::DATE) TO ${sqlString(rows)} (${PARQUET_OPTIONS})`);
    for (const date of dates) {
      throwIfStopped(signal, `the lake partition ${partitionKey(table, source, date)}`);
      const file = join(scratch, `${date}.parquet`);
      // The partition columns are in the path, not in the file (as hive partitioning has it).
      const [written] = await warehouse.sql<{ Count: number }>(
        `COPY (SELECT * EXCLUDE (source, date) FROM read_parquet(${sqlString(rows)}) WHERE date = ${sqlString(date)}::DATE) TO ${sqlString(file)} (${PARQUET_OPTIONS})`,
      );
      if (Number(written?.Count ?? 0) > 0) await target.putFile(partitionKey(table, source, date), file, signal);
      else await target.remove(partitionKey(table, source, date));
      rmSync(file, { force: true });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export interface ManifestTable {
  rows: number;
  partitions: number;
  first_date: string | null;
  last_date: string | null;
}

/**
 * After a run: for each source none of whose partitions is pending, its manifest (written last, so a
 * downstream job that sees it knows the source's part of the lake matched the warehouse). The run
 * tables follow the publish, in `finishRunTables`.
 */
export async function finishLake(
  warehouse: Warehouse,
  target: OutputTarget,
  run: { runId: string; now: () => number; sources: readonly string[]; signal?: AbortSignal | undefined },
): Promise<number> {
  const written = await drainLake(warehouse, target, run.signal);
  await warehouse.exclusive(async () => {
    throwIfStopped(run.signal, 'the lake');
    // Earlier versions wrote only local lakes; a bucket never holds these.
    if (!target.remote) for (const key of LEGACY_KEYS) await target.remove(key);

    const manifests = await pending(warehouse, 'manifest');
    // Sources with a partition still pending: no manifest and no state object yet.
    const behind = await sourcesBehind(warehouse);
    // The lake holds every row of these: their state objects say where a runner taking one over goes on from.
    await writeStateObjects(
      warehouse,
      target,
      run,
      run.sources.filter((s) => !behind.has(s)),
    );
    // An earlier version's one manifest for the whole lake (no source): now one per source of this run.
    const wholeLake = manifests.find((m) => m.source === null);
    const due = new Set(manifests.flatMap((m) => (m.source === null ? run.sources : [m.source])));
    for (const source of due) {
      if (behind.has(source)) continue;
      const tables: Record<string, ManifestTable> = {};
      for (const [table, { date, source: column }] of Object.entries(LAKE_TABLES)) {
        const [row] = await warehouse.sql<ManifestTable>(
          `SELECT count(*) AS rows, count(DISTINCT ${date}) AS partitions, min(${date})::VARCHAR AS first_date, max(${date})::VARCHAR AS last_date
           FROM ${table} WHERE ${column} = ${sqlString(source)}`,
        );
        tables[table] = row!;
      }
      throwIfStopped(run.signal, `the manifest of ${source}`);
      const body = { source, run_id: run.runId, written_at: new Date(run.now()).toISOString(), tables };
      await target.putText(manifestKey(source), `${JSON.stringify(body, null, 2)}\n`);
      await done(warehouse, { kind: 'manifest', source });
    }
    if (wholeLake !== undefined && run.sources.every((s) => !behind.has(s))) await done(warehouse, wholeLake);
    await markCaughtUp(warehouse, lakeName('parquet', target), run.sources);
  });
  return written;
}

/** The pending run tables of `sources` (this runner's), oldest first. */
export async function runTablesDue(warehouse: Warehouse, sources: readonly string[]) {
  return (await pending(warehouse, 'run-tables')).filter((p) => sources.includes(p.source));
}

/**
 * After the run's publish: each source's run tables whose rows changed (the outbox's `run-tables`), whole,
 * so the lake's sync_runs is the warehouse's and the published file's; each cleared once in place.
 */
export async function finishRunTables(
  warehouse: Warehouse,
  target: OutputTarget,
  run: { sources: readonly string[]; signal?: AbortSignal | undefined },
): Promise<void> {
  await warehouse.exclusive(async () => {
    const due = await runTablesDue(warehouse, run.sources);
    if (due.length === 0) return;
    const scratch = target.scratch('run-tables');
    try {
      for (const item of due) {
        for (const table of RUN_TABLES) {
          throwIfStopped(run.signal, `the lake's ${table} of ${item.source}`);
          const file = join(scratch, `${table}-${item.source}.parquet`);
          // The source is the partition: in the path, not in the file (as COPY … PARTITION_BY writes).
          await warehouse.sql(
            `COPY (SELECT * EXCLUDE (source) FROM ${table} WHERE source = ${sqlString(item.source)}) TO ${sqlString(file)} (${PARQUET_OPTIONS})`,
          );
          await target.putFile(`${table}/source=${item.source}/data.parquet`, file, run.signal);
        }
        await done(warehouse, item);
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
}
