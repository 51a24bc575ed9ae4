/** `costsync push` and `costsync push-otel`: resolve options, run the library, print the summary, pick the exit code. */
import type { Argv } from 'yargs';
import { createApiClient, retryLine, type ClientEvent } from '../api/client.js';
import { createRequestLimiter, systemClock } from '../api/resilience.js';
import { ConfigError, ExitCode, describeError, errorFields, isCostsyncError } from '../errors.js';
import { MAP_EXAMPLE, parseMapping, versionArg, type ColumnMapping } from '../push/columns.js';
import { defaultKeyColumns, parseKeyColumns } from '../push/identity.js';
import { openFileReader } from '../push/reader.js';
import { DEFAULT_BATCH_SIZE, pushExitCode, runPush, type PushOptions, type PushSummary, type RowProblem } from '../push/push.js';
import { runPushOtel } from '../push/otel.js';
import type { SyncConfig } from '../config.js';
import type { Logger } from '../log.js';
import { logPublish, publish } from '../outputs/publish.js';
import { openRun, type OpenRun } from '../run-context.js';
import { newRunId } from '../run-id.js';
import { formatTable } from '../table.js';
import { existingDir, intArg, jsonArg } from './args.js';
import { loadConfig, makeLogger, oneSource, processIo, type CommandIo } from './common.js';
import { settingOptions } from '../settings.js';
import { packageVersion } from '../paths.js';

export function pushOptions(yargs: Argv) {
  // `--version` was the profile version here: a number after it still means that, with a notice;
  // alone (or before anything else) it prints costsync's version, as it does for every command.
  return (
    settingOptions(yargs.version(false), ['connection', 'rate', 'lease'])
      .positional('files', { type: 'string', array: true, describe: 'CSV, Parquet or JSON Lines files in FOCUS' })
      .option('connection', { type: 'string', describe: "The custom provider's connection id" })
      .option('map', {
        type: 'string',
        describe:
          'Column mapping, as inline JSON (quoted for the shell) or the path of a JSON file: {"columns": {"source": "FocusColumn"}, "constants": {"FocusColumn": value}}',
      })
      .option('profile-version', {
        type: 'string',
        describe: 'Profile version 1, 1.1 or 1.2 [default: the lowest that covers the columns used]',
      })
      // Taken as a string so the deprecated `--version 1.2` still names the profile version; alone it prints costsync's.
      .option('version', { type: 'string', describe: "Show costsync's version (deprecated with a value: use --profile-version)" })
      .option('format', { type: 'string', describe: 'Profile name [default <vendor>.focus]' })
      .option('batch-size', { type: 'number', describe: `Rows per request [default ${DEFAULT_BATCH_SIZE}]` })
      .option('dry-run', { type: 'boolean', describe: 'Check and report; send nothing' })
      .option('skip-invalid', {
        type: 'boolean',
        describe: 'Rows that fail the local checks: send the others and list these (exit 0) [default: send nothing, exit 1]',
      })
      .option('allow-undelivered', {
        type: 'boolean',
        describe: 'Rows the server refused, skipped or did not confirm: list them and exit 0 [default: exit 1]',
      })
      .option('key-columns', {
        type: 'string',
        describe: `What identifies a row without its own id: columns separated by commas, or "default" [default: the rule the connection's ledger records; for a new one: ${defaultKeyColumns('<vendor>').join(',')}]`,
      })
      .option('settle-corrections', {
        type: 'boolean',
        describe:
          'Corrections the server does not apply (it keeps the first values): record them as settled, once you set the difference right with an Adjustment row, so pushes of the same values count them as delivered',
      })
      .option('rekey', {
        type: 'boolean',
        describe:
          'With --key-columns: change the rule of a connection rows were delivered under (they get new ids; pushed again, they are stored again)',
      })
      .option('undelivered-dir', {
        type: 'string',
        describe: 'Where <file>.undelivered.<ext>, the rows not delivered with the reason per row, is written [default: beside each file]',
      })
      .option('vendor', { type: 'string', describe: 'Vendor word in x_<vendor>_… columns [default service]' })
      .option('force', { type: 'boolean', describe: 'Send again the rows the ledger shows delivered' })
  );
}

export function pushOtelOptions(yargs: Argv) {
  return settingOptions(yargs, ['connection', 'rate', 'lease'])
    .positional('file', { type: 'string', describe: 'A JSON document (for example an OTLP/JSON export)' })
    .option('force', { type: 'boolean', describe: 'Send even when the ledger says this document was sent' });
}

/** The sync settings the push commands share (base URL, key, db, logging); push's own --format is not sync's. */
function sharedConfig(args: Record<string, unknown>, io: CommandIo, needsApi: boolean) {
  const { format: _format, version: _version, 'profile-version': _profile, ...shared } = args;
  return oneSource(loadConfig(shared, io, needsApi), 'push');
}

/**
 * The push commands write the ledger into the working copy (under the lock beside --db, and with
 * --db in a bucket under the warehouse's lease: `openRun`) and publish it over --db when they are done,
 * whatever the outcome.
 */
function openLedger(config: SyncConfig, command: string, logger: Logger, env: NodeJS.ProcessEnv): Promise<OpenRun> {
  const runId = newRunId(Date.now());
  return openRun({ config, runId, command, clock: systemClock, logger, sources: [], kind: 'ledger', env });
}

async function closeLedger(ledger: OpenRun | null, logger: Logger): Promise<void> {
  if (ledger === null) return;
  try {
    ledger.leases?.check();
    logPublish(logger, await publish(ledger.warehouse, ledger.db, { runId: null, now: Date.now }));
  } finally {
    ledger.warehouse.close();
    await ledger.release();
  }
}

/** Retries said on the log as they happen, so a slow push is never a silent one. */
function logRetries(logger: Logger): (event: ClientEvent) => void {
  return (event) => {
    if (event.type === 'retry') logger.info(retryLine(event), { code: event.code, attempt: event.attempt });
  };
}

function problemLine(p: RowProblem): string {
  return `${p.file}:${p.line ?? `row ${p.row}`}: ${p.column ? `${p.column}: ` : ''}${p.reason}`;
}

function summaryText(s: PushSummary): string {
  return formatTable([
    {
      'rows read': s.rowsRead,
      'failed checks': s.invalid,
      sent: s.sent,
      delivered: s.delivered,
      corrected: s.corrected,
      'already delivered': s.alreadyDelivered,
      refused: s.refused,
      'not applied': s.notApplied,
      settled: s.settled,
      unconfirmed: s.unconfirmed,
      batches: s.batches,
      requests: s.requests,
    },
  ]);
}

const UNDELIVERED_HINT =
  'Fix what each row\'s reason names and push that file; a correction the server did not apply goes as an Adjustment row of the difference under a new id (docs/focus-and-push.md, "Pushing the same data again"); pass --allow-undelivered to accept rows not delivered.';

/**
 * What to do about rows not delivered. When the server refused every request whole and delivered nothing,
 * the rows are not at fault (an unknown connection, a bad key setting): fixing rows would not help. Pure.
 */
export function undeliveredHint(s: PushSummary): string {
  // Every row not delivered (the invalid aside) was in a request refused whole, and none was delivered.
  const wholeOnly = s.refusedWhole > 0 && s.delivered === 0 && s.refusedWhole === undeliveredCount(s) - s.invalid;
  return wholeOnly
    ? 'The server refused the requests themselves, not rows in them: fix what it said (such as --connection, the id of the custom provider connection) and push the same file again.'
    : UNDELIVERED_HINT;
}

/** How many rows were not delivered, and why, in one clause. Pure. */
export function undeliveredLine(s: PushSummary): string {
  const parts = [
    s.invalid > 0 ? `${s.invalid} failed the checks` : '',
    s.refused > 0 ? `${s.refused} refused by the server` : '',
    s.notApplied > 0 ? `${s.notApplied} correction(s) the server did not apply` : '',
    s.unconfirmed > 0 ? `${s.unconfirmed} skipped by the server without naming them` : '',
  ].filter(Boolean);
  // A request refused whole usually says why every row failed (an unknown connection): its words, not only a count.
  const said = s.requestRefusals.slice(0, 3).map((m) => `"${m.replace(/\.$/, '')}"`);
  const whole =
    said.length === 0
      ? ''
      : `; the server refused whole requests, saying ${said.join(', ')}${s.requestRefusals.length > 3 ? ' and more' : ''}`;
  return `${undeliveredCount(s)} of ${s.rowsRead} row(s) read were not delivered (${parts.join(', ')})${whole}`;
}

/**
 * What became of the rows delivered, for a push's last line: how many the server stored (of them
 * corrections) or skipped as rows it held already, and how many were delivered before and not sent, so
 * a push that sent only rows the server had never says it stored them. Pure.
 */
export function deliveredText(s: PushSummary, force: boolean): string {
  const why = force ? 'sent again by --force' : 'sent again after a request whose answer never came';
  return [
    `${s.delivered - s.deliveredBefore} stored by the server now${
      s.corrected + s.replacedHeld === 0
        ? ''
        : ` (${[
            s.corrected > 0 ? `${s.corrected} of them corrections` : '',
            s.replacedHeld > 0 ? `${s.replacedHeld} in place of the same rows under their ids, sent again by --force: no new charges` : '',
          ]
            .filter(Boolean)
            .join('; ')})`
    }`,
    ...(s.deliveredBefore > 0 ? [`${s.deliveredBefore} it held already and skipped (${why})`] : []),
    `${s.alreadyDelivered} delivered before and not sent`,
    ...(s.settled > 0 ? [`${s.settled} correction(s) the server keeps its first values for, settled by --settle-corrections`] : []),
  ].join('; ');
}

/** The last line of a push that delivered every row. Pure. */
export function doneLine(s: PushSummary, force: boolean): string {
  return `Done: push ${s.pushId}: every row read is delivered${s.settled > 0 ? ' or settled' : ''} (${deliveredText(s, force)}); ${s.batches} request(s) recorded in ingest_batches.`;
}

/** Rows read and not delivered: failed the checks, refused, corrections not applied, unconfirmed. Pure. */
function undeliveredCount(s: PushSummary): number {
  return s.invalid + s.refused + s.notApplied + s.unconfirmed;
}

/**
 * The push settings from the command's arguments and the resolved shared config: the one place the
 * CLI (and the push benchmark) turn flags into PushOptions, so a new option gets its default here.
 */
export function resolvePushOptions(
  args: Record<string, unknown>,
  config: Pick<SyncConfig, 'baseUrl' | 'apiKey'> & { sourceName: string },
): PushOptions {
  const dryRun = Boolean(args['dry-run']);
  const files = ((args.files as string[] | undefined) ?? []).map(String);
  if (files.length === 0)
    throw new ConfigError('No file to push.', 'Name one or more CSV, Parquet or JSON Lines files: costsync push --connection ID costs.csv');
  const connectionId = typeof args.connection === 'string' ? args.connection.trim() : '';
  if (connectionId === '' && !dryRun)
    throw new ConfigError(
      '--connection is required: which custom provider connection the rows belong to.',
      'Pass --connection ID (the connection created with the ingest key, in the workspace integration settings).',
    );
  const vendor = args.vendor === undefined ? 'service' : String(args.vendor).trim();
  if (!/^[a-z0-9]+$/i.test(vendor))
    throw new ConfigError(
      `--vendor must be one word of letters and digits; got ${JSON.stringify(args.vendor)}.`,
      'For example --vendor acme, for columns such as x_acme_model.',
    );
  let mapping: ColumnMapping = { columns: {}, constants: {} };
  if (args.map !== undefined) {
    const { value, where } = jsonArg('map', String(args.map), MAP_EXAMPLE);
    mapping = parseMapping(value, where);
  }
  const batchSize =
    args['batch-size'] === undefined ? DEFAULT_BATCH_SIZE : intArg('batch-size', args['batch-size'], 1, 100_000, DEFAULT_BATCH_SIZE);
  return {
    connectionId,
    files,
    mapping,
    version: args['profile-version'] !== undefined ? versionArg(args['profile-version']) : versionArg(args.version, '--version'),
    format: args.format === undefined ? null : String(args.format),
    vendor,
    batchSize,
    dryRun,
    skipInvalid: Boolean(args['skip-invalid']),
    allowUndelivered: Boolean(args['allow-undelivered']),
    keyColumns: args['key-columns'] === undefined ? null : parseKeyColumns(String(args['key-columns']), vendor),
    rekey: Boolean(args.rekey),
    settleCorrections: Boolean(args['settle-corrections']),
    undeliveredDir: args['undelivered-dir'] === undefined ? null : existingDir('undelivered-dir', String(args['undelivered-dir'])),
    force: Boolean(args.force),
    baseUrl: config.baseUrl,
    apiKey: config.apiKey,
    source: config.sourceName,
  };
}

/**
 * Whether push's `--version` was given its deprecated meaning: followed by a number, a profile version
 * (checked later, so `--version 2` in a script fails instead of printing a version and pushing nothing).
 */
function isProfileVersion(value: unknown): boolean {
  return /^\d/.test(String(value));
}

export async function runPushCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  // Before anything is resolved: --version needs no base URL, key or file.
  if (args.version !== undefined && !isProfileVersion(args.version)) {
    io.stdout(`${packageVersion()}\n`);
    return ExitCode.OK;
  }
  let config: (SyncConfig & { sourceName: string }) | undefined;
  let logger = makeLogger({ logFormat: args['log-format'] === 'json' ? 'json' : 'pretty', quiet: Boolean(args.quiet), apiKey: '' }, io);
  let ledger: OpenRun | null = null;
  let reader = null;
  let client = null;
  // One stop for the run, as sync's: it cuts the request in flight (the client was made with it) and
  // drops the ones waiting in the limiter; push records a cut request as unanswered and ends.
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      // A second Ctrl-C (or SIGTERM): at once. Answered batches are in the ledger's working copy, which the next run takes up.
      logger.warn(`${signal} again: exiting now; the next push goes on from the batches recorded as answered`);
      process.exit(ExitCode.STOPPED_EARLY);
    }
    logger.warn(
      `${signal}: stopping now; a request in flight is cut and sent again, with the same ids, by the next push; ${signal === 'SIGINT' ? 'Ctrl-C' : 'the signal'} again exits at once`,
    );
    stop.abort(`${signal} received`);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // A reader that went away (`| head`) stops the push as SIGTERM does: never an exit 0 that did half the work.
  const unwatchPipes = io.onClosedPipe?.((which) => {
    if (!stop.signal.aborted) stop.abort(`${which} was closed`);
  });
  try {
    const dryRun = Boolean(args['dry-run']);
    config = sharedConfig(args, io, !dryRun);
    logger = makeLogger(config, io);
    if (args.version !== undefined && args['profile-version'] === undefined) {
      logger.warn(
        `push --version ${String(args.version)} is deprecated: use --profile-version ${String(args.version)} (--version alone prints costsync's version); it still works for now`,
      );
    }
    const options = resolvePushOptions(args, config);

    reader = await openFileReader(io.env);
    if (!dryRun) {
      ledger = await openLedger(config, 'costsync push', logger, io.env);
      const limiter = createRequestLimiter({ requestsPerMinute: config.rateLimit });
      // A request waiting for its turn (or out a 429 hold) is dropped at the stop, not sent after it.
      if (stop.signal.aborted) limiter.dropWaiting();
      else stop.signal.addEventListener('abort', () => limiter.dropWaiting(), { once: true });
      client = createApiClient({
        baseUrl: config.baseUrl,
        apiKey: config.apiKey,
        limiter,
        signal: stop.signal,
        onEvent: logRetries(logger),
      });
    }
    const summary = await runPush({
      options,
      reader,
      logger,
      signal: stop.signal,
      ...(client ? { client } : {}),
      ...(ledger ? { warehouse: ledger.warehouse } : {}),
      // A row that fails the push is an error; one --skip-invalid leaves out, a warning.
      onProblem: (p) =>
        logger[p.level](problemLine(p), {
          file: p.file,
          row: p.row,
          line: p.line,
          ...(p.column !== '' && { column: p.column }),
          reason: p.reason,
        }),
    });
    // Published before the summary, so a failed publish is this command's failure.
    const done = ledger;
    ledger = null;
    await closeLedger(done, logger);
    if (config.logFormat === 'json') {
      logger.info('push finished', { ...summary });
    } else if (!config.quiet) {
      io.stderr(`\n${summaryText(summary)}\n`);
    }
    const listed =
      summary.undeliveredFiles.length > 0 ? ` They are in ${summary.undeliveredFiles.join(', ')}, with the reason per row.` : '';
    if (summary.outcome === 'invalid') {
      logger.error(
        `${summary.invalid} of ${summary.rowsRead} row(s) failed the checks, listed above; nothing was sent.${listed} Fix them, or pass --skip-invalid to send the valid rows.`,
      );
    } else if (summary.outcome === 'undelivered') {
      logger.error(`Not done: ${undeliveredLine(summary)}.${listed} ${undeliveredHint(summary)}`);
    } else if (summary.outcome === 'stopped') {
      logger.warn(
        dryRun
          ? `Stopped early (${String(stop.signal.reason ?? 'stop requested')}) before every row was checked; nothing was sent.`
          : `Stopped early (${String(stop.signal.reason ?? 'stop requested')}); the answered batches are recorded in ingest_batches: run the same command again to go on.`,
      );
    } else if (dryRun) {
      // A dry run reads no ledger: rows an earlier push delivered are counted here, and the push would not send them again.
      logger.info(
        `Dry run: ${summary.valid} row(s) valid, to send as profile version ${summary.version} (less any the ledger shows delivered already); nothing was sent.`,
      );
    } else {
      if (undeliveredCount(summary) > 0) {
        const accepted = [
          summary.invalid > 0 ? '--skip-invalid' : '',
          undeliveredCount(summary) > summary.invalid ? '--allow-undelivered' : '',
        ]
          .filter(Boolean)
          .join(' and ');
        logger.warn(
          `Done, with rows not delivered as ${accepted} allows: ${undeliveredLine(summary)}.${listed} Delivered: ${deliveredText(summary, Boolean(args.force))}.`,
        );
      } else {
        logger.info(doneLine(summary, Boolean(args.force)));
      }
    }
    return pushExitCode(summary);
  } catch (error) {
    logger.error(describeError(error, config ? [config.apiKey] : []), errorFields(error, config?.verbose ?? Boolean(args.verbose)));
    return isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
  } finally {
    unwatchPipes?.();
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    reader?.close();
    await client?.close();
    await closeLedger(ledger, logger).catch((error: unknown) => {
      logger.error(describeError(error, config ? [config.apiKey] : []));
    });
  }
}

export async function runPushOtelCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  let config: (SyncConfig & { sourceName: string }) | undefined;
  let logger = makeLogger({ logFormat: args['log-format'] === 'json' ? 'json' : 'pretty', quiet: Boolean(args.quiet), apiKey: '' }, io);
  let ledger: OpenRun | null = null;
  let client = null;
  try {
    if (typeof args.file !== 'string' || args.file === '')
      throw new ConfigError('No file to send.', 'Name a JSON document: costsync push-otel usage.json');
    config = sharedConfig(args, io, true);
    logger = makeLogger(config, io);
    ledger = await openLedger(config, 'costsync push-otel', logger, io.env);
    client = createApiClient({
      baseUrl: config.baseUrl,
      apiKey: config.apiKey,
      limiter: createRequestLimiter({ requestsPerMinute: config.rateLimit }),
      onEvent: logRetries(logger),
    });
    const result = await runPushOtel({
      file: args.file,
      force: Boolean(args.force),
      baseUrl: config.baseUrl,
      apiKey: config.apiKey,
      source: config.sourceName,
      client,
      warehouse: ledger.warehouse,
      logger,
    });
    const done = ledger;
    ledger = null;
    await closeLedger(done, logger);
    if (result.sent) logger.info(`Sent ${result.file}; the server answered ${JSON.stringify(result.response)}`, { pushId: result.pushId });
    return ExitCode.OK;
  } catch (error) {
    logger.error(describeError(error, config ? [config.apiKey] : []), errorFields(error, config?.verbose ?? Boolean(args.verbose)));
    return isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
  } finally {
    await client?.close();
    await closeLedger(ledger, logger).catch((error: unknown) => {
      logger.error(describeError(error, config ? [config.apiKey] : []));
    });
  }
}
