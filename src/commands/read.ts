/** What the commands that only read the warehouse (`query`, `verify`, `report`) share: options, opening, errors. */
import type { Argv } from 'yargs';
import { ExitCode, describeError, isCostsyncError } from '../errors.js';
import { readableCopy } from '../outputs/publish.js';
import { openReadOnly, type ReadOnlyWarehouse } from '../storage/duckdb.js';
import { loadConfig, type CommandIo } from './common.js';

export function warehouseOptions(yargs: Argv) {
  return yargs
    .option('db', { type: 'string', describe: 'DuckDB file, or s3://BUCKET/KEY.duckdb (downloaded once per version into a cache) [default ./costs.duckdb]' })
    .option('config', { type: 'string', describe: 'Config file (default ./costsync.config.json when present)' });
}

/**
 * Runs `body` with a way to open the warehouse read-only (after it has checked its own arguments),
 * closes it afterwards, and turns errors into a message and an exit code.
 */
export async function runReadCommand(
  args: Record<string, unknown>, io: CommandIo, body: (open: () => Promise<ReadOnlyWarehouse>) => Promise<ExitCode>,
): Promise<ExitCode> {
  let warehouse: ReadOnlyWarehouse | null = null;
  try {
    const { db } = loadConfig({ db: args.db, config: args.config }, io, false);
    // A warehouse in a bucket is read from a cached download (fetched again only when it changed).
    return await body(async () => (warehouse = await openReadOnly(await readableCopy(db))));
  } catch (error) {
    io.stderr(`costsync: ${describeError(error)}\n`);
    return isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
  } finally {
    (warehouse as ReadOnlyWarehouse | null)?.close();
  }
}
