/** `costsync export --focus-version V [--out FILE]`: a FOCUS version's rows with their metadata. */
import type { Argv } from 'yargs';
import { ConfigError, ExitCode } from '../errors.js';
import { EXPORT_VERSIONS, exportFocus, type FocusVersion } from '../focus/export.js';
import { exportFormat } from '../query.js';
import { choiceArg, outFileArg } from './args.js';
import { runReadCommand, warehouseOptions } from './read.js';
import { processIo, type CommandIo } from './common.js';

export function exportOptions(yargs: Argv) {
  return warehouseOptions(yargs)
    .option('focus-version', { type: 'string', describe: `The FOCUS version to export: ${EXPORT_VERSIONS.join(', ')}` })
    .option('out', {
      type: 'string',
      describe:
        'The file to write, by its extension: .parquet, .csv or .jsonl [default focus-<version>.parquet]; from 1.3 on, its metadata (Recency) goes beside it as <name>.metadata.json',
    });
}

export function runExportCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  return runReadCommand(args, io, async (open) => {
    if (args['focus-version'] === undefined)
      throw new ConfigError(
        'export needs --focus-version: which FOCUS version to write.',
        `Pass one of ${EXPORT_VERSIONS.join(', ')}, for example costsync export --focus-version 1.3 (the focus view is 1.2).`,
      );
    const version = choiceArg<FocusVersion>('focus-version', String(args['focus-version']), EXPORT_VERSIONS);
    const out = outFileArg('out', args.out, `focus-${version}.parquet`);
    exportFormat(out);
    const written = await exportFocus(await open(), version, out);
    io.stderr(
      `wrote ${written.rows} FOCUS ${version} rows to ${out}` +
        (written.metadata === null
          ? ' (FOCUS 1.2 defines no Recency metadata)\n'
          : `, and its metadata (${written.sources} dataset instance(s), their Recency) to ${written.metadata}\n`),
    );
    return ExitCode.OK;
  });
}
