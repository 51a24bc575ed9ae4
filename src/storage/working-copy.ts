/**
 * The working copy. DuckDB lets one process write a file or many read it, never both, so costsync
 * writes only a private working copy under --state-dir and publishes it over --db (`outputs/publish`).
 * costsync never holds --db open, so readers and the sync never wait for each other.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { copyFileDurably, namesIn, writeFileAtomic } from '../durable-file.js';
import { copyFile, rename, rm } from 'node:fs/promises';
import { shortHash } from '../fingerprint.js';
import { basename, dirname, join, resolve } from 'node:path';
import { CostsyncError, ExitCode } from '../errors.js';
import { openWarehouse, type OpenOptions, type Warehouse } from './duckdb.js';

/** Where the working copy of `db` lives: in the state directory, named by the database's path. */
export function workingCopyPath(stateDir: string, db: string): string {
  // A bucket URL names the copy as it is; a path, by where it resolves.
  const full = /^[a-z0-9]+:\/\//i.test(db) ? db : resolve(db);
  const tag = shortHash(full, 8);
  return resolve(stateDir, 'warehouse', `${basename(full).replace(/\.duckdb$/i, '')}-${tag}.duckdb`);
}

/** The temporary name a publish writes before renaming over `db` (hidden from `*.duckdb` globs). */
export function publishTemp(db: string): string {
  return join(dirname(resolve(db)), `.${basename(db)}.publish-${process.pid}.tmp`);
}

/** Removes what a killed run left: temp copies beside `db` (a local one) and beside the working copy, DuckDB's spill directory. */
export function removePublishLeftovers(db: string | null, work: string): void {
  const places: [string, string][] = [
    [dirname(work), `${basename(work)}.adopt`],
    [dirname(work), `${basename(work)}.snapshot`],
  ];
  if (db !== null) places.push([dirname(resolve(db)), `.${basename(db)}.publish-`]);
  for (const [dir, prefix] of places) {
    for (const name of namesIn(dir)) if (name.startsWith(prefix)) rmSync(join(dir, name), { force: true });
  }
  // DuckDB's spill directory of the working copy, left behind when a run is killed.
  rmSync(`${work}.tmp`, { recursive: true, force: true });
}

/** A published warehouse somewhere else (a bucket). */
export interface RemoteWarehouse {
  url: string;
  /** The published warehouse's ETag, or null when there is none yet. */
  etag(): Promise<string | null>;
  /** Downloads the published warehouse to `file` (whole, or not at all); returns its ETag. */
  fetch(file: string): Promise<string>;
  /** Told when the working copy is replaced by a newer published warehouse. */
  notice?(message: string): void;
  /** Set by `openWorkingCopy`: the ETag of the published warehouse the run starts from (null: none yet). */
  startEtag?: string | null;
}

/** The ETag of the published warehouse the working copy last matched (downloaded or uploaded). */
function etagFile(work: string): string {
  return `${work}.published-etag`;
}

export function publishedEtag(work: string): string | null {
  try {
    return readFileSync(etagFile(work), 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/**
 * A published file's identity on disk, as an ETag: device, inode, size and modification time, which a
 * publish (a rename over it) or any rewrite changes. Null when there is no file. Reads the file system only.
 */
export function fileEtag(path: string): string | null {
  try {
    const s = statSync(path);
    return `file:${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return null;
  }
}

/**
 * Whether `db` was published by another run (another --state-dir) since the working copy `work`
 * last matched it. Without a record (a working copy of an earlier costsync), a file newer than the
 * working copy says so: a run always leaves its working copy after its publish.
 */
export function publishedSinceWorkingCopy(db: string, work: string): boolean {
  const current = fileEtag(db);
  if (current === null) return false;
  const recorded = publishedEtag(work);
  if (recorded !== null) return recorded !== current;
  return statSync(db).mtimeMs > statSync(work).mtimeMs;
}

/** Records that the working copy matches the published warehouse with this ETag (after a publish or a download). */
export async function recordPublishedEtag(work: string, etag: string): Promise<void> {
  await writeFileAtomic(etagFile(work), `${etag}\n`, { mode: 0o600 });
}

/**
 * Brings the working copy of a warehouse in a bucket up to the published one: downloaded when there is
 * no working copy (a clean container), or when another runner published since this working copy last
 * matched it (the published warehouse wins: it holds that run's data and the state that matches it).
 * Says the ETag the run starts from (null: nothing published yet) and whether it was downloaded.
 */
async function adoptRemote(remote: RemoteWarehouse, work: string): Promise<{ etag: string | null; downloaded: boolean }> {
  const current = await remote.etag();
  if (current === null) return { etag: null, downloaded: false };
  const had = existsSync(work);
  if (had && publishedEtag(work) === current) return { etag: current, downloaded: false };
  const tmp = `${work}.adopt`;
  const etag = await remote.fetch(tmp);
  rmSync(`${work}.wal`, { force: true });
  await rename(tmp, work);
  await recordPublishedEtag(work, etag);
  if (had)
    remote.notice?.(
      `${remote.url} changed since this working copy last matched it (another runner published it, or it was changed by hand): the working copy was replaced by it; dates within the recheck horizon that differ from the API are fetched again (costsync verify --api finds older ones)`,
    );
  return { etag, downloaded: true };
}

/**
 * Opens the working copy of `db`, creating it on first use. When there is none but `db` exists (a
 * warehouse written by an earlier costsync, which wrote --db directly, or one published to a bucket),
 * it is copied to become the working copy, so nothing is lost and nothing is synced again.
 */
export async function openWorkingCopy(
  db: string,
  stateDir: string,
  options: Omit<OpenOptions, 'workingCopyOf'> & { remote?: RemoteWarehouse; notice?: (message: string) => void } = {},
): Promise<Warehouse> {
  const work = workingCopyPath(stateDir, db);
  try {
    mkdirSync(dirname(work), { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw new CostsyncError('CS_ERR_STATE_IO', `Cannot create ${dirname(work)} for the working copy: ${(cause as Error).message}`, {
      hint: 'Check that --state-dir is writable.',
      cause,
    });
  }
  const { remote, notice, ...open } = options;
  removePublishLeftovers(remote ? null : db, work);
  let adopted = false;
  if (!existsSync(work)) {
    // A WAL without its database would be replayed into a new, empty one.
    rmSync(`${work}.wal`, { force: true });
    if (remote) {
      // Below, for a bucket, whether or not there is a working copy.
    } else if (existsSync(db)) {
      await adopt(db, work);
      adopted = true;
    }
  } else if (!remote && publishedSinceWorkingCopy(db, work)) {
    // The published file wins, as a bucket's does: it holds the other run's data and the state that
    // matches it (the warehouse's carried state wins over this directory's state file).
    rmSync(`${work}.wal`, { force: true });
    await adopt(db, work);
    adopted = true;
    notice?.(
      `${db} changed since this working copy last matched it (a run with another --state-dir published it, or it was changed by hand): the working copy was replaced by it; dates within the recheck horizon that differ from the API are fetched again (costsync verify --api finds older ones)`,
    );
  }
  if (adopted && !remote) await recordPublishedEtag(work, fileEtag(db)!);
  if (remote) {
    const { etag, downloaded } = await adoptRemote(remote, work);
    adopted = downloaded;
    remote.startEtag = etag;
  }
  try {
    return await openWarehouse(work, { ...open, workingCopyOf: remote ? remote.url : resolve(db) });
  } catch (error) {
    if (adopted && error instanceof CostsyncError && error.code === 'CS_ERR_DB_OPEN') {
      rmSync(work, { force: true });
      rmSync(`${work}.wal`, { force: true });
      const reason = String((error.cause as Error | undefined)?.message ?? error.message).split('\n')[0];
      throw new CostsyncError('CS_ERR_DB_OPEN', `Cannot open the DuckDB file ${db}: ${reason}`, {
        exitCode: ExitCode.USAGE,
        hint: 'Check that --db names a DuckDB database written by costsync (or a new file); it was left as it is.',
        cause: error,
      });
    }
    throw error;
  }
}

async function adopt(db: string, work: string): Promise<void> {
  const tmp = `${work}.adopt`;
  try {
    if (existsSync(`${db}.wal`)) await copyFile(`${db}.wal`, `${work}.wal`);
    await copyFileDurably(db, work, tmp);
  } catch (cause) {
    await rm(tmp, { force: true });
    throw new CostsyncError('CS_ERR_STATE_IO', `Cannot copy ${db} into the working copy ${work}: ${(cause as Error).message}`, {
      hint: 'Check that --state-dir is writable and has room for a copy of the database.',
      cause,
    });
  }
}

/**
 * After a compacting publish, the working copy takes the compact file's place (copied aside, fsynced,
 * renamed), so free blocks do not pile up in it either. Call with the working copy closed and nothing
 * written since that publish: then both files hold the same data.
 */
export async function adoptCompacted(db: string, work: string): Promise<void> {
  await copyFileDurably(db, work, `${work}.adopt`, () => rm(`${work}.wal`, { force: true }));
}
