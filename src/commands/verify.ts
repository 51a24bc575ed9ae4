/** `costsync verify`: prints every reconciliation difference; exits 1 when there is one, so a nightly job can gate on it. */
import type { Argv } from 'yargs';
import { ConfigError, ExitCode } from '../errors.js';
import { formatTable } from '../table.js';
import { verifyWarehouse } from '../verify.js';
import { choiceArg, dateArg } from './args.js';
import { runReadCommand, warehouseOptions } from './read.js';
import { processIo, type CommandIo } from './sync.js';

export function verifyOptions(yargs: Argv) {
  return warehouseOptions(yargs)
    .option('tolerance', { type: 'number', describe: 'Largest difference, in dollars, that is not reported [default 0.01]' })
    .option('from', { type: 'string', describe: 'First date to check (YYYY-MM-DD)' })
    .option('to', { type: 'string', describe: 'Last date to check (YYYY-MM-DD)' })
    .option('format', { type: 'string', describe: 'table or json [default table]' });
}

export function runVerifyCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  return runReadCommand(args, io, async (open) => {
    const tolerance = args.tolerance === undefined ? 0.01 : Number(args.tolerance);
    if (!Number.isFinite(tolerance) || tolerance < 0) throw new ConfigError(`--tolerance must be a number of dollars, 0 or more; got ${JSON.stringify(args.tolerance)}.`, 'For example --tolerance 0.01 (one cent).');
    const from = args.from === undefined ? null : dateArg('from', args.from);
    const to = args.to === undefined ? null : dateArg('to', args.to);
    const format = choiceArg('format', args.format ?? 'table', ['table', 'json'] as const);
    const report = await verifyWarehouse(await open(), { tolerance, from, to });
    if (format === 'json') {
      io.stdout(`${JSON.stringify(report, null, 2)}\n`);
    } else {
      const scope = `${report.lineItemDates} date(s) of line items against rollups, ${report.rollupDates} date(s) of rollup totals`;
      io.stdout(report.differences.length === 0
        ? `No differences above $${tolerance} (${scope}).\n`
        : `${formatTable(report.differences as unknown as Record<string, unknown>[])}\n\n${report.differences.length} difference(s) above $${tolerance} (${scope}).\n`);
    }
    return report.differences.length === 0 ? ExitCode.OK : ExitCode.FAILED;
  });
}
