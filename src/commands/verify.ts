/** `costsync verify`: prints every reconciliation difference; exits 1 when there is one, so a nightly job can gate on it. */
import type { Argv } from 'yargs';
import { ConfigError, ExitCode } from '../errors.js';
import { formatTable } from '../table.js';
import { verifyFocus, verifyWarehouse } from '../verify.js';
import { choiceArg, dateArg } from './args.js';
import { runReadCommand, warehouseOptions } from './read.js';
import { processIo, type CommandIo } from './common.js';

export function verifyOptions(yargs: Argv) {
  return warehouseOptions(yargs)
    .option('tolerance', { type: 'number', describe: 'Largest difference, in dollars, that is not reported [default 0.01]' })
    .option('from', { type: 'string', describe: 'First date to check (YYYY-MM-DD)' })
    .option('to', { type: 'string', describe: 'Last date to check (YYYY-MM-DD)' })
    .option('format', { type: 'string', describe: 'table or json [default table]' })
    .option('focus', { type: 'boolean', describe: 'Check the focus view against the FOCUS 1.2 rules that apply instead' });
}

export function runVerifyCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  return runReadCommand(args, io, async (open) => {
    const tolerance = args.tolerance === undefined ? 0.01 : Number(args.tolerance);
    if (!Number.isFinite(tolerance) || tolerance < 0)
      throw new ConfigError(
        `--tolerance must be a number of dollars, 0 or more; got ${JSON.stringify(args.tolerance)}.`,
        'For example --tolerance 0.01 (one cent).',
      );
    const from = args.from === undefined ? null : dateArg('from', args.from);
    const to = args.to === undefined ? null : dateArg('to', args.to);
    const format = choiceArg('format', args.format ?? 'table', ['table', 'json'] as const);
    if (args.focus === true) {
      const focus = await verifyFocus(await open(), { tolerance });
      if (format === 'json') io.stdout(`${JSON.stringify(focus, null, 2)}\n`);
      else {
        io.stdout(
          focus.violations.length === 0
            ? `No FOCUS violations (${focus.rows} rows of the focus view checked).\n`
            : `${formatTable(focus.violations as unknown as Record<string, unknown>[])}\n\n${focus.violations.length} FOCUS rule(s) broken (${focus.rows} rows checked).\n`,
        );
      }
      return focus.violations.length === 0 ? ExitCode.OK : ExitCode.FAILED;
    }
    const report = await verifyWarehouse(await open(), { tolerance, from, to });
    if (format === 'json') {
      io.stdout(`${JSON.stringify(report, null, 2)}\n`);
    } else {
      const scope = `${report.lineItemDates} date(s) of line items against rollups, ${report.rollupDates} date(s) of rollup totals`;
      io.stdout(
        report.differences.length === 0
          ? `No differences above $${tolerance} (${scope}).\n`
          : `${formatTable(report.differences as unknown as Record<string, unknown>[])}\n\n${report.differences.length} difference(s) above $${tolerance} (${scope}).\n`,
      );
    }
    return report.differences.length === 0 ? ExitCode.OK : ExitCode.FAILED;
  });
}
