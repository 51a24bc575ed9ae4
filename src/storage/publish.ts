/**
 * The working copy and the published file. DuckDB lets one process write a file or many read it,
 * never both, so costsync writes only a private working copy under --state-dir and publishes it
 * over --db: copied aside, fsynced, renamed over --db, the directory fsynced. A reader holding the
 * old file keeps its consistent snapshot; every new open sees the new one; costsync never holds
 * --db open, so readers and the sync never wait for each other.
 */
import { constants, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { fsyncPath, namesIn } from '../durable-file.js';
import { copyFile, rename, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { basename, dirname, join, resolve } from 'node:path';
import { CostsyncError, ExitCode } from '../errors.js';
import type { Logger } from '../log.js';
import { openWarehouse, type OpenOptions, type Warehouse } from './duckdb.js';

/** Past this share of free blocks the working copy is published compacted (DuckDB rewrites it). */
export const COMPACT_FREE_RATIO = 0.25;

/** Where the working copy of `db` lives: in the state directory, named by the database's path. */
export function workingCopyPath(stateDir: string, db: string): string {
  const full = resolve(db);
  const tag = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return resolve(stateDir, 'warehouse', `${basename(full).replace(/\.duckdb$/i, '')}-${tag}.duckdb`);
}

/** The temporary name a publish writes before renaming over `db` (hidden from `*.duckdb` globs). */
function publishTemp(db: string): string {
  return join(dirname(resolve(db)), `.${basename(db)}.publish-${process.pid}.tmp`);
}

/** Removes what a killed run left: temp copies beside `db` and beside the working copy, DuckDB's spill directory. */
export function removePublishLeftovers(db: string, work: string): void {
  for (const [dir, prefix] of [[dirname(resolve(db)), `.${basename(db)}.publish-`], [dirname(work), `${basename(work)}.adopt`]] as const) {
    for (const name of namesIn(dir)) if (name.startsWith(prefix)) rmSync(join(dir, name), { force: true });
  }
  // DuckDB's spill directory of the working copy, left behind when a run is killed.
  rmSync(`${work}.tmp`, { recursive: true, force: true });
}

/**
 * Opens the working copy of `db`, creating it on first use. When there is none but `db` exists (a
 * warehouse written by an earlier costsync, which wrote --db directly), `db` and its WAL are copied
 * to become the working copy, so nothing is lost and nothing is synced again.
 */
export async function openWorkingCopy(db: string, stateDir: string, options: Omit<OpenOptions, 'workingCopyOf'> = {}): Promise<Warehouse> {
  const work = workingCopyPath(stateDir, db);
  try {
    mkdirSync(dirname(work), { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw new CostsyncError('CS_ERR_STATE_IO', `Cannot create ${dirname(work)} for the working copy: ${(cause as Error).message}`, {
      hint: 'Check that --state-dir is writable.', cause,
    });
  }
  removePublishLeftovers(db, work);
  let adopted = false;
  if (!existsSync(work)) {
    // A WAL without its database would be replayed into a new, empty one.
    rmSync(`${work}.wal`, { force: true });
    if (existsSync(db)) {
      await adopt(db, work);
      adopted = true;
    }
  }
  try {
    return await openWarehouse(work, { ...options, workingCopyOf: resolve(db) });
  } catch (error) {
    if (adopted && error instanceof CostsyncError && error.code === 'CS_ERR_DB_OPEN') {
      rmSync(work, { force: true });
      rmSync(`${work}.wal`, { force: true });
      const reason = String((error.cause as Error | undefined)?.message ?? error.message).split('\n')[0];
      throw new CostsyncError('CS_ERR_DB_OPEN', `Cannot open the DuckDB file ${db}: ${reason}`, {
        exitCode: ExitCode.USAGE, hint: 'Check that --db names a DuckDB database written by costsync (or a new file); it was left as it is.', cause: error,
      });
    }
    throw error;
  }
}

async function adopt(db: string, work: string): Promise<void> {
  const tmp = `${work}.adopt`;
  try {
    if (existsSync(`${db}.wal`)) await copyFile(`${db}.wal`, `${work}.wal`);
    await copyFile(db, tmp, constants.COPYFILE_FICLONE);
    await fsyncPath(tmp);
    await rename(tmp, work);
    await fsyncPath(dirname(work));
  } catch (cause) {
    await rm(tmp, { force: true });
    throw new CostsyncError('CS_ERR_STATE_IO', `Cannot copy ${db} into the working copy ${work}: ${(cause as Error).message}`, {
      hint: 'Check that --state-dir is writable and has room for a copy of the database.', cause,
    });
  }
}

/**
 * After a compacting publish, the working copy takes the compact file's place (copied aside, fsynced,
 * renamed), so free blocks do not pile up in it either. Call with the working copy closed and nothing
 * written since that publish: then both files hold the same data.
 */
export async function adoptCompacted(db: string, work: string): Promise<void> {
  const tmp = `${work}.adopt`;
  await copyFile(db, tmp, constants.COPYFILE_FICLONE);
  await fsyncPath(tmp);
  await rm(`${work}.wal`, { force: true });
  await rename(tmp, work);
  await fsyncPath(dirname(work));
}

/** Logs a publish: the file, its bytes and seconds (and the method, in JSON). */
export function logPublish(logger: Pick<Logger, 'info'>, result: PublishResult | null): void {
  if (result === null) return;
  logger.info(`published ${result.path} (${result.bytes} bytes, ${result.seconds.toFixed(2)} s)`, {
    file: result.path, bytes: result.bytes, seconds: result.seconds, method: result.method,
  });
}

export interface PublishResult {
  path: string;
  bytes: number;
  seconds: number;
  /** `copy` (a reflink where the file system has them, else a plain copy) or `compact` (DuckDB rewrote it). */
  method: 'copy' | 'compact';
}

/**
 * Publishes the working copy over `db` when a committed change is pending (or `force`), recording
 * the publish in the run's row of `sync_runs` (in the published file too). Holds the write queue,
 * so the copy holds committed data only: never half a window, never a staging table.
 */
export async function publish(
  warehouse: Warehouse, db: string, run: { runId: string | null; now: () => number },
  options: { force?: boolean; method?: 'auto' | PublishResult['method'] } = {},
): Promise<PublishResult | null> {
  return warehouse.exclusive(async () => {
    const pending = await warehouse.query('outbox/pending', ['publish']);
    if (pending.length === 0 && options.force !== true) return null;
    const started = run.now();
    const target = resolve(db);
    const tmp = publishTemp(target);
    await warehouse.sql('CHECKPOINT');
    const [size] = await warehouse.query<{ total_blocks: number; free_blocks: number }>('publish/database_size');
    const method = options.method ?? 'auto';
    const compact = method === 'compact'
      || (method === 'auto' && size !== undefined && size.total_blocks > 0 && size.free_blocks / size.total_blocks > COMPACT_FREE_RATIO);
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
      const bytes = statSync(tmp).size;
      const seconds = (run.now() - started) / 1000;
      const at = new Date(run.now()).toISOString();
      // The same bookkeeping in both files, so the published one is complete and the working copy
      // does not mark itself unpublished by recording its own publish.
      for (const catalog of [alias, self]) {
        await warehouse.sql(`USE ${catalog}`);
        if (run.runId !== null) await warehouse.run('publish/record', [run.runId, at, bytes, seconds]);
        await warehouse.run('outbox/done', ['publish', '']);
      }
      await warehouse.sql(`DETACH ${alias}`);
      await fsyncPath(tmp);
      // A WAL left beside --db by an earlier costsync would be replayed into the new file.
      await rm(`${target}.wal`, { force: true });
      await rename(tmp, target);
      await fsyncPath(dirname(target));
      return { path: target, bytes: statSync(target).size, seconds: (run.now() - started) / 1000, method: compact ? 'compact' : 'copy' };
    } catch (cause) {
      await warehouse.sql(`USE ${self}`).catch(() => undefined);
      await warehouse.sql(`DETACH DATABASE IF EXISTS ${alias}`).catch(() => undefined);
      await rm(tmp, { force: true });
      await rm(`${tmp}.wal`, { force: true });
      throw new CostsyncError('CS_ERR_PUBLISH', `Cannot publish the warehouse to ${target}: ${(cause as Error).message}`, {
        hint: 'Check that the directory of --db is writable and has room for a copy of the database; the data is safe in the working copy, and the next run publishes it.',
        cause,
      });
    }
  });
}

async function currentDatabase(warehouse: Warehouse): Promise<string> {
  const [row] = await warehouse.sql<{ db: string }>('SELECT current_database() AS db');
  return `"${row!.db.replaceAll('"', '""')}"`;
}

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
