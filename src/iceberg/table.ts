/**
 * The commit protocol of an Iceberg table in a directory or a bucket, with no catalog: data files,
 * manifests and manifest lists get new unique names and are never rewritten; the one atomic step is
 * the exclusive create of `metadata/v<N+1>.metadata.json` (`If-None-Match: *` in a bucket, a link that
 * fails on an existing name on disk). A lost race reloads the newest metadata and applies the change
 * again on top of it (bounded, jittered retries).
 *
 * Each source of a table has its own manifest (a commit of one source rewrites only that one, and the
 * manifest list carries the other sources' manifests as they are), so shards with disjoint sources
 * never touch the same manifest and a retry only rebuilds the list. Files a source writes carry its
 * tag (`sourceTag`), so clean-ups touch only the sources a runner owns.
 */
import { randomInt, randomUUID } from 'node:crypto';
import type { Clock } from '../api/resilience.js';
import { mapAtMost } from '../at-most.js';
import { tmpWriterPid } from '../durable-file.js';
import { shortHash } from '../fingerprint.js';
import { systemProbe } from '../state/holder.js';
import {
  decodeManifest,
  decodeManifestList,
  encodeManifest,
  encodeManifestList,
  type DataFile,
  type FieldSummary,
  type ManifestEntry,
  type ManifestFile,
  type PartitionSpec,
} from './avro.js';
import {
  SUMMARY,
  currentSchema,
  currentSnapshot,
  expireSnapshots,
  mainSnapshotId,
  metadataKey,
  metadataVersion,
  newTableMetadata,
  type Snapshot,
  type TableMetadata,
} from './metadata.js';
import { evolveSchema, type IcebergSchema, type WarehouseColumn } from './schema.js';
import { CostsyncError, InternalError } from '../errors.js';
import type { IcebergCatalog, LoadedTable, TableCommit } from './catalog.js';
import type { CommitOutcome, TableChange } from './rest-types.js';
import { applyUpdates, expiryChange, snapshotChange } from './updates.js';
import type { OutputTarget } from '../outputs/target.js';

/** What a table needs of where it lives (keys are relative to the lake; see `OutputTarget`). */
export interface IcebergStore {
  /** The absolute location of `key`, as metadata and manifests name files (`file:///…`, `s3://…`). */
  location(key: string): string;
  getText(key: string): Promise<string | null>;
  getBytes(key: string): Promise<Buffer | null>;
  putBytes(key: string, bytes: Buffer): Promise<void>;
  putText(key: string, text: string): Promise<void>;
  /** Creates `key` only when absent; false when it exists (another writer's commit won). */
  createText(key: string, text: string): Promise<boolean>;
  remove(key: string): Promise<void>;
  list(prefix: string): Promise<string[]>;
}

/** Commits tried before giving up on a table that keeps changing under this runner. */
export const COMMIT_ATTEMPTS = 12;

/** A short, stable tag for a source in file names (names stay short and need no escaping). */
export function sourceTag(source: string): string {
  return shortHash(source, 10);
}

/** Snapshot ids: random, positive, below 2^53 (Avro longs as JavaScript numbers). */
function newSnapshotId(): number {
  return randomInt(1, 2 ** 47) * 64 + randomInt(0, 64);
}

/** A directory table's newest metadata and its version (0: none yet). */
export interface DirectoryTable {
  version: number;
  metadata: TableMetadata | null;
}

/**
 * The newest metadata of the directory table `table`: from `version-hint.text`, then any newer
 * version found by probing (the hint is written after the metadata, so it may lag by a commit).
 */
export async function loadTable(store: IcebergStore, table: string): Promise<DirectoryTable> {
  let version = parseVersionHint(await store.getText(`${table}/metadata/version-hint.text`));
  let text = version > 0 ? await store.getText(`${table}/${metadataKey(version)}`) : null;
  if (text === null && version > 0) {
    // A hint naming a metadata file that is gone (pruned by hand): find the newest from a listing.
    const versions = (await store.list(`${table}/metadata/v`))
      .map((k) => /\/v(\d+)\.metadata\.json$/.exec(k)?.[1])
      .filter(Boolean)
      .map(Number);
    version = versions.length > 0 ? Math.max(...versions) : 0;
    text = version > 0 ? await store.getText(`${table}/${metadataKey(version)}`) : null;
  }
  for (;;) {
    const next = await store.getText(`${table}/${metadataKey(version + 1)}`);
    if (next === null) break;
    version += 1;
    text = next;
  }
  return { version, metadata: text === null ? null : (JSON.parse(text) as TableMetadata) };
}

/**
 * Points `version-hint.text` at the newest metadata when it lags (a run killed between creating a
 * metadata file and writing the hint): readers such as pyiceberg and icebird follow the hint alone, and
 * a later commit that would have rewritten it may never come (a month that did not change makes none).
 * Returns whether it was mended.
 */
export async function mendVersionHint(store: IcebergStore, table: string): Promise<boolean> {
  const hinted = parseVersionHint(await store.getText(`${table}/metadata/version-hint.text`));
  const { version } = await loadTable(store, table);
  if (version === 0 || version === hinted) return false;
  await writeVersionHint(store, table, version);
  return true;
}

/**
 * Points the hint at `version`, then at any newer version another writer created meanwhile: that
 * writer's hint may have been written before this one, and readers follow the last hint written alone
 * (left on an older version, they would read snapshots whose files an expiry has since deleted).
 * The last writer always looks after its write, so the last hint names the newest version.
 */
async function writeVersionHint(store: IcebergStore, table: string, version: number): Promise<void> {
  for (let hinted = 0; hinted !== version;) {
    // Bare digits, as the Java writer writes them: pyiceberg's StaticTable takes anything else as part of the file name.
    await store.putText(`${table}/metadata/version-hint.text`, String(version));
    hinted = version;
    while ((await store.getText(`${table}/${metadataKey(version + 1)}`)) !== null) version += 1;
  }
}

/**
 * The version a `version-hint.text` names (0: none, or not a version). Surrounding whitespace is
 * accepted: lakes written before the hint held bare digits end it with a newline.
 */
export function parseVersionHint(text: string | null): number {
  const trimmed = text?.trim() ?? '';
  return /^\d+$/.test(trimmed) ? Number(trimmed) : 0;
}

/** The source a manifest holds (its first partition field is the source, bounds equal). */
export function manifestSource(m: ManifestFile): string | null {
  const bound = m.partitions?.[0]?.lower_bound;
  return bound ? bound.toString('utf8') : null;
}

/** The current snapshot's manifests. */
export async function currentManifests(store: IcebergStore, table: string, metadata: TableMetadata | null): Promise<ManifestFile[]> {
  const snapshot = metadata && currentSnapshot(metadata);
  return snapshot ? readManifestList(store, table, snapshot) : [];
}

/** The data files `source` has live in the current snapshot of `metadata`. */
export async function liveFiles(
  store: IcebergStore,
  table: string,
  metadata: TableMetadata | null,
  source: string,
  /** The current snapshot's manifests, when the caller already read them (one list read for many sources). */
  manifests?: readonly ManifestFile[],
): Promise<DataFile[]> {
  const files: DataFile[] = [];
  for (const m of (manifests ?? (await currentManifests(store, table, metadata))).filter((x) => manifestSource(x) === source)) {
    for (const e of await readManifest(store, table, m)) if (e.status !== 2) files.push(e.data_file);
  }
  return files;
}

/** A file a snapshot names is missing, read twice: `repairTable` (`--iceberg-repair`) mends the table. */
class MissingFileError extends CostsyncError {}

/** A table that names a file it lacks (a second read confirmed it): the hint names the repair first. */
function missing(store: IcebergStore, table: string, problem: string): CostsyncError {
  return new MissingFileError('CS_ERR_LAKE_DAMAGED', `The Iceberg table at ${store.location(table)} ${problem}.`, {
    hint: `Run the same sync with --iceberg-repair: it commits a new snapshot of the table from the files that can still be read (every earlier snapshot that can still be read stays in its history), and the rows the missing file held are written again from the warehouse, each runner's for its own sources. Putting the file back from a copy mends it too.`,
  });
}

/** A table whose files are not where its metadata says (moved or copied): a person points costsync at it. */
function damaged(store: IcebergStore, table: string, problem: string, fix: string): CostsyncError {
  return new CostsyncError('CS_ERR_LAKE_DAMAGED', `The Iceberg table at ${store.location(table)} ${problem}.`, {
    hint: `${fix} Otherwise move the table's files (everything under ${store.location(table)}) aside, or delete them: the next sync writes the table again from the warehouse (its earlier snapshots are lost).`,
  });
}

/**
 * A file a snapshot names: read again before it is called missing (a read answered 404 by a gateway
 * or a proxy that lost track of it once is not a damaged table).
 */
async function readNamed(store: IcebergStore, key: string): Promise<Buffer | null> {
  return (await store.getBytes(key)) ?? (await store.getBytes(key));
}

async function readManifestList(store: IcebergStore, table: string, snapshot: Snapshot): Promise<ManifestFile[]> {
  const bytes = await readNamed(store, keyOf(store, table, snapshot['manifest-list']));
  if (bytes === null) {
    throw missing(
      store,
      table,
      `lacks ${snapshot['manifest-list']}, the manifest list of its snapshot ${snapshot['snapshot-id']}: it was deleted outside costsync`,
    );
  }
  return decodeManifestList(bytes);
}

async function readManifest(store: IcebergStore, table: string, m: ManifestFile): Promise<ManifestEntry[]> {
  const bytes = await readNamed(store, keyOf(store, table, m.manifest_path));
  if (bytes === null)
    throw missing(store, table, `lacks ${m.manifest_path}, a manifest its snapshots name: it was deleted outside costsync`);
  return decodeManifest(bytes);
}

/** The key of a location this store wrote under `table` (`…/<table>/metadata/x` → `<table>/metadata/x`). */
export function keyOf(store: IcebergStore, table: string, location: string): string {
  const root = store.location(`${table}/`);
  if (!location.startsWith(root)) {
    // Iceberg metadata names files by absolute location, so a table moved or copied elsewhere still names the old place.
    throw damaged(
      store,
      table,
      `names ${location}, outside itself: it was moved or copied from where it was written`,
      'Point --out at where the lake was written.',
    );
  }
  return `${table}/${location.slice(root.length)}`;
}

export interface Partitioning {
  source: string;
  month: string | null;
}

/** The partition field holding a file's month (months since 1970), named after its column. */
export function monthField(column: string): string {
  return `${column}_month`;
}

/**
 * The partition spec: the source column (identity), then the month of the date column when the
 * table has one. Source first, so each manifest's first field summary names its one source.
 */
export function partitionSpec(schema: IcebergSchema, p: Partitioning): PartitionSpec {
  const id = (name: string) => {
    const field = schema.fields.find((f) => f.name === name);
    if (!field)
      throw new InternalError(
        `The partition column ${name} is not in the Iceberg schema (${schema.fields.map((f) => f.name).join(', ')}).`,
      );
    return field.id;
  };
  return {
    'spec-id': 0,
    fields: [
      { name: 'source', transform: 'identity', 'source-id': id(p.source), 'field-id': 1000 },
      ...(p.month === null ? [] : [{ name: monthField(p.month), transform: 'month' as const, 'source-id': id(p.month), 'field-id': 1001 }]),
    ],
  };
}

/** What one commit changes for one source of a table. */
export interface SourceChange {
  source: string;
  /** The table's columns now (a new column makes a new schema). */
  columns: readonly WarehouseColumn[];
  /** The columns the partition spec takes: the source (identity), and the date (month), if any. */
  partitioning: Partitioning;
  /** Files written for this commit (already in place under `data/`). */
  add: DataFile[];
  /** Which of the source's live files this commit replaces. */
  replaces(file: DataFile): boolean;
  /** Summary entries (`costsync.*`): the run, the commit id, the window. */
  summary: Record<string, string>;
  /** Table properties the commit sets with its snapshot (a source's state object, with a catalog). */
  properties?: Readonly<Record<string, string>>;
}

export interface CommitResult {
  /** The metadata file of the commit, or null when nothing changed (no snapshot made). */
  metadataLocation: string | null;
  snapshotId: number | null;
  attempts: number;
}

function fieldSummaries(spec: PartitionSpec, files: readonly DataFile[]): FieldSummary[] {
  return spec.fields.map((f) => {
    const values = files.map((d) => d.partition[f.name]).filter((v): v is string | number => v !== null && v !== undefined);
    const encode = (v: string | number) =>
      typeof v === 'string'
        ? Buffer.from(v, 'utf8')
        : (() => {
            const b = Buffer.alloc(4);
            b.writeInt32LE(v);
            return b;
          })();
    const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return {
      contains_null: values.length < files.length,
      contains_nan: false,
      lower_bound: sorted.length > 0 ? encode(sorted[0]!) : null,
      upper_bound: sorted.length > 0 ? encode(sorted.at(-1)!) : null,
    };
  });
}

const sum = (files: readonly { record_count: number }[]) => files.reduce((n, f) => n + f.record_count, 0);

/** One table's change built on a loaded base: its manifest and list already written, not yet committed. */
interface BuiltCommit extends TableCommit {
  snapshotId: number;
  /** Keys this attempt wrote (removed when the attempt loses, as nothing references them). */
  written: string[];
  /** A directory table being created by this commit. */
  initial?: TableMetadata;
}

/** The sources a snapshot wrote: a batch names them all (`SUMMARY.sources`), an older single commit its one. Pure. */
export function snapshotSources(snapshot: Pick<Snapshot, 'summary'>): string[] {
  const all = snapshot.summary[SUMMARY.sources];
  if (all !== undefined) return all.split(',').filter((s) => s !== '');
  const one = snapshot.summary[SUMMARY.source];
  return one === undefined ? [] : [one];
}

/**
 * Builds `changes` (each of another source of `table`) as one snapshot on top of `loaded`: `overwrite`
 * when it replaces files, else `append`; null when none adds or replaces anything. Each source keeps a
 * manifest of its own, so a runner reads and replaces only its sources' files. Writes the new manifests
 * and the manifest list.
 */
async function buildCommit(
  table: string,
  loaded: LoadedTable,
  changes: readonly SourceChange[],
  nowMs: number,
): Promise<BuiltCommit | null> {
  const { store, metadata: base } = loaded;
  const first = changes[0]!;
  const changing = new Set(changes.map((c) => c.source));
  const manifests = await currentManifests(store, table, base);
  const others = manifests.filter((m) => !changing.has(manifestSource(m) ?? ''));
  const parts: { change: SourceChange; kept: ManifestEntry[]; removed: ManifestEntry[] }[] = [];
  for (const change of changes) {
    const live: ManifestEntry[] = [];
    for (const m of manifests.filter((x) => manifestSource(x) === change.source))
      live.push(...(await readManifest(store, table, m)).filter((e) => e.status !== 2));
    parts.push({
      change,
      removed: live.filter((e) => change.replaces(e.data_file)),
      kept: live.filter((e) => !change.replaces(e.data_file)),
    });
  }
  if (parts.every((p) => p.change.add.length === 0 && p.removed.length === 0)) return null;

  let initial: TableMetadata | undefined;
  if (base === null) {
    const { schema, lastColumnId } = evolveSchema(first.columns, null, 0);
    initial = newTableMetadata({
      uuid: randomUUID(),
      location: store.location(table),
      schema,
      lastColumnId,
      spec: partitionSpec(schema, first.partitioning),
      nowMs,
    });
  }
  const metadata = (base ?? initial)!;
  const evolved = evolveSchema(first.columns, currentSchema(metadata), metadata['last-column-id']);
  const schema = evolved.changed ? evolved.schema : currentSchema(metadata);
  const spec = metadata['partition-specs'].find((p) => p['spec-id'] === metadata['default-spec-id'])!;
  const snapshotId = newSnapshotId();
  const sequence = metadata['last-sequence-number'] + 1;
  const written: string[] = [];
  const put = async (key: string, bytes: Buffer) => {
    await store.putBytes(key, bytes);
    written.push(key);
    return bytes.length;
  };
  const listed: ManifestFile[] = [...others];
  for (const { change, kept, removed } of parts) {
    const entries: ManifestEntry[] = [
      ...kept.map((e) => ({ ...e, status: 0 as const })),
      ...removed.map((e) => ({ ...e, status: 2 as const, snapshot_id: snapshotId })),
      ...change.add.map((d) => ({
        status: 1 as const,
        snapshot_id: snapshotId,
        sequence_number: sequence,
        file_sequence_number: sequence,
        data_file: d,
      })),
    ];
    if (entries.length === 0) continue;
    const manifestKey = `${table}/metadata/${sourceTag(change.source)}-${randomUUID()}-m0.avro`;
    const length = await put(manifestKey, await encodeManifest(entries, schema, spec));
    listed.push({
      manifest_path: store.location(manifestKey),
      manifest_length: length,
      partition_spec_id: spec['spec-id'],
      content: 0,
      sequence_number: sequence,
      min_sequence_number: Math.min(sequence, ...kept.map((e) => e.sequence_number)),
      added_snapshot_id: snapshotId,
      added_files_count: change.add.length,
      existing_files_count: kept.length,
      deleted_files_count: removed.length,
      added_rows_count: sum(change.add),
      existing_rows_count: sum(kept.map((e) => e.data_file)),
      deleted_rows_count: sum(removed.map((e) => e.data_file)),
      partitions: fieldSummaries(
        spec,
        entries.map((e) => e.data_file),
      ),
      key_metadata: null,
    });
  }
  const parent = currentSnapshot(metadata);
  // The list is named for the batch's first source: that source's clean-up keeps it while the snapshot lives.
  const listKey = `${table}/metadata/snap-${snapshotId}-${sourceTag(first.source)}-${randomUUID()}.avro`;
  await put(
    listKey,
    await encodeManifestList(listed, { id: snapshotId, parentId: parent?.['snapshot-id'] ?? null, sequenceNumber: sequence }),
  );
  const totalRecords = listed.reduce((n, m) => n + m.added_rows_count + m.existing_rows_count, 0);
  const totalFiles = listed.reduce((n, m) => n + m.added_files_count + m.existing_files_count, 0);
  const added = parts.flatMap((p) => p.change.add);
  const removed = parts.flatMap((p) => p.removed);
  const snapshot: Snapshot = {
    'snapshot-id': snapshotId,
    ...(parent !== null && { 'parent-snapshot-id': parent['snapshot-id'] }),
    'sequence-number': sequence,
    'timestamp-ms': Math.max(nowMs, metadata['last-updated-ms']),
    'manifest-list': store.location(listKey),
    summary: {
      operation: removed.length > 0 ? 'overwrite' : 'append',
      'added-data-files': String(added.length),
      'deleted-data-files': String(removed.length),
      'added-records': String(sum(added)),
      'deleted-records': String(sum(removed.map((e) => e.data_file))),
      'total-records': String(totalRecords),
      'total-data-files': String(totalFiles),
      [SUMMARY.source]: first.source,
      ...(changes.length > 1 && { [SUMMARY.sources]: changes.map((c) => c.source).join(',') }),
      ...first.summary,
    },
    'schema-id': schema['schema-id'],
  };
  const properties = Object.assign({}, ...changes.map((c) => c.properties ?? {})) as Record<string, string>;
  return {
    table,
    base: loaded,
    nowMs,
    change: withProperties(snapshotChange(metadata, snapshot, evolved.changed ? schema : null), properties),
    snapshotId,
    written,
    ...(initial !== undefined && { initial }),
  };
}

/**
 * `buildCommit` on `loaded`, or on the table's newest metadata when a file `loaded` names is gone
 * because the table moved on since it was read (another runner's expiry removed what only an older
 * snapshot reached). A file missing from the newest metadata too is damage (`CS_ERR_LAKE_DAMAGED`).
 */
async function buildOnNewest(
  catalog: IcebergCatalog,
  table: string,
  loaded: LoadedTable,
  changes: readonly SourceChange[],
  nowMs: number,
): Promise<BuiltCommit | null> {
  for (let base = loaded, reads = 1; ; reads++) {
    try {
      return await buildCommit(table, base, changes, nowMs);
    } catch (error) {
      if (!(error instanceof MissingFileError) || reads >= COMMIT_ATTEMPTS) throw error;
      const newest = await catalog.load(table);
      if (newest.metadataLocation === base.metadataLocation) throw error;
      base = newest;
    }
  }
}

/** `change`, also setting `properties` (none: as it is). Pure. */
function withProperties(change: TableChange, properties: Readonly<Record<string, string>> | undefined): TableChange {
  if (properties === undefined || Object.keys(properties).length === 0) return change;
  return { ...change, updates: [...change.updates, { action: 'set-properties', updates: { ...properties } }] };
}

/**
 * Commits `change` as one snapshot on top of the table's newest metadata (see `commitSources`).
 * `loaded`: the table as the caller just read it, for the first attempt.
 */
export async function commitSource(
  catalog: IcebergCatalog,
  table: string,
  change: SourceChange,
  clock: Clock,
  loaded?: LoadedTable,
): Promise<CommitResult> {
  const [result] = await commitSources(catalog, [{ table, changes: [change], ...(loaded !== undefined && { loaded }) }], clock);
  return result!;
}

/**
 * Commits each table's changes (of one source or several) as one snapshot, all in one atomic step (several tables need a catalog with
 * transactions). A lost race (a 409, or the version taken) reloads and builds again on the newest
 * metadata, removing what the lost attempt wrote. An answer that leaves it unknown whether the commit
 * was applied (500, 502, 504, a timeout) is settled first: reloaded and looked for by snapshot id, and
 * what it wrote is left in place (a later run's orphan removal takes it when nothing references it).
 */
export async function commitSources(
  catalog: IcebergCatalog,
  items: readonly { table: string; changes: readonly SourceChange[]; loaded?: LoadedTable }[],
  clock: Clock,
): Promise<CommitResult[]> {
  const results = new Map<string, CommitResult>();
  let remaining = [...items];
  for (let attempt = 1; ; attempt++) {
    const built: BuiltCommit[] = [];
    for (const item of remaining) {
      // The caller's load serves the first attempt; a lost race reloads after its backoff (the read back
      // that settled it is older by then, and building on it would lose the race again).
      const loaded = attempt === 1 && item.loaded !== undefined ? item.loaded : await catalog.load(item.table);
      const b = await buildOnNewest(catalog, item.table, loaded, item.changes, clock.now());
      if (b === null) results.set(item.table, { metadataLocation: null, snapshotId: null, attempts: attempt });
      else built.push(b);
    }
    if (built.length === 0) return items.map((i) => results.get(i.table)!);
    const outcome: CommitOutcome = built.length === 1 ? await catalog.commit(built[0]!, built[0]!.initial) : await catalog.commitAll(built);
    if (outcome.kind === 'committed') {
      for (const b of built) {
        const location = built.length === 1 ? outcome.metadataLocation : (await catalog.load(b.table)).metadataLocation;
        results.set(b.table, { metadataLocation: location, snapshotId: b.snapshotId, attempts: attempt });
      }
      return items.map((i) => results.get(i.table)!);
    }
    // Whether it was applied decides everything after: never committed twice, never lost. A conflict
    // is read back too: a bucket's create whose answer was lost is refused when the SDK sends it again,
    // so "another runner won" may be this attempt's own commit, made current.
    let settled: BuiltCommit[] = [];
    for (const b of built) {
      const now = await catalog.load(b.table);
      if (now.metadata?.snapshots.some((s) => s['snapshot-id'] === b.snapshotId)) {
        results.set(b.table, { metadataLocation: now.metadataLocation, snapshotId: b.snapshotId, attempts: attempt });
        settled.push(b);
      } else if (outcome.kind === 'conflict') {
        // Another runner committed first, and the newest metadata does not hold this snapshot: what
        // this attempt wrote is referenced by nothing. (Left in place when unknown: a later run's
        // orphan removal takes it.)
        for (const key of b.written) await b.base.store.remove(key);
      }
    }
    remaining = remaining.filter((i) => !settled.some((b) => b.table === i.table));
    settled = [];
    if (remaining.every((i) => results.has(i.table))) return items.map((i) => results.get(i.table)!);
    for (const i of remaining) results.delete(i.table);
    if (attempt >= COMMIT_ATTEMPTS) throw lostRaces(catalog, remaining[0]!.table, 'committing to', attempt);
    await clock.sleep(backoffMs(attempt));
  }
}

/** Every attempt at a change lost its race: the change is pending, for the next run. */
function lostRaces(catalog: IcebergCatalog, table: string, what: string, attempts: number): CostsyncError {
  return new CostsyncError(
    'CS_ERR_LAKE_CONFLICT',
    `Gave up ${what} the Iceberg table ${catalog.name(table)} after ${attempts} attempts: other runners committed first each time.`,
    {
      hint: 'Nothing is lost: the change stays pending and the next run makes it. Should it keep happening, start the runners that share this lake further apart.',
    },
  );
}

/** A lost race's wait: short, growing, jittered, so shards that collided spread out. Pure but for the jitter. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  return Math.round(Math.min(2_000, 25 * 2 ** attempt) * (0.5 + random()));
}

/**
 * Creates version `version + 1` (false when it exists), then points the hint at it and deletes the
 * metadata file that fell out of the metadata log.
 */
async function publishVersion(
  store: IcebergStore,
  table: string,
  version: number,
  base: TableMetadata | null,
  next: TableMetadata,
): Promise<boolean> {
  const key = `${table}/${metadataKey(version + 1)}`;
  const text = `${JSON.stringify(next, null, 1)}\n`;
  // A create refused may have met this very commit (a retried write whose first answer was lost):
  // the version is ours when it holds our metadata (a snapshot id no other writer has).
  if (!(await store.createText(key, text)) && (await store.getText(key)) !== text) return false;
  await writeVersionHint(store, table, version + 1);
  const kept = new Set(next['metadata-log'].map((e) => e['metadata-file']));
  for (const e of base?.['metadata-log'] ?? []) {
    if (!kept.has(e['metadata-file'])) await store.remove(keyOf(store, table, e['metadata-file']));
  }
  return true;
}

/**
 * The directory tables of a lake (`--out` without `--catalog`): a commit applies its updates to the
 * metadata it was built on and creates the next version only if absent, so a lost race is a conflict.
 */
export function directoryCatalog(target: OutputTarget): IcebergCatalog {
  const load = async (table: string): Promise<LoadedTable> => {
    const { version, metadata } = await loadTable(target, table);
    return { version, metadata, metadataLocation: version > 0 ? target.location(`${table}/${metadataKey(version)}`) : null, store: target };
  };
  const commit = async ({ table, base, change, nowMs }: TableCommit, initial?: TableMetadata): Promise<CommitOutcome> => {
    const from = base.metadata ?? initial;
    if (from === undefined) throw new InternalError(`A commit to the new directory table ${table} came without the table.`);
    const next = applyUpdates(from, change.updates, { previousFile: base.metadata === null ? null : base.metadataLocation, nowMs });
    if (!(await publishVersion(target, table, base.version, base.metadata, next)))
      return { kind: 'conflict', message: `version ${base.version + 1} was created by another runner` };
    return { kind: 'committed', metadata: next, metadataLocation: target.location(`${table}/${metadataKey(base.version + 1)}`) };
  };
  return {
    kind: 'directory',
    where: target.url,
    name: (table) => `at ${target.location(table)}`,
    transactions: false,
    load,
    ensure: (table) => load(table),
    commit,
    commitAll: async (commits) => {
      if (commits.length !== 1) throw new InternalError('Directory tables commit one table at a time.');
      return commit(commits[0]!);
    },
  };
}

/**
 * Expires `table`'s snapshots older than `retentionMs` (one metadata change, retried like a commit),
 * then deletes what only they reached. Only `sources`' snapshots go (another shard expires its own),
 * but their files go whichever source wrote them (see `removeExpiredFiles`). Returns the files removed
 * and the metadata file written with its current snapshot (null: nothing expired, nothing written).
 */
export async function expireTable(
  catalog: IcebergCatalog,
  table: string,
  sources: readonly string[],
  retentionMs: number,
  clock: Clock,
): Promise<{ removed: number; metadataLocation: string | null; snapshotId: number | null }> {
  const owned = new Set(sources);
  const nothing = { removed: 0, metadataLocation: null, snapshotId: null };
  for (let attempt = 1; ; attempt++) {
    const loaded = await catalog.load(table);
    const base = loaded.metadata;
    if (base === null) return nothing;
    const mine = expireSnapshots(base, clock.now(), retentionMs).expired.filter((s) => snapshotSources(s).some((x) => owned.has(x)));
    if (mine.length === 0) return nothing;
    const ids = mine.map((s) => s['snapshot-id']);
    const outcome = await catalog.commit({ table, base: loaded, change: expiryChange(base, ids), nowMs: clock.now() });
    let after: LoadedTable | null = null;
    if (outcome.kind === 'unknown') {
      // Applied when none of the snapshots is left: then their files may go.
      const now = await catalog.load(table);
      if (!now.metadata?.snapshots.some((s) => ids.includes(s['snapshot-id']))) after = now;
    }
    if (outcome.kind === 'committed' || after !== null) {
      const retained = outcome.kind === 'committed' && outcome.metadata !== null ? outcome.metadata.snapshots : after?.metadata?.snapshots;
      return {
        removed: await removeExpiredFiles(loaded.store, table, mine, retained ?? (await catalog.load(table)).metadata?.snapshots ?? []),
        metadataLocation: outcome.kind === 'committed' ? outcome.metadataLocation : after!.metadataLocation,
        snapshotId: mainSnapshotId(outcome.kind === 'committed' ? outcome.metadata : after!.metadata),
      };
    }
    if (attempt >= COMMIT_ATTEMPTS) throw lostRaces(catalog, table, 'expiring the snapshots of', attempt);
    await clock.sleep(backoffMs(attempt));
  }
}

/** Manifest lists and manifests read at once while an expiry works out what is still reachable. */
const EXPIRY_READS = 8;

/**
 * Iceberg's rule for expired snapshots: a manifest list, manifest or data file they reached is deleted
 * only when no `retained` snapshot, of any writer, reaches it. Such a file is unreachable for good: a
 * commit builds on the current snapshot, which is always retained, and adds files under new names. A
 * retained list or manifest that cannot be read could name any file, so then only the expired lists go.
 */
async function removeExpiredFiles(
  store: IcebergStore,
  table: string,
  expired: readonly Snapshot[],
  retained: readonly Snapshot[],
): Promise<number> {
  let complete = true;
  const retainedManifests = new Map<string, ManifestFile>();
  for (const list of await mapAtMost(retained, EXPIRY_READS, (s) => tryRead(() => readManifestList(store, table, s)))) {
    if (list === null) complete = false;
    for (const m of list ?? []) retainedManifests.set(m.manifest_path, m);
  }
  const reached = new Set(retainedManifests.keys());
  for (const entries of await mapAtMost([...retainedManifests.values()], EXPIRY_READS, (m) =>
    tryRead(() => readManifest(store, table, m)),
  )) {
    if (entries === null) complete = false;
    // A file a manifest marks deleted is not read through it.
    for (const e of entries ?? []) if (e.status !== 2) reached.add(e.data_file.file_path);
  }
  const candidates = new Set(expired.map((s) => s['manifest-list']));
  if (complete) {
    // An expired list or manifest that cannot be read is passed over: what it named is left, never guessed at.
    const gone = new Map<string, ManifestFile>();
    for (const list of await mapAtMost(expired, EXPIRY_READS, (s) => tryRead(() => readManifestList(store, table, s)))) {
      for (const m of list ?? []) if (!reached.has(m.manifest_path)) gone.set(m.manifest_path, m);
    }
    for (const [path, m] of gone) {
      candidates.add(path);
      for (const e of (await tryRead(() => readManifest(store, table, m))) ?? []) candidates.add(e.data_file.file_path);
    }
  }
  let removed = 0;
  for (const location of candidates) {
    if (reached.has(location)) continue;
    await store.remove(keyOf(store, table, location));
    removed += 1;
  }
  return removed;
}

/** What `repairTable` did: the new snapshot, and the sources whose rows it leaves out (written again from their warehouses). */
export interface Repair {
  metadataLocation: string | null;
  snapshotId: number;
  /** The snapshot whose manifests the repair kept (null: none could be read). */
  keptFrom: number | null;
  /** The snapshots removed from the history: each names a file that is missing. */
  removed: number[];
  rewrite: string[];
}

/**
 * A table whose current snapshot cannot be read (its manifest list, or a manifest it names, is
 * missing after a second read) gets a new current snapshot of what can still be read: the manifests
 * of the newest snapshot whose list can be read, less those missing and those of the sources that
 * committed after it (theirs there are older than what was lost). Those sources' rows are left out:
 * each runner writes its own again from its warehouse at its lake's start (the row counts differ).
 * Snapshots that name a missing file leave the history in the same commit; every other stays, so
 * time travel to them still reads. Null when the current snapshot reads whole.
 */
export async function repairTable(
  catalog: IcebergCatalog,
  table: string,
  summary: { source: string; runId: string },
  clock: Clock,
): Promise<Repair | null> {
  for (let attempt = 1; ; attempt++) {
    const loaded = await catalog.load(table);
    const { metadata, store } = loaded;
    const current = metadata && currentSnapshot(metadata);
    if (metadata === null || current === null) return null;
    const present = new Map<string, boolean>();
    const isPresent = async (location: string) => {
      if (!present.has(location)) present.set(location, (await readNamed(store, keyOf(store, table, location))) !== null);
      return present.get(location)!;
    };
    const lists = new Map<number, ManifestFile[] | null>();
    const whole = async (snapshot: Snapshot) => {
      const list = await unlessMissing(() => readManifestList(store, table, snapshot));
      lists.set(snapshot['snapshot-id'], list);
      for (const m of list ?? []) if (!(await isPresent(m.manifest_path))) return false;
      return list !== null;
    };
    // The current snapshot first: a table that reads whole costs one list and its manifests' reads.
    if (await whole(current)) return null;
    const broken: number[] = [];
    for (const snapshot of metadata.snapshots) if (snapshot === current || !(await whole(snapshot))) broken.push(snapshot['snapshot-id']);

    // What each commit after the kept list changed is lost: its source's manifest there is older.
    const rewrite = new Set<string>();
    let kept: Snapshot | undefined = current;
    while (kept !== undefined && !lists.get(kept['snapshot-id'])) {
      for (const x of snapshotSources(kept)) rewrite.add(x);
      if (snapshotSources(kept).length === 0) rewrite.add('');
      const parent: number | undefined = kept['parent-snapshot-id'];
      kept = metadata.snapshots.find((x) => x['snapshot-id'] === parent);
    }
    const source = (m: ManifestFile) => manifestSource(m) ?? '';
    const candidates = kept === undefined ? [] : lists.get(kept['snapshot-id'])!;
    for (const m of candidates) if (!(await isPresent(m.manifest_path))) rewrite.add(source(m));
    const listed = rewrite.has('') ? [] : candidates.filter((m) => !rewrite.has(source(m)));
    for (const m of candidates) if (!listed.includes(m)) rewrite.add(source(m));
    rewrite.delete('');

    const snapshotId = newSnapshotId();
    const sequence = metadata['last-sequence-number'] + 1;
    const listKey = `${table}/metadata/snap-${snapshotId}-${sourceTag(summary.source)}-${randomUUID()}.avro`;
    await store.putBytes(
      listKey,
      await encodeManifestList(listed, { id: snapshotId, parentId: current['snapshot-id'], sequenceNumber: sequence }),
    );
    const snapshot: Snapshot = {
      'snapshot-id': snapshotId,
      'parent-snapshot-id': current['snapshot-id'],
      'sequence-number': sequence,
      'timestamp-ms': Math.max(clock.now(), metadata['last-updated-ms']),
      'manifest-list': store.location(listKey),
      summary: {
        operation: 'overwrite',
        'total-records': String(listed.reduce((n, m) => n + m.added_rows_count + m.existing_rows_count, 0)),
        'total-data-files': String(listed.reduce((n, m) => n + m.added_files_count + m.existing_files_count, 0)),
        [SUMMARY.source]: summary.source,
        [SUMMARY.runId]: summary.runId,
        [SUMMARY.commitId]: `${summary.runId}.repair`,
        [SUMMARY.repairedFrom]: String(current['snapshot-id']),
      },
      'schema-id': metadata['current-schema-id'],
    };
    const change = snapshotChange(metadata, snapshot, null);
    change.updates.push({ action: 'remove-snapshots', 'snapshot-ids': broken });
    const outcome = await catalog.commit({ table, base: loaded, change, nowMs: clock.now() });
    const after = outcome.kind === 'committed' ? null : await catalog.load(table);
    if (outcome.kind === 'committed' || after?.metadata?.snapshots.some((x) => x['snapshot-id'] === snapshotId)) {
      return {
        metadataLocation: outcome.kind === 'committed' ? outcome.metadataLocation : after!.metadataLocation,
        snapshotId,
        keptFrom: kept?.['snapshot-id'] ?? null,
        removed: broken,
        rewrite: [...rewrite].sort(),
      };
    }
    if (outcome.kind === 'conflict') await store.remove(listKey);
    if (attempt >= COMMIT_ATTEMPTS) throw lostRaces(catalog, table, 'repairing', attempt);
    await clock.sleep(backoffMs(attempt));
  }
}

/** `read()`'s value, or null when a file it needs is missing (any other failure is thrown). */
async function unlessMissing<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof MissingFileError) return null;
    throw error;
  }
}

/** `read()`'s value, or null when it fails. */
async function tryRead<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch {
    return null;
  }
}

/**
 * Removes `source`'s files under `table` that no kept snapshot references: what a killed run wrote
 * and never committed (or a clean-up it did not finish). Only this source's files are looked at, so
 * another runner's commit in progress is never touched. Returns the files removed.
 */
export async function removeUnreferenced(catalog: IcebergCatalog, table: string, source: string): Promise<number> {
  const tag = sourceTag(source);
  const { version, metadata, store } = await catalog.load(table);
  const referenced = new Set<string>();
  const manifests = new Map<string, ManifestFile>();
  for (const snapshot of metadata?.snapshots ?? []) {
    if (snapshotSources(snapshot).includes(source)) referenced.add(keyOf(store, table, snapshot['manifest-list']));
    let list: ManifestFile[];
    try {
      list = await readManifestList(store, table, snapshot);
    } catch {
      continue;
    }
    for (const m of list) if (manifestSource(m) === source) manifests.set(m.manifest_path, m);
  }
  for (const m of manifests.values()) {
    referenced.add(keyOf(store, table, m.manifest_path));
    for (const e of await readManifest(store, table, m)) referenced.add(keyOf(store, table, e.data_file.file_path));
  }
  const metadataKeys = await store.list(`${table}/metadata/`);
  // Metadata files that fell out of the log (a writer killed before it deleted the one it dropped).
  const logged = (metadata?.['metadata-log'] ?? []).map((e) => metadataVersion(e['metadata-file'])).filter((v): v is number => v !== null);
  const oldest = Math.min(...logged, version);
  // A catalog writes and prunes its own metadata files (named otherwise): only a directory table's are looked at.
  const dropped = (catalog.kind === 'rest' ? [] : metadataKeys).filter((k) => {
    const v = metadataVersion(k);
    return v !== null && v < oldest;
  });
  const candidates = [
    ...(await store.list(`${table}/data/${dataDir(source)}/`)),
    ...metadataKeys.filter((k) => k.includes(`${tag}-`)),
    ...dropped,
    // A metadata file a killed writer was creating (on disk: written beside its name, then linked).
    ...metadataKeys.filter((k) => {
      const pid = tmpWriterPid(k);
      return pid !== null && !systemProbe.isAlive(pid);
    }),
  ];
  let removed = 0;
  for (const key of candidates) {
    if (referenced.has(key)) continue;
    await store.remove(key);
    removed += 1;
  }
  return removed;
}

/** The folder under `data/` holding a source's files (hive style, so listings read well). */
export function dataDir(source: string): string {
  return `source=${source}`;
}
