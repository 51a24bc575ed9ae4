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
import { connectionOptions } from './commands/common.js';
import { runSyncCommand, syncOptions } from './commands/sync.js';
import { ConfigError, ExitCode, describeError, errorFields, isCostsyncError } from './errors.js';
import { SETTINGS, envName } from './settings.js';
import { createLogger } from './log.js';

/** What `--help` ends with: the exit codes and where settings come from. */
const EPILOGUE = [
  'Exit codes: 0 done; 1 failed (the API or an output kept failing; progress is saved); 2 bad flags, settings or input;',
  '3 the key was refused (unauthorized, scope, plan); 4 stopped early (--max-runtime, SIGTERM, Ctrl-C; progress is saved);',
  '5 another run holds the lock or the lease, or the published warehouse changed under this run.',
  '',
  `Every setting can also come from the environment as COSTSYNC_<FLAG>: ${SETTINGS.filter((s) => s !== 'api-key-file').map(envName).join(', ')}; flags win over the environment, which wins over the config file.`,
  'The API key comes only from COSTSYNC_API_KEY or --api-key-file (never a flag: command lines are visible to every user of the machine).',
].join('\n');

/** Whether errors are to be written as JSON lines: --log-format json, or COSTSYNC_LOG_FORMAT=json. */
function jsonErrors(argv: readonly string[]): boolean {
  const i = argv.lastIndexOf('--log-format');
  const flag = i >= 0 ? argv[i + 1] : argv.findLast((a) => a.startsWith('--log-format='))?.slice('--log-format='.length);
  return (flag ?? process.env.COSTSYNC_LOG_FORMAT) === 'json';
}

/** Writes a failure before (or outside) a run, as one JSON line when JSON logs were asked for. */
function reportFailure(argv: readonly string[], error: unknown): void {
  const secrets = process.env.COSTSYNC_API_KEY ? [process.env.COSTSYNC_API_KEY] : [];
  if (jsonErrors(argv)) {
    const logger = createLogger({ format: 'json', secrets, write: (line) => process.stderr.write(`${line}\n`) });
    const hint = isCostsyncError(error) ? error.hint : undefined;
    logger.error(isCostsyncError(error) ? error.message : describeError(error, secrets), { ...errorFields(error, false), ...(hint ? { hint } : {}) });
  } else {
    process.stderr.write(`costsync: ${describeError(error, secrets)}\n`);
  }
}

/** Keys on the command line are refused with the reason, before yargs calls them unknown. */
function refuseKeyFlag(argv: readonly string[]): void {
  if (argv.some((a) => a === '--api-key' || a.startsWith('--api-key='))) {
    throw new ConfigError('--api-key is not an option: a key on the command line is visible to every user of the machine (ps, shell history, CI logs).',
      'Set COSTSYNC_API_KEY in the environment, or put the key alone in a file and pass --api-key-file PATH.');
  }
}

/** A reader that closed the pipe (`| head`) ends the command quietly, as git and jq do. */
function quietOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? ExitCode.OK);
      throw error;
    });
  }
}

async function main(argv: string[]): Promise<void> {
  quietOnClosedPipe();
  refuseKeyFlag(argv);
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
      reportFailure(argv, new ConfigError(message, 'Run costsync --help for the commands and their options.'));
      process.exit(ExitCode.USAGE);
    })
    .epilogue(EPILOGUE)
    .wrap(Math.min(120, process.stdout.columns ?? 100))
    .help()
    .parseAsync();
}

const args = hideBin(process.argv);
main(args).catch((error: unknown) => {
  reportFailure(args, error);
  process.exitCode = isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
});
