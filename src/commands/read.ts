/** What the commands that only read the warehouse (`query`, `verify`, `report`) share: options, opening, errors. */
import { existsSync } from 'node:fs';
import type { Argv } from 'yargs';
import { CostsyncError, ExitCode, describeError, isCostsyncError } from '../errors.js';
import { readableCopy } from '../outputs/publish.js';
import { olderSchemaError, openReadOnly, type ReadOnlyWarehouse } from '../storage/duckdb.js';
import { loadConfig, type CommandIo } from './common.js';

export function warehouseOptions(yargs: Argv) {
  return yargs
    .option('db', {
      type: 'string',
      describe: 'DuckDB file, or s3://BUCKET/KEY.duckdb (downloaded once per version into a cache) [default ./costs.duckdb]',
    })
    .option('config', { type: 'string', describe: 'Config file (default ./costsync.config.json when present)' })
    .option('shard', { type: 'string', describe: "Read shard I of N's warehouse (I/N): {shard} in --db becomes I [env COSTSYNC_SHARD]" })
    .option('shard-count', {
      type: 'number',
      describe: 'Read the warehouse of shard JOB_COMPLETION_INDEX + 1 of N: {shard} in --db becomes it [env COSTSYNC_SHARD_COUNT]',
    });
}

/** Opens `db` read-only: a local file, or a download of one in a bucket. A missing one is named, with how to make it. */
async function openToRead(db: string, env: NodeJS.ProcessEnv): Promise<ReadOnlyWarehouse> {
  // A warehouse in a bucket is read from a cached download (fetched again only when it changed).
  const file = await readableCopy(db, { env });
  if (!existsSync(file)) {
    throw new CostsyncError(
      'CS_ERR_DB_MISSING',
      `There is no warehouse at ${file}: no such file (--db names it; the default is ./costs.duckdb in the current directory).`,
      {
        exitCode: ExitCode.USAGE,
        hint: "Run costsync sync with the same --db to make one, or pass --db with the path of one that exists (for the demo's, --db demo.duckdb after costsync demo).",
      },
    );
  }
  return openReadOnly(file);
}

/**
 * Runs `body` with a way to open the warehouse read-only (after it has checked its own arguments),
 * closes it afterwards, and turns errors into a message and an exit code.
 */
export async function runReadCommand(
  args: Record<string, unknown>,
  io: CommandIo,
  body: (open: () => Promise<ReadOnlyWarehouse>) => Promise<ExitCode>,
): Promise<ExitCode> {
  let warehouse: ReadOnlyWarehouse | null = null;
  try {
    const { db } = loadConfig({ db: args.db, config: args.config, shard: args.shard, 'shard-count': args['shard-count'] }, io, false);
    try {
      return await body(async () => (warehouse = await openToRead(db, io.env)));
    } catch (error) {
      // A user's own SQL that names what is not there fails as it is; costsync's own, on an older warehouse, says why.
      throw warehouse === null || (isCostsyncError(error) && error.code === 'CS_ERR_QUERY')
        ? error
        : await olderSchemaError(warehouse, db, error);
    }
  } catch (error) {
    io.stderr(`costsync: ${describeError(error)}\n`);
    return isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
  } finally {
    (warehouse as ReadOnlyWarehouse | null)?.close();
  }
}
