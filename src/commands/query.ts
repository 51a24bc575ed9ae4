/** `costsync query "SQL"` and `costsync query --list`. */
import type { Argv } from 'yargs';
import { ConfigError, ExitCode, describeError, isCostsyncError } from '../errors.js';
import { formatResult, runQuery, type OutputFormat } from '../query.js';
import { loadSql, openReadOnly } from '../storage/duckdb.js';
import { choiceArg } from './args.js';
import { loadConfig, processIo, type CommandIo } from './sync.js';

export function queryOptions(yargs: Argv) {
  return yargs
    .positional('sql', { type: 'string', describe: 'The SQL to run (read-only)' })
    .option('db', { type: 'string', describe: 'DuckDB file [default ./costs.duckdb]' })
    .option('config', { type: 'string', describe: 'Config file (default ./costsync.config.json when present)' })
    .option('format', { type: 'string', describe: 'table, csv or json [default table]' })
    .option('list', { type: 'boolean', describe: 'List the tables and views with their columns' });
}

export async function runQueryCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  try {
    const { db } = loadConfig({ db: args.db, config: args.config }, io, false);
    const format = choiceArg<OutputFormat>('format', args.format ?? 'table', ['table', 'csv', 'json']);
    const text = args.list ? loadSql('query/list_objects') : typeof args.sql === 'string' ? args.sql : '';
    if (text.trim() === '') throw new ConfigError('No SQL to run.', 'Pass the SQL in quotes, for example costsync query "SELECT * FROM monthly_spend", or --list to see the tables and views.');
    const warehouse = await openReadOnly(db);
    try {
      io.stdout(`${formatResult(await runQuery(warehouse, text), format)}\n`);
    } finally {
      warehouse.close();
    }
    return ExitCode.OK;
  } catch (error) {
    io.stderr(`costsync: ${describeError(error)}\n`);
    return isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
  }
}
