/**
 * The published warehouse: the working copy, as readers see it, at --db. On disk: copied aside,
 * fsynced, renamed over --db, the directory fsynced; a reader holding the old file keeps its
 * consistent snapshot and every new open sees the new one. In a bucket (`--db s3://…`): a snapshot is
 * taken in the state directory while the write queue is held (so it holds committed data only), then
 * uploaded outside the queue as one object (multipart, parts in parallel), so window commits never
 * wait for the network and readers get the old warehouse or the new one. The outbox says a publish
 * is due (`publish`, '') or a snapshot is taken but not yet in place (`publish`, `upload`); either
 * makes the next publish (this run's or the next run's) happen.
 */
import { shortHash } from '../fingerprint.js';
import { constants, existsSync, mkdirSync, rmSync, statSync, truncateSync } from 'node:fs';
import { copyFile, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fsyncPath, namesIn, renameDurably } from '../durable-file.js';
import { CostsyncError, ExitCode, FencedError, isFenced } from '../errors.js';
import type { Logger } from '../log.js';
import { sqlString, type Warehouse } from '../storage/duckdb.js';
import { done, donePublishing, mark, pending } from '../storage/outbox.js';
import { fileEtag, publishTemp, recordPublishedEtag, type RemoteWarehouse } from '../storage/working-copy.js';
import type { Bucket } from './s3.js';
import { bareEtag } from './s3-url.js';
import { isS3Url, loadBucket, parseS3Url, s3Url } from './s3-url.js';
import { failpoint } from '../failpoints.js';

/** Snapshots taken by this process, so no two share a name. */
let snapshots = 0;

/** Rounds of recording the published copy's size with a block to spare before giving up (one suffices: see takeSnapshot). */
const PUBLISH_SIZE_ROUNDS = 4;

/** The published copy outgrew every size recorded in it. */
function sizeUnsettled(recorded: number, size: number): CostsyncError {
  return new CostsyncError(
    'CS_ERR_PUBLISH',
    `The published copy grew past the size recorded in it (${recorded} recorded, ${size} on disk).`,
    {
      hint: 'Run again: the data is safe in the working copy, and the next run publishes it.',
    },
  );
}

/** Past this share of free blocks the working copy is published compacted (DuckDB rewrites it). */
export const COMPACT_FREE_RATIO = 0.25;
/**
 * And only when the free blocks hold at least this much: a small warehouse frees a few blocks a run (its
 * run records rewritten), and rewriting it whole each time costs more than the copy of those bytes.
 */
export const COMPACT_MIN_FREE_BYTES = 4 * 1024 * 1024;

/** The working copy's blocks, as `publish/database_size` reads them. */
export interface DatabaseSize {
  total_blocks: number;
  free_blocks: number;
  block_size: number;
}

/** Whether a publish should rewrite the working copy compactly, from its blocks in use and free. Pure. */
export function shouldCompact(size: DatabaseSize | undefined): boolean {
  if (size === undefined || size.total_blocks <= 0) return false;
  return size.free_blocks / size.total_blocks > COMPACT_FREE_RATIO && size.free_blocks * size.block_size >= COMPACT_MIN_FREE_BYTES;
}

/** Where the warehouse is published: a file, or an object in a bucket. */
export type PublishDestination =
  | { kind: 'file'; path: string }
  | {
      kind: 'bucket';
      bucket: () => Promise<Bucket>;
      key: string;
      url: string;
      /**
       * With a lease: the ETag of the published warehouse this run started from (null: none yet). Every
       * upload is conditional on it (`If-Match`, or `If-None-Match: *`), and then moves it on, so a run
       * that lost its lease cannot overwrite a newer warehouse.
       */
      fence?: { etag: string | null };
    };

export function publishDestination(db: string, bucket?: Bucket, env: NodeJS.ProcessEnv = process.env): PublishDestination {
  if (!isS3Url(db)) return { kind: 'file', path: resolve(db) };
  const { bucket: name, key } = parseS3Url(db, '--db');
  let opened: Promise<Bucket> | undefined = bucket && Promise.resolve(bucket);
  return { kind: 'bucket', bucket: () => (opened ??= loadBucket(name, env)), key, url: s3Url(name, key) };
}

/** The published warehouse in a bucket, for `openWorkingCopy` to adopt when there is no working copy. */
export function remoteWarehouse(destination: PublishDestination): RemoteWarehouse | undefined {
  if (destination.kind !== 'bucket') return undefined;
  return {
    url: destination.url,
    etag: async () => (await (await destination.bucket()).head(destination.key))?.etag ?? null,
    fetch: async (file) => (await destination.bucket()).download(destination.key, file),
  };
}

/** Logs a publish: where, its bytes and seconds (and the method, in JSON). */
export function logPublish(logger: Pick<Logger, 'info'>, result: PublishResult | null): void {
  if (result === null) return;
  logger.info(`published ${result.path} (${result.bytes} bytes, ${result.seconds.toFixed(2)} s)`, {
    file: result.path,
    bytes: result.bytes,
    seconds: result.seconds,
    method: result.method,
  });
}

export interface PublishResult {
  /** The file, or the object's `s3://` URL. */
  path: string;
  bytes: number;
  seconds: number;
  /** `copy` (a reflink where the file system has them, else a plain copy) or `compact` (DuckDB rewrote it). */
  method: 'copy' | 'compact';
  /** Seconds the write queue was held (the snapshot): what window commits waited. */
  heldSeconds: number;
}

/**
 * Publishes the working copy when a committed change is pending (or `force`), recording the publish
 * in the run's row of `sync_runs` (in the published warehouse too).
 */
export async function publish(
  warehouse: Warehouse,
  destination: PublishDestination | string,
  run: { runId: string | null; now: () => number },
  options: { force?: boolean; method?: 'auto' | PublishResult['method'] } = {},
): Promise<PublishResult | null> {
  const to = typeof destination === 'string' ? publishDestination(destination) : destination;
  const where = to.kind === 'file' ? to.path : to.url;
  const started = run.now();
  const tmp = to.kind === 'file' ? publishTemp(to.path) : `${warehouse.path}.snapshot-${process.pid}-${++snapshots}`;
  try {
    const snapshot = await warehouse.exclusive(async () => {
      const due = await pending(warehouse, 'publish', 'upload');
      if (due.length === 0 && options.force !== true) return null;
      const bytesAndMethod = await takeSnapshot(warehouse, tmp, run, options.method ?? 'auto', to.kind === 'file');
      const heldSeconds = (run.now() - started) / 1000;
      failpoint('publish');
      if (to.kind === 'file') {
        // A WAL left beside --db by an earlier costsync would be replayed into the new file.
        await rm(`${to.path}.wal`, { force: true });
        await renameDurably(tmp, to.path);
        // What the next run checks that no other run published over it since.
        await recordPublishedEtag(warehouse.path, fileEtag(to.path)!);
      }
      return { ...bytesAndMethod, heldSeconds };
    });
    if (snapshot === null) return null;
    if (to.kind === 'bucket') {
      // Outside the write queue: commits go on while the snapshot uploads.
      const bucket = await to.bucket();
      if (to.fence !== undefined) {
        // Servers that ignore the condition on CompleteMultipartUpload (Ceph's) still get this check.
        const now = (await bucket.head(to.key))?.etag ?? null;
        if (now !== to.fence.etag) throw changedSince(to.url);
      }
      const condition = to.fence === undefined ? {} : to.fence.etag === null ? { ifNoneMatch: '*' } : { ifMatch: bareEtag(to.fence.etag) };
      const etag = await bucket.putFile(to.key, tmp, condition);
      if (to.fence !== undefined) to.fence.etag = etag;
      await recordPublishedEtag(warehouse.path, etag);
      await rm(tmp, { force: true });
      await warehouse.exclusive(async () => {
        // The same figures as the snapshot holds, so the working copy and the object agree.
        if (run.runId !== null) await warehouse.run('publish/record', [run.runId, snapshot.at, snapshot.bytes, snapshot.recordedSeconds]);
        await done(warehouse, { kind: 'upload' });
      });
    }
    return {
      path: where,
      bytes: snapshot.bytes,
      seconds: (run.now() - started) / 1000,
      method: snapshot.method,
      heldSeconds: snapshot.heldSeconds,
    };
  } catch (cause) {
    await rm(tmp, { force: true });
    await rm(`${tmp}.wal`, { force: true });
    if (cause instanceof CostsyncError && cause.code === 'CS_ERR_S3_PRECONDITION') throw changedSince(where, cause);
    if (isFenced(cause)) throw cause;
    if (cause instanceof CostsyncError && to.kind === 'bucket') {
      throw new CostsyncError(cause.code, `Cannot publish the warehouse to ${where}: ${cause.message}`, {
        hint: `${cause.hint ?? ''} The data is safe in the working copy, and the next run publishes it.`.trim(),
        exitCode: cause.exitCode,
        cause,
      });
    }
    throw new CostsyncError('CS_ERR_PUBLISH', `Cannot publish the warehouse to ${where}: ${(cause as Error).message}`, {
      hint: 'Check that the directory of --db is writable and has room for a copy of the database; the data is safe in the working copy, and the next run publishes it.',
      cause,
    });
  }
}

/** The published warehouse is not the one this run started from: another run published meanwhile. */
function changedSince(url: string, cause?: unknown): CostsyncError {
  return new FencedError(
    'CS_ERR_WAREHOUSE_CHANGED',
    `${url} was published by another run since this run started (this run's lease was taken over); this run did not overwrite it.`,
    {
      exitCode: ExitCode.LOCKED,
      cause,
      hint: 'What this run committed is in its working copy in --state-dir (lost only if the container is). Run again when the other run has finished: the next run starts from the newer warehouse.',
    },
  );
}

/**
 * Copies the working copy to `tmp` (a reflink or plain copy, or DuckDB's compact rewrite), with the
 * publish recorded in both files: the published one complete, and the working copy not marking itself
 * unpublished by recording its own publish. For a bucket the working copy instead remembers that an
 * upload is due, and records the publish once the object is in place.
 */
async function takeSnapshot(
  warehouse: Warehouse,
  tmp: string,
  run: { runId: string | null; now: () => number },
  method: 'auto' | PublishResult['method'],
  local: boolean,
): Promise<{ bytes: number; method: PublishResult['method']; at: string; recordedSeconds: number }> {
  const started = run.now();
  await warehouse.sql('CHECKPOINT');
  const [size] = await warehouse.query<DatabaseSize>('publish/database_size');
  const compact = method === 'compact' || (method === 'auto' && shouldCompact(size));
  const alias = '_costsync_publish';
  const self = await currentDatabase(warehouse);
  try {
    await rm(tmp, { force: true });
    if (compact) {
      await warehouse.sql(`ATTACH ${sqlString(tmp)} AS ${alias}`);
      await warehouse.sql(`COPY FROM DATABASE ${self} TO ${alias}`);
      await warehouse.sql(`CHECKPOINT ${alias}`);
    } else {
      // A reflink where the file system has them (instant, shares blocks), else a plain copy.
      await copyFile(warehouse.path, tmp, constants.COPYFILE_FICLONE);
      await warehouse.sql(`ATTACH ${sqlString(tmp)} AS ${alias}`);
    }
    const at = new Date(run.now()).toISOString();
    const seconds = (run.now() - started) / 1000;
    // Recording the size changes the size (the updated row's blocks move, a block more or less, whatever
    // the value), so no size recorded is sure to be the file's. Instead the record names the file's size
    // with a block to spare, and the file is padded to it: DuckDB reads only the blocks its header names.
    const [layout] = await warehouse.sql<{ block_size: number }>(
      `SELECT block_size FROM pragma_database_size() WHERE database_name = ${sqlString(alias)}`,
    );
    const block = Number(layout?.block_size ?? 262_144);
    let bytes = statSync(tmp).size + block;
    await warehouse.sql(`USE ${alias}`);
    if (run.runId !== null) await warehouse.run('publish/record', [run.runId, at, bytes, seconds]);
    await donePublishing(warehouse);
    await warehouse.sql(`USE ${self}`);
    for (let round = 1; run.runId !== null; round++) {
      await warehouse.sql(`CHECKPOINT ${alias}`);
      const size = statSync(tmp).size;
      if (size <= bytes) break;
      if (round === PUBLISH_SIZE_ROUNDS) throw sizeUnsettled(bytes, size);
      bytes = size + block;
      await warehouse.sql(`USE ${alias}`);
      await warehouse.run('publish/record_bytes', [run.runId, bytes]);
      await warehouse.sql(`USE ${self}`);
    }
    if (local) {
      if (run.runId !== null) await warehouse.run('publish/record', [run.runId, at, bytes, seconds]);
      await donePublishing(warehouse);
    } else {
      await done(warehouse, { kind: 'publish' });
      await mark(warehouse, { kind: 'upload' });
    }
    await warehouse.sql(`DETACH ${alias}`);
    const size = statSync(tmp).size;
    if (run.runId === null) bytes = size;
    else if (size > bytes) throw sizeUnsettled(bytes, size);
    else if (size < bytes) truncateSync(tmp, bytes);
    // A local publish renames this over --db, so it must be on disk first; a bucket's snapshot is only
    // read back for the upload (after a crash the outbox says to take a new one).
    if (local) await fsyncPath(tmp);
    return { bytes, method: compact ? 'compact' : 'copy', at, recordedSeconds: seconds };
  } catch (error) {
    await warehouse.sql(`USE ${self}`).catch(() => undefined);
    await warehouse.sql(`DETACH DATABASE IF EXISTS ${alias}`).catch(() => undefined);
    throw error;
  }
}

async function currentDatabase(warehouse: Warehouse): Promise<string> {
  const [row] = await warehouse.sql<{ db: string }>('SELECT current_database() AS db');
  return `"${row!.db.replaceAll('"', '""')}"`;
}

/** Where downloaded warehouses are kept: COSTSYNC_CACHE_DIR, else the user's cache directory. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.COSTSYNC_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'costsync');
}

/**
 * A local file to read `db` from: `db` itself, or for `s3://…` a download kept in the cache under
 * the object's ETag, so an unchanged warehouse is downloaded once (older downloads of it are removed).
 */
export async function readableCopy(
  db: string,
  options: { cache?: string; bucket?: Bucket; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  const env = options.env ?? process.env;
  const to = publishDestination(db, options.bucket, env);
  if (to.kind === 'file') return to.path;
  const bucket = await to.bucket();
  const head = await bucket.head(to.key);
  if (head === null) {
    throw new CostsyncError('CS_ERR_DB_MISSING', `There is no warehouse at ${to.url}.`, {
      exitCode: ExitCode.USAGE,
      hint: 'Run costsync sync with the same --db first, or correct the URL.',
    });
  }
  const dir = options.cache ?? cacheDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stem = `${basename(to.key).replace(/\.duckdb$/i, '')}-${shortHash(to.url, 8)}-`;
  const file = join(dir, `${stem}${head.etag.replace(/[^A-Za-z0-9-]/g, '')}.duckdb`);
  if (!existsSync(file)) {
    await bucket.download(to.key, file);
    for (const name of namesIn(dir)) if (name.startsWith(stem) && join(dir, name) !== file) rmSync(join(dir, name), { force: true });
  }
  return file;
}
