/** `costsync status`: per stream, the watermark, last run, rows and windows pending. */
import { addRange, coverageOf, formatRanges, gapsOf } from '../plan/coverage.js';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { ConfigError, ExitCode } from '../errors.js';
import { type AnomalyStreamState, type DateRange, type SyncState, type WindowedStreamState } from '../state/store.js';
import { reconcileCarried } from '../state/carried.js';
import { decodeCarried, decodeStateFile } from '../state/progress.js';
import { olderSchemaError, openReadOnly, sqlString, type ReadOnlyWarehouse } from '../storage/duckdb.js';
import { readableCopy } from '../outputs/publish.js';
import { isS3Url } from '../outputs/s3-url.js';
import { gatherMetrics, type MetricFacts } from '../outputs/metrics.js';
import type { Argv } from 'yargs';
import { formatTable } from '../table.js';
import { connectionOptions, loadConfig, processIo, type CommandIo } from './common.js';
import { requireStateDirectory } from '../run-context.js';
import { dbLockPath, lockHeld } from '../state/lock.js';
import { workingCopyPath } from '../storage/working-copy.js';
import { pending } from '../storage/outbox.js';
import { stateFilesOf } from '../state/files.js';
export { stateFilesOf };

export function statusOptions(yargs: Argv) {
  return connectionOptions(yargs).option('format', {
    // A string, so `--format` with no value is refused as "" rather than as `true`.
    type: 'string',
    choices: ['table', 'json'] as const,
    describe: "table for people, json for scripts (the metrics file's facts included) [default table]",
  });
}

export interface StatusReport {
  sources: {
    file: string;
    /** The source's name (`default` when the config names no sources). */
    name: string;
    baseUrl: string;
    keyFingerprint: string;
    updatedAt: string | null;
    /** Why the state file could not be read (and what to do), when it could not. */
    problem?: string;
    /** Where the state shown came from, as the next sync takes it: the state file, or the warehouse's carried copy. */
    stateFrom: 'file' | 'warehouse';
    /** The same in words, with the file and why. */
    stateNote: string;
    streams: StreamStatus[];
  }[];
  /** State files in the state directory that belong to other warehouses (not shown: pass their --db). */
  otherStateFiles: string[];
  tables: Record<string, unknown>[];
  runs: Record<string, unknown>[];
  /** The latest pushes recorded in ingest_batches. */
  pushes: Record<string, unknown>[];
  /** With --format iceberg: each lake table's current metadata file, as the warehouse last committed it. */
  lakeTables: Record<string, unknown>[];
  /**
   * Each lake this warehouse has written, per source: how many partitions the warehouse wrote since the
   * lake last caught up (0: it holds all the warehouse does), so a lake that runs without it left behind is named.
   */
  lakes: LakeStatus[];
  /** What to do about each lake that has not caught up, or is not on this disk: the lines under the Lakes table. */
  lakeNotes: string[];
  /** Runs holding a lock now (of the state directory, or beside a local --db): what status shows may change under them. */
  running: NonNullable<ReturnType<typeof lockHeld>>[];
  /** What the metrics file holds: each source's last run, open anomalies, the latest day's spend. */
  metrics: MetricFacts | null;
  database: string;
  /**
   * This state directory's working copy when it holds work committed after its last publish (a run killed
   * before its publish, or a publish that failed), so "Database" lacks it; null when not, while a run holds it, or
   * when another program holds it open.
   */
  unpublished: string | null;
}

/** A type, not an interface: it is printed as a table row (`formatTable` takes records). */
export type LakeStatus = {
  lake: string;
  format: string;
  source: string;
  /**
   * Partitions the warehouse wrote since the lake last caught up, which the next run with this lake writes:
   * what runs without it changed, and all a stopped run of its own was to write (some may be there already).
   */
  partitions_to_write: number;
  /** Their first and last dates (`a..b`), or null. */
  dates: string | null;
  /** A directory lake: whether it is on this machine's disk (a deleted one is written whole by its next run); null for a bucket or a catalog. */
  on_disk: boolean | null;
};

/** A type, not an interface: it is printed as a table row (`formatTable` takes records). */
export type StreamStatus = {
  stream: string;
  /**
   * A windowed stream's dates synced, as ranges (`a..b, c..d`: never a min..max across a gap), with
   * `(unchecked)` after the one range an older costsync's min..max gave; the anomalies' latest alert.
   */
  watermark: string | null;
  /** The dates between a windowed stream's ranges. */
  gaps: string | null;
  lastSuccessAt: string | null;
  /** Windows of the plan under way not yet stored; null for the anomalies, which are collected whole each run, not in windows. */
  windowsPending: number | null;
  /** Of those, the ones whose pages are all spooled: the next run stores them without fetching (null for the anomalies). */
  windowsFetched: number | null;
  /** The dates of those windows, as ranges (the plan's stored windows left out). */
  pendingRange: string | null;
};

/** What a windowed stream's state says, for people: its watermark and its plan under way. Pure. */
export function windowedStreamStatus(stream: string, st: WindowedStreamState): StreamStatus {
  const open = st.pending ? st.pending.windows.filter((w) => w.status !== 'done') : [];
  const { ranges, checked } = coverageOf(st);
  const gaps = gapsOf(ranges);
  return {
    stream,
    watermark: ranges.length === 0 ? null : `${formatRanges(ranges)}${checked ? '' : ' (unchecked)'}`,
    gaps: gaps.length === 0 ? null : formatRanges(gaps),
    lastSuccessAt: st.lastSuccessAt,
    windowsPending: open.length,
    windowsFetched: open.filter((w) => w.fetched === true).length,
    pendingRange:
      open.length === 0 ? null : formatRanges(open.reduce<DateRange[]>((rs, w) => addRange(rs, { from: w.start, to: w.end }), [])),
  };
}

/**
 * The anomalies' line: their latest alert. They have no windows (each run collects from the watermark, and one a stop
 * cut short starts again from the same point), so the window columns are empty, not a 0 that says nothing is left. Pure.
 */
export function anomalyStreamStatus(st: AnomalyStreamState): StreamStatus {
  return {
    stream: 'anomalies',
    watermark: st.watermark,
    gaps: null,
    lastSuccessAt: st.lastSuccessAt,
    windowsPending: null,
    windowsFetched: null,
    pendingRange: null,
  };
}

/** A state file's source, read as sync reads it (through the progress codec): its state, or why it cannot be read. */
function readStateFile(path: string): { state: SyncState } | { problem: string } {
  try {
    return { state: decodeStateFile(readFileSync(path, 'utf8'), path) };
  } catch (error) {
    const why = error instanceof ConfigError ? `${error.message} ${error.hint ?? ''}`.trim() : (error as Error).message;
    return { problem: `${path} cannot be read: ${why}` };
  }
}

/** Each source of the warehouse: its state as the next sync would take it (the file's, or the warehouse's), and where it came from. */
function sourcesOf(stateDir: string, own: Map<string, string>, carried: Map<string, { state: string; updatedAt: string | null }>) {
  const names = [...new Set([...carried.keys(), ...own.keys()])].sort();
  return names.map((key): StatusReport['sources'][number] => {
    const file = own.get(key) ?? null;
    const path = file === null ? null : join(stateDir, file);
    const read = path === null ? null : readStateFile(path);
    const name = key;
    if (read !== null && 'problem' in read) {
      return {
        file: file!,
        name,
        baseUrl: '',
        keyFingerprint: '',
        updatedAt: null,
        problem: read.problem,
        stateFrom: 'file',
        stateNote: read.problem,
        streams: [],
      };
    }
    const fromFile = read?.state ?? null;
    const copy = carried.get(name) ?? null;
    const fresh: SyncState = { version: 0, source: { name, baseUrl: '', keyFingerprint: '' }, streams: {}, updatedAt: null };
    // As sync takes it: the file's where it agrees with the warehouse, else the warehouse's (which matches its data).
    const { state, notice } = reconcileCarried(
      fromFile ?? fresh,
      fromFile !== null,
      copy === null ? null : decodeCarried(copy.state),
      name,
    );
    // reconcileCarried says why when it takes the warehouse's over the file's.
    const stateFrom: 'file' | 'warehouse' = notice === null ? 'file' : 'warehouse';
    const stateNote =
      copy === null
        ? `the state file ${path} (the warehouse carries none)`
        : fromFile === null
          ? `the warehouse (no state file of this warehouse in ${stateDir}; the next sync goes on from the warehouse's)`
          : stateFrom === 'file'
            ? `the state file ${path}, which agrees with the warehouse`
            : `the warehouse: the state file ${path} disagrees with it (an older copy, or a run killed between a commit and its state save), and the next sync goes on from the warehouse's`;
    const streams = (['line_items', 'rollups'] as const)
      .filter((s) => state.streams[s])
      .map((s) => windowedStreamStatus(s, state.streams[s]!));
    if (state.streams.anomalies) streams.push(anomalyStreamStatus(state.streams.anomalies));
    return {
      file: file ?? '',
      name,
      baseUrl: fromFile?.source.baseUrl ?? '',
      keyFingerprint: fromFile?.source.keyFingerprint ?? '',
      updatedAt: stateFrom === 'file' ? (fromFile?.updatedAt ?? null) : (copy?.updatedAt ?? null),
      stateFrom,
      stateNote,
      streams,
    };
  });
}

/** Gathers the report: the warehouse's sources (their state as sync takes it) and the database, read-only. */
export async function gatherStatus(db: string, stateDir: string, env: NodeJS.ProcessEnv = process.env): Promise<StatusReport> {
  const { own, others } = stateFilesOf(existsSync(stateDir) ? readdirSync(stateDir) : [], stateDir, db);
  const carried = new Map<string, { state: string; updatedAt: string | null }>();
  let tables: Record<string, unknown>[] = [];
  let runs: Record<string, unknown>[] = [];
  let pushes: Record<string, unknown>[] = [];
  let lakeTables: Record<string, unknown>[] = [];
  let lakes: LakeStatus[] = [];
  let metrics: MetricFacts | null = null;
  const file = isS3Url(db)
    ? await readableCopy(db, { env }).catch((error: unknown) => {
        if ((error as { code?: string }).code === 'CS_ERR_DB_MISSING') return null;
        throw error;
      })
    : db;
  if (file !== null && existsSync(file)) {
    const wh = await openReadOnly(file);
    try {
      tables = await wh.query('status/table_counts');
      runs = await wh.query('status/last_runs');
      pushes = await wh.query('status/last_pushes');
      // A warehouse an older costsync published may have neither table.
      const held = await tablesHeld(wh, ['_costsync_lake_tables', '_costsync_lake_marks']);
      if (held.has('_costsync_lake_tables')) lakeTables = await wh.query('status/lake_tables');
      if (held.has('_costsync_lake_marks'))
        lakes = (await wh.query<Omit<LakeStatus, 'on_disk'>>('status/lakes')).map((l) => ({
          ...l,
          on_disk: isAbsolute(l.lake) ? existsSync(l.lake) : null,
        }));
      metrics = await gatherMetrics(wh, 'published');
      // The progress the warehouse carries: what a sync with an empty or another state directory goes on from.
      if ((await tablesHeld(wh, ['_costsync_sync_state'])).has('_costsync_sync_state'))
        for (const r of await wh.query<{ source: string; state: string; updated_at: string | null }>('status/carried'))
          carried.set(r.source, { state: r.state, updatedAt: r.updated_at });
    } catch (error) {
      throw await olderSchemaError(wh, db, error);
    } finally {
      wh.close();
    }
  }
  const locks = [join(stateDir, 'costsync.lock'), ...(isS3Url(db) ? [] : [dbLockPath(db)])];
  const running = locks.map((path) => lockHeld(path)).filter((held) => held !== null);
  // A running run holds its working copy open, and publishes it as it goes.
  const unpublished = running.length === 0 ? await unpublishedWork(workingCopyPath(stateDir, db)) : null;
  const sources = sourcesOf(stateDir, own, carried);
  return {
    sources,
    otherStateFiles: others,
    tables,
    runs,
    pushes,
    lakeTables,
    lakes,
    lakeNotes: lakeNotes(lakes),
    running,
    metrics,
    database: db,
    unpublished,
  };
}

/** Which of `names` the warehouse holds: one an older costsync wrote may lack tables added since. */
async function tablesHeld(wh: ReadOnlyWarehouse, names: readonly string[]): Promise<Set<string>> {
  const rows = await wh.sql<{ name: string }>(
    `SELECT table_name AS name FROM duckdb_tables() WHERE table_name IN (${names.map(sqlString).join(', ')})`,
  );
  return new Set(rows.map((t) => t.name));
}

/** `work` when that working copy holds work committed after its last snapshot for --db; null when not, or when it cannot be read now. */
async function unpublishedWork(work: string): Promise<string | null> {
  if (!existsSync(work)) return null;
  let wh: ReadOnlyWarehouse;
  try {
    wh = await openReadOnly(work);
  } catch {
    // Another program holds it open: nothing is said of it, rather than a guess.
    return null;
  }
  try {
    // A working copy killed between its adoption and its migrations may predate the outbox.
    if (!(await tablesHeld(wh, ['_costsync_outbox'])).has('_costsync_outbox')) return null;
    // Each commit leaves a publish due, and taking the snapshot for --db clears it. An upload due is left out:
    // whether a snapshot's upload landed in the bucket is not known here.
    return (await pending(wh, 'publish')).length > 0 ? work : null;
  } finally {
    wh.close();
  }
}

/** What to do about each lake that has not caught up with the warehouse, or is not on this machine's disk: a line each. Pure. */
export function lakeNotes(lakes: readonly LakeStatus[]): string[] {
  // A catalog's lake is named by its URL (and warehouse, namespace): a directory's or a bucket's by its place.
  const sync = (l: LakeStatus) =>
    /^https?:\/\//.test(l.lake) ? 'sync through that catalog' : `sync with --format ${l.format} --out ${l.lake}`;
  const notes = new Map<string, string>();
  for (const l of lakes) {
    if (notes.has(l.lake)) continue;
    if (l.on_disk === false)
      notes.set(
        l.lake,
        `Lake ${l.lake} is not on this machine's disk (deleted, moved, or written from another machine): a ${sync(l)} here writes it whole.`,
      );
    else if (lakes.some((o) => o.lake === l.lake && o.partitions_to_write > 0))
      notes.set(
        l.lake,
        `Lake ${l.lake} has not caught up with the warehouse (a run into it stopped, or runs without it wrote since): the next ${sync(l)} writes what it lacks.`,
      );
  }
  return [...notes.values()];
}

export async function runStatusCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  // `--format` here is the output's, not sync's.
  const { format: _format, ...settings } = args;
  const config = loadConfig(settings, io, false);
  requireStateDirectory(config.stateDir);
  const report = await gatherStatus(config.db, config.stateDir, io.env);
  // A state file that cannot be read is reported, with the rest; the exit code says something needs a look.
  const code = report.sources.some((s) => s.problem !== undefined) ? ExitCode.FAILED : ExitCode.OK;
  if (config.logFormat === 'json' || args.format === 'json') {
    io.stdout(`${JSON.stringify(report)}\n`);
    return code;
  }
  // Said first: every figure below may change while it runs (and a stopped run's work shows once it publishes).
  for (const held of [...new Map(report.running.map((h) => [`${h.host} ${h.pid}`, h])).values()]) {
    const sure = held.alive === 'yes' ? '' : ' (on another host or in another container: costsync cannot tell whether it still runs)';
    io.stdout(`Running now: ${held.command}, pid ${held.pid} on ${held.host}, since ${held.startedAt}${sure}.\n\n`);
  }
  if (report.sources.length === 0)
    io.stdout(`No sync state for ${config.db} yet (neither the warehouse nor ${config.stateDir} holds any): run costsync sync.\n`);
  for (const source of report.sources) {
    if (source.problem !== undefined) {
      io.stdout(`Source ${source.name}: the state file is unreadable\n\n`);
      io.stderr(`error: ${source.problem}\n`);
      continue;
    }
    const where =
      source.baseUrl !== ''
        ? `${source.baseUrl} (key ${source.keyFingerprint})`
        : source.stateFrom === 'warehouse' && source.file === ''
          ? 'API and key not known here (a state file records them, and this state directory has none of this warehouse)'
          : 'no answer from the API yet';
    io.stdout(`Source ${source.name}: ${where}, state updated ${source.updatedAt ?? 'never'}\n`);
    io.stdout(`State from ${source.stateNote}.\n`);
    io.stdout(`${formatTable(source.streams)}\n\n`);
  }
  // After this warehouse's sources: the first line of `status | head -1` is about them.
  if (report.otherStateFiles.length > 0)
    io.stdout(
      `(${config.stateDir} also holds the state of ${report.otherStateFiles.length} file(s) of other warehouses, not shown: ${report.otherStateFiles.join(', ')}; pass their --db to see them.)\n\n`,
    );
  if (report.unpublished !== null)
    io.stdout(
      `Not yet published: this state directory's working copy (${report.unpublished}) holds work committed after its last publish (a run was killed, or its publish failed): ${config.db} lacks it until the next sync with this --state-dir.\n\n`,
    );
  if (report.tables.length > 0) {
    io.stdout(`Database ${config.db}\n${formatTable(report.tables)}\n\nLast runs\n${formatTable(report.runs)}\n`);
    if (report.pushes.length > 0) io.stdout(`\nLast pushes\n${formatTable(report.pushes)}\n`);
    if (report.lakes.length > 0)
      io.stdout(
        `\nLakes (per source, the partitions written to the warehouse since the lake last caught up)\n${formatTable(report.lakes)}\n`,
      );
    for (const note of report.lakeNotes) io.stdout(`${note}\n`);
    if (report.lakeTables.length > 0)
      io.stdout(
        `\nIceberg lake tables (each one's current snapshot as this warehouse's last run left it: its own commit, or, on a catalog other runners share, perhaps one of theirs; sync_runs and sync_run_streams as of the run before)\n${formatTable(report.lakeTables)}\n`,
      );
  } else {
    io.stdout(`No database at ${config.db} yet.\n`);
  }
  return code;
}
