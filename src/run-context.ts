/**
 * The wiring of a run that writes the warehouse (`sync`, `push`, `push-otel`), in one place: the
 * directories, the lock files, the lake's start check, the leases of a bucket, the working copy (with
 * what a killed run left) and the fence on the published warehouse. Callers get what they write to and
 * one `release`; what they do in between is theirs.
 */
import { failpoint } from './failpoints.js';
import { existsSync, mkdirSync, statSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Clock } from './api/resilience.js';
import type { SyncConfig } from './config.js';
import { ConfigError, CostsyncError } from './errors.js';
import type { Logger } from './log.js';
import { takeLeases, type Leases } from './outputs/leases.js';
import { publishDestination, remoteWarehouse, type PublishDestination } from './outputs/publish.js';
import { isS3Url } from './outputs/s3-url.js';
import { refuseAdoptedTables } from './outputs/iceberg-catalog.js';
import { ICEBERG_TABLES } from './storage/tables.js';
import { catalogLakeTarget, outputTarget, type OutputTarget } from './outputs/target.js';
import { acquireLock, dbLockPath, type Lock } from './state/lock.js';
import { removeStateLeftovers } from './state/store.js';
import { checkLakeFormat } from './outputs/iceberg.js';
import type { LakeFormat, Warehouse } from './storage/duckdb.js';
import { openWorkingCopy } from './storage/working-copy.js';

export type RunSettings = Pick<SyncConfig, 'db' | 'stateDir' | 'lease' | 'leaseTtlMs' | 'format' | 'out' | 'catalog' | 'shard'>;

export interface RunRequest {
  config: RunSettings;
  runId: string;
  /** Who holds the locks, for the message another run gets. */
  command: string;
  clock: Clock;
  logger: Logger;
  /** The sources whose lake partitions this run writes (their leases, with the lake in a bucket). */
  sources: readonly string[];
  /**
   * `sync`: the state directory's lock and the database's, and the lake when `--format parquet`.
   * `ledger` (the push commands): the database's lock only (the state directory's when --db is in a bucket), no lake.
   */
  kind: 'sync' | 'ledger';
  /** Where a bucket's endpoint, region and keys come from (the command's environment); process.env by default. */
  env?: NodeJS.ProcessEnv;
}

export interface OpenRun {
  warehouse: Warehouse;
  db: PublishDestination;
  lake: OutputTarget | null;
  leases: Leases | null;
  /** Lets go of the leases and the locks (the warehouse is closed by its owner, who may replace it first). */
  release(): Promise<void>;
}

/** The lock files of a run: one in the state directory, one beside the database (none there when it is in a bucket). */
export function lockPaths(config: Pick<SyncConfig, 'stateDir' | 'db'>, kind: RunRequest['kind'] = 'sync'): string[] {
  const state = resolve(config.stateDir, 'costsync.lock');
  if (isS3Url(config.db)) return [state];
  return kind === 'sync' ? [state, dbLockPath(config.db)] : [dbLockPath(config.db)];
}

/**
 * Where the per-source lake leases go (null: none): `--out` when this run writes a lake of its own.
 * With a catalog the lake is the catalog's and its commits are atomic, but they do not keep two runners
 * off one source; a shard (which a rollout may run beside an old layout's shard owning the same source)
 * takes them under `--out` when that is a bucket, the one place every shard shares. Pure.
 */
export function lakeLeasePlace(config: Pick<RunSettings, 'out' | 'catalog' | 'shard'>, writesLake: boolean): string | null {
  if (!writesLake) return null;
  if (config.catalog === null) return config.out;
  return config.shard !== undefined && isS3Url(config.out) ? config.out : null;
}

/**
 * Refuses a local --db whose directory does not exist (exit 2): a typo there would otherwise create the
 * directories and start a full first sync. The state directory is still created as needed.
 */
export function requireDbDirectory(db: string): void {
  if (isS3Url(db)) return;
  const dir = dirname(resolve(db));
  let found: Stats | undefined;
  try {
    found = statSync(dir);
  } catch {
    // Missing, or a path through a file (ENOTDIR): either way there is no directory for the warehouse.
  }
  if (found === undefined || !found.isDirectory()) {
    throw new ConfigError(
      `--db ${db}: its directory ${dir} ${found === undefined ? 'does not exist' : 'is not a directory'}.`,
      `Create the directory first (mkdir -p ${dir}), or fix the path in --db (or COSTSYNC_DB, or "db" in the config file).`,
    );
  }
  if (existsSync(db) && statSync(db).isDirectory()) {
    throw new ConfigError(
      `--db ${db} is a directory; it names the warehouse file.`,
      `Name a file in it, such as --db ${join(db, 'costs.duckdb')} (or fix COSTSYNC_DB, or "db" in the config file).`,
    );
  }
}

/** Refuses a --state-dir that is a file, before anything is written: it names a directory costsync keeps. */
export function requireStateDirectory(stateDir: string): void {
  if (existsSync(stateDir) && !statSync(stateDir).isDirectory()) {
    throw new ConfigError(
      `--state-dir ${stateDir} is a file, not a directory.`,
      'Name a directory (costsync creates it if it is missing), or move the file aside; or fix COSTSYNC_STATE_DIR, or "state-dir" in the config file.',
    );
  }
}

/** Opens a run: everything before its first write, undone in reverse when any step fails. */
export async function openRun(request: RunRequest): Promise<OpenRun> {
  const { config, runId, clock, logger } = request;
  const env = request.env ?? process.env;
  // The database's directory is the user's to make (a typo is refused, not created); the state directory is costsync's.
  requireDbDirectory(config.db);
  requireStateDirectory(config.stateDir);
  try {
    if (request.kind === 'sync' || isS3Url(config.db)) mkdirSync(config.stateDir, { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw new CostsyncError('CS_ERR_STATE_IO', `Cannot create the state directory ${config.stateDir}: ${(cause as Error).message}`, {
      hint: 'Check that --state-dir points at a writable place.',
      cause,
    });
  }
  const locks: Lock[] = [];
  let leases: Leases | null = null;
  const release = async () => {
    await leases?.release().catch((e: unknown) => logger.warn(`could not remove the lease: ${(e as Error).message}`));
    for (const lock of [...locks].reverse()) lock.release();
  };
  try {
    for (const path of lockPaths(config, request.kind)) locks.push(acquireLock(path, request.command, new Date(clock.now())));
    const scratch = resolve(config.stateDir, 'lake-scratch');
    // With a catalog, each table's files go where the catalog says (with the credentials it vends): the lake
    // is named by the catalog, --out only places new tables, and the catalog keeps runners' commits apart.
    const lake =
      request.kind !== 'sync' || config.format === 'duckdb'
        ? null
        : config.catalog !== null
          ? catalogLakeTarget(
              `${config.catalog.url} (${config.catalog.warehouse === undefined ? '' : `warehouse ${config.catalog.warehouse}, `}namespace ${config.catalog.namespace.join('.')})`,
              scratch,
            )
          : outputTarget(config.out, scratch, env);
    if (request.kind === 'sync') removeStateLeftovers(config.stateDir);
    // Refused now, not half way through a backfill: a lake that cannot be written (no credentials,
    // no bucket, access denied), a server that ignores conditional writes, another runner's lease.
    await lake?.check(runId);
    const lakeFormat: LakeFormat = config.format === 'iceberg' ? 'iceberg' : 'parquet';
    if (lake !== null && config.catalog === null) await checkLakeFormat(lake, lakeFormat);
    if (lake !== null && config.catalog === null && config.format === 'iceberg')
      await refuseAdoptedTables(lake, Object.keys(ICEBERG_TABLES));
    if (lake !== null && config.catalog !== null && config.out !== '' && !isS3Url(config.out))
      await checkLakeFormat(outputTarget(config.out, scratch, env), 'iceberg');
    leases = await takeLeases({ ...config, out: lakeLeasePlace(config, lake !== null) }, request.sources, runId, clock, logger, env);
    const db = publishDestination(config.db, undefined, env);
    const remote = remoteWarehouse(db);
    if (remote) remote.notice = (m) => logger.warn(m);
    const warehouse = await openWorkingCopy(config.db, config.stateDir, {
      lake: lake === null ? undefined : lakeFormat,
      remote,
      notice: (m) => logger.warn(m),
    });
    failpoint('open');
    // Every publish is conditional on the warehouse this run started from.
    if (leases !== null && db.kind === 'bucket') db.fence = { etag: remote?.startEtag ?? null };
    return { warehouse, db, lake, leases, release };
  } catch (error) {
    await release();
    throw error;
  }
}
