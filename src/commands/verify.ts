/** `costsync verify`: prints every reconciliation difference; exits 1 when there is one, so a nightly job can gate on it. */
import type { Argv } from 'yargs';
import { ConfigError, ExitCode, describeError, isCostsyncError } from '../errors.js';
import { openReadOnly } from '../storage/duckdb.js';
import { formatTable } from '../table.js';
import { verifyWarehouse } from '../verify.js';
import { choiceArg, dateArg } from './args.js';
import { loadConfig, processIo, type CommandIo } from './sync.js';

export function verifyOptions(yargs: Argv) {
  return yargs
    .option('db', { type: 'string', describe: 'DuckDB file [default ./costs.duckdb]' })
    .option('config', { type: 'string', describe: 'Config file (default ./costsync.config.json when present)' })
    .option('tolerance', { type: 'number', describe: 'Largest difference, in dollars, that is not reported [default 0.01]' })
    .option('from', { type: 'string', describe: 'First date to check (YYYY-MM-DD)' })
    .option('to', { type: 'string', describe: 'Last date to check (YYYY-MM-DD)' })
    .option('format', { type: 'string', describe: 'table or json [default table]' });
}

export async function runVerifyCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  try {
    const { db } = loadConfig({ db: args.db, config: args.config }, io, false);
    const tolerance = args.tolerance === undefined ? 0.01 : Number(args.tolerance);
    if (!Number.isFinite(tolerance) || tolerance < 0) throw new ConfigError(`--tolerance must be a number of dollars, 0 or more; got ${JSON.stringify(args.tolerance)}.`, 'For example --tolerance 0.01 (one cent).');
    const from = args.from === undefined ? null : dateArg('from', args.from);
    const to = args.to === undefined ? null : dateArg('to', args.to);
    const format = choiceArg('format', args.format ?? 'table', ['table', 'json'] as const);
    const warehouse = await openReadOnly(db);
    let report;
    try {
      report = await verifyWarehouse(warehouse, { tolerance, from, to });
    } finally {
      warehouse.close();
    }
    if (format === 'json') {
      io.stdout(`${JSON.stringify(report, null, 2)}\n`);
    } else {
      const scope = `${report.lineItemDates} date(s) of line items against rollups, ${report.rollupDates} date(s) of rollup totals`;
      io.stdout(report.differences.length === 0
        ? `No differences above $${tolerance} (${scope}).\n`
        : `${formatTable(report.differences as unknown as Record<string, unknown>[])}\n\n${report.differences.length} difference(s) above $${tolerance} (${scope}).\n`);
    }
    return report.differences.length === 0 ? ExitCode.OK : ExitCode.FAILED;
  } catch (error) {
    io.stderr(`costsync: ${describeError(error)}\n`);
    return isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
  }
}
