#!/usr/bin/env node
/** The costsync command line: registers commands and maps errors to exit codes; nothing else. (The executable is bin.cts.) */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { runCheckCommand } from './commands/check.js';
import { runDemo } from './commands/demo.js';
import { emulatorOptions, runEmulator } from './commands/emulator.js';
import { pushOptions, pushOtelOptions, runPushCommand, runPushOtelCommand } from './commands/push.js';
import { queryOptions, runQueryCommand } from './commands/query.js';
import { reportOptions, runReportCommand } from './commands/report.js';
import { runStatusCommand, statusOptions } from './commands/status.js';
import { notifyOptions, runNotifyCommand } from './commands/notify.js';
import { runVerifyCommand, verifyOptions } from './commands/verify.js';
import { connectionOptions, runSyncCommand, syncOptions } from './commands/sync.js';
import { ExitCode, describeError, isCostsyncError } from './errors.js';

async function main(argv: string[]): Promise<void> {
  await yargs(argv)
    .scriptName('costsync')
    // A flag given twice: the last one wins, as in most CLIs.
    .parserConfiguration({ 'duplicate-arguments-array': false })
    .usage('$0 <command> [options]')
    .command('sync', 'Sync line items, rollups and anomalies into DuckDB', syncOptions, async (args) => {
      process.exitCode = await runSyncCommand(args);
    })
    .command('push [files..]', 'Send FOCUS rows (CSV, Parquet, JSON Lines) to a custom provider connection', pushOptions, async (args) => {
      process.exitCode = await runPushCommand(args);
    })
    .command('push-otel <file>', 'Send a JSON document to the OTel ingest endpoint', pushOtelOptions, async (args) => {
      process.exitCode = await runPushOtelCommand(args);
    })
    .command('query [sql]', 'Run read-only SQL against the warehouse; --list shows tables and views', queryOptions, async (args) => {
      process.exitCode = await runQueryCommand(args);
    })
    .command('verify', 'Reconcile line items against rollups and the rollups against each other; exit 1 on a difference', verifyOptions, async (args) => {
      process.exitCode = await runVerifyCommand(args);
    })
    .command('report', 'Write a self-contained HTML spend report', reportOptions, async (args) => {
      process.exitCode = await runReportCommand(args);
    })
    .command('notify', 'Check the webhooks: --test sends one sample message to each', notifyOptions, async (args) => {
      process.exitCode = await runNotifyCommand(args);
    })
    .command('status', 'Show per source and stream the watermark, last run, rows and windows pending; --format json for scripts', statusOptions, async (args) => {
      process.exitCode = await runStatusCommand(args);
    })
    .command('check', 'Try the key on each endpoint and say which scopes and plan work', connectionOptions, async (args) => {
      process.exitCode = await runCheckCommand(args);
    })
    .command('emulator', 'Serve the Cost Data API emulator on loopback', emulatorOptions, async (args) => {
      await runEmulator(args);
    })
    .command('demo', 'Start the emulator, sync 90 days into ./demo.duckdb, show spend and anomalies', {}, async () => {
      process.exitCode = await runDemo();
    })
    .demandCommand(1, 'Name a command; see --help.')
    .strict()
    .fail((message, error) => {
      if (error) throw error;
      process.stderr.write(`${message}\nRun costsync --help for the commands and their options.\n`);
      process.exit(ExitCode.USAGE);
    })
    .help()
    .parseAsync();
}

main(hideBin(process.argv)).catch((error: unknown) => {
  process.stderr.write(`costsync: ${describeError(error, process.env.COSTSYNC_API_KEY ? [process.env.COSTSYNC_API_KEY] : [])}\n`);
  process.exitCode = isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
});
