/** `costsync report --out report.html [--from DATE] [--to DATE]`. */
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { ExitCode, describeError, isCostsyncError } from '../errors.js';
import { writeReport } from '../report/report.js';
import { openReadOnly } from '../storage/duckdb.js';
import { dateArg } from './args.js';
import { loadConfig, processIo, type CommandIo } from './sync.js';

export function reportOptions(yargs: Argv) {
  return yargs
    .option('db', { type: 'string', describe: 'DuckDB file [default ./costs.duckdb]' })
    .option('config', { type: 'string', describe: 'Config file (default ./costsync.config.json when present)' })
    .option('out', { type: 'string', describe: 'HTML file to write [default ./costsync-report.html]' })
    .option('from', { type: 'string', describe: 'First date (YYYY-MM-DD) [default 89 days before --to]' })
    .option('to', { type: 'string', describe: 'Last date (YYYY-MM-DD) [default the latest day with data]' });
}

export async function runReportCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  try {
    const { db } = loadConfig({ db: args.db, config: args.config }, io, false);
    const out = resolve(typeof args.out === 'string' ? args.out : 'costsync-report.html');
    const from = args.from === undefined ? null : dateArg('from', args.from);
    const to = args.to === undefined ? null : dateArg('to', args.to);
    const warehouse = await openReadOnly(db);
    try {
      const data = await writeReport(warehouse, { out, from, to, now: new Date(io.now()) });
      io.stdout(`${out}\n`);
      io.stderr(`Report for ${data.from} to ${data.to}: ${data.daily.length} provider-day(s), ${data.anomalies.length} open anomal${data.anomalies.length === 1 ? 'y' : 'ies'}.\n`);
    } finally {
      warehouse.close();
    }
    return ExitCode.OK;
  } catch (error) {
    io.stderr(`costsync: ${describeError(error)}\n`);
    return isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
  }
}
