/** `costsync report --out report.html [--from DATE] [--to DATE]`. */
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { addDays, utcDate } from '../dates.js';
import { ExitCode } from '../errors.js';
import { check } from '../settings.js';
import { dateArg, outFileArg } from './args.js';
import { runReadCommand, warehouseOptions } from './read.js';
import { processIo, type CommandIo } from './common.js';
import { periodText, type ReportData } from '../report/data.js';

export function reportOptions(yargs: Argv) {
  return warehouseOptions(yargs)
    .option('out', { type: 'string', describe: 'HTML file to write [default ./costsync-report.html]' })
    .option('from', {
      type: 'string',
      describe: 'First date (YYYY-MM-DD) [default 89 days before --to, or the first date with data when later]',
    })
    .option('to', {
      type: 'string',
      describe: 'Last date (YYYY-MM-DD); not after today [default the last complete day: the latest with data before today (UTC)]',
    })
    .option('source', { type: 'string', describe: 'Report on one source only [default all, with spend by source when there are several]' });
}

export function runReportCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  return runReadCommand(args, io, async (open) => {
    const out = resolve(outFileArg('out', args.out, 'costsync-report.html'));
    // The same checks as sync's --since/--until: a calendar date, none after today (UTC), the first on or before the last.
    const today = utcDate(io.now());
    const example = `for example --from ${addDays(today, -29)} --to ${today}`;
    const to =
      args.to === undefined
        ? null
        : check.notFuture(
            '--to',
            dateArg('to', args.to),
            today,
            'no costs exist for days that have not happened, so the report would show days with nothing as if nothing was spent.',
            `Leave --to out (it defaults to the last complete day with data), or pass a date on or before ${today}, ${example}.`,
          );
    const from =
      args.from === undefined
        ? null
        : check.notAfter(
            '--from',
            dateArg('from', args.from),
            to ?? today,
            // The example keeps the --to the user gave: only --from was wrong.
            `Pass a --from on or before ${to === null ? 'today' : '--to'}, for example --from ${addDays(to ?? today, -29)} --to ${to ?? today}.`,
          );
    const source = typeof args.source === 'string' && args.source !== '' ? args.source : null;
    // Loaded here: Vega and d3 would slow every other command's start and grow its heap.
    const { writeReport } = await import('../report/report.js');
    const data = await writeReport(await open(), { out, from, to, source, now: new Date(io.now()) });
    io.stdout(`${out}\n`);
    io.stderr(reportSummary(data));
    return ExitCode.OK;
  });
}

/** What `report` says on stderr: the period and what it held, or plainly that it held nothing (never empty dates). Pure. */
export function reportSummary(data: Pick<ReportData, 'from' | 'to' | 'source' | 'totals' | 'daily' | 'anomalies'>): string {
  const where = data.source === null ? '' : ` (source ${data.source})`;
  const anomalies = `${data.anomalies.length} open anomal${data.anomalies.length === 1 ? 'y' : 'ies'}`;
  if (data.from === '' && data.to === '')
    return `warning: the warehouse holds no spend yet${where}; the report says so. Run costsync sync first.\nReport: no dates with data, ${anomalies}.\n`;
  const empty =
    data.totals.days === 0
      ? `warning: no spend is stored for ${periodText(data)}${where}; the report says so. Sync those dates, or pick another range.\n`
      : '';
  return `${empty}Report for ${periodText(data)}${where}: ${data.daily.length} provider-day(s), ${anomalies}.\n`;
}
