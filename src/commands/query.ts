/** `costsync query "SQL"` and `costsync query --list`. */
import type { Argv } from 'yargs';
import { ConfigError, ExitCode } from '../errors.js';
import { exportFormat, exportQuery, listText, writeQuery, type OutputFormat } from '../query.js';
import { loadSql } from '../storage/duckdb.js';
import { choiceArg, outFileArg } from './args.js';
import { runReadCommand, warehouseOptions } from './read.js';
import { processIo, type CommandIo } from './common.js';

export function queryOptions(yargs: Argv) {
  return warehouseOptions(yargs)
    .positional('sql', { type: 'string', describe: 'The SQL to run (read-only)' })
    .option('format', { type: 'string', describe: 'table, csv or json [default table]' })
    .option('list', { type: 'boolean', describe: 'List the tables and views with their columns' })
    .option('out', {
      type: 'string',
      describe: 'Write the result to this file instead, by its extension: .parquet, .csv or .jsonl (streamed)',
    });
}

export function runQueryCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  return runReadCommand(args, io, async (open) => {
    const format = choiceArg<OutputFormat>('format', args.format ?? 'table', ['table', 'csv', 'json']);
    const text = args.list ? loadSql('query/list_objects') : typeof args.sql === 'string' ? args.sql : '';
    if (text.trim() === '')
      throw new ConfigError(
        'No SQL to run.',
        'Pass the SQL in quotes, for example costsync query "SELECT * FROM monthly_spend", or --list to see the tables and views.',
      );
    if (args.out !== undefined) {
      const out = outFileArg('out', args.out, 'result.parquet');
      exportFormat(out);
      const rows = await exportQuery(await open(), text, out);
      io.stderr(`wrote ${rows} rows to ${out}\n`);
      return ExitCode.OK;
    }
    if (args.list && format === 'table') {
      const rows = await (await open()).sql<{ name: string; kind: string; columns: string; about: string | null }>(text);
      io.stdout(`${listText(rows, Math.max(60, io.columns ?? 100))}\n`);
      return ExitCode.OK;
    }
    await writeQuery(await open(), text, format, io.stdout);
    return ExitCode.OK;
  });
}
