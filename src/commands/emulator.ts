/**
 * `costsync emulator`: serves the Cost Data API on loopback until stopped. Its options are declared
 * here; the emulator itself is loaded only when the command runs (types alone are imported at the top).
 */
import type { Argv } from 'yargs';
import type { Emulator, EmulatorInput, KeysConfig } from '../emulator/index.js';
import { addDays, utcDate } from '../dates.js';
import { choiceArg, dateArg, intArg, rateArg, readJsonFile } from './args.js';

export function emulatorOptions(yargs: Argv) {
  return yargs
    .option('port', { type: 'number', default: 8787, describe: 'Port to listen on (0 picks a free one)' })
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to listen on' })
    .option('seed', { type: 'number', default: 1, describe: 'Seed for data and faults' })
    .option('start-date', { type: 'string', describe: 'First day of data (default: --days before --end-date)' })
    .option('end-date', { type: 'string', describe: 'Last day of data (default: today, UTC)' })
    .option('days', { type: 'number', default: 120, describe: 'Days of data when --start-date is not given' })
    .option('rows-per-day', { type: 'number', default: 200, describe: 'Line items per day (up to 100000)' })
    .option('anomalies-per-day', { type: 'number', default: 3, describe: 'Anomaly alerts detected per day on average' })
    .option('anomaly-order', {
      choices: ['asc', 'desc', 'unordered'] as const,
      default: 'desc' as const,
      describe: "Order of the anomalies endpoint's answers by detection time (the spec leaves it open)",
    })
    .option('line-item-order', {
      choices: ['date', 'shuffled'] as const,
      default: 'date' as const,
      describe: 'Order of line items across pages (the spec leaves it open)',
    })
    .option('last-page-cursor', {
      choices: ['null', 'omit', 'empty'] as const,
      default: 'null' as const,
      describe: 'How the last page shows "no cursor"',
    })
    .option('rate-limit', { type: 'number', default: 60, describe: 'Requests per minute per key (0: no limit)' })
    .option('retry-after', { type: 'boolean', default: true, describe: 'Send Retry-After on 429 (--no-retry-after to leave it out)' })
    .option('keys', { type: 'string', describe: 'JSON file of keys and connections' })
    .option('vendor', { type: 'string', default: 'service', describe: 'Vendor word in x_<vendor>_ columns' })
    .option('max-ingest-rows', {
      type: 'number',
      default: 5000,
      describe: 'Rows an ingest request may hold; more is refused with VALIDATION_ERROR (the spec does not say the real limit)',
    })
    .option('max-body-bytes', {
      type: 'number',
      default: 16 * 1024 * 1024,
      describe: 'Bytes a POST body may hold (the spec does not say the real limit)',
    })
    .option('ingest-too-large', {
      choices: ['validation-error', 'payload-too-large'] as const,
      default: 'validation-error' as const,
      describe: 'How a request above --max-ingest-rows or --max-body-bytes is refused: 400 VALIDATION_ERROR or 413 (the spec does not say)',
    })
    .option('ingest-invalid-rows', {
      choices: ['skip', 'reject-batch', 'refuse-request'] as const,
      default: 'skip' as const,
      describe:
        'An invalid ingest row is skipped with an error (the valid rows are stored), rejects its whole batch (202, accepted false), or refuses the request (400); the spec does not say',
    })
    .option('ingest-duplicates', {
      choices: ['skip', 'replace'] as const,
      default: 'skip' as const,
      describe: 'A row whose line-item id was ingested before is skipped, or replaces the earlier row (the spec does not say which wins)',
    })
    .option('ingest-row-errors', {
      choices: ['object', 'string'] as const,
      default: 'object' as const,
      describe: "Shape of the ingest result's errors: {row, column, message} objects or one line each (the spec does not show it)",
    })
    .option('ingest-dates', {
      choices: ['date-or-time', 'date'] as const,
      default: 'date-or-time' as const,
      describe:
        "ChargePeriodStart/End: a calendar date or an ISO 8601 time with its zone (as FOCUS writes them), or only YYYY-MM-DD (the spec's words)",
    })
    .option('ingest-refuse-service', {
      type: 'string',
      array: true,
      describe:
        "Refuse ingest rows whose ServiceName starts with this (repeatable): each named in the answer's errors, as a server with a contract or a quota does",
    })
    .option('ingest-skip-service', {
      type: 'string',
      array: true,
      describe: 'Skip ingest rows whose ServiceName starts with this (repeatable), counted in skipped without a word',
    })
    .option('service-rollup-fills-provider', {
      type: 'boolean',
      default: false,
      describe: 'group_by=service rollups also fill provider_type (the spec does not say which fields they fill)',
    })
    .option('page-overlap-rate', { type: 'number', default: 0, describe: 'Chance a page repeats records of the previous one' })
    .option('latency-ms', { type: 'number', default: 0, describe: 'Delay before every answer, in ms' })
    .option('latency-jitter-ms', { type: 'number', default: 0, describe: 'Random extra delay up to this many ms' })
    .option('error-rate', { type: 'number', default: 0, describe: 'Share of requests answered 500' })
    .option('drop-rate', { type: 'number', default: 0, describe: 'Share of connections dropped' })
    .option('truncate-rate', { type: 'number', default: 0, describe: 'Share of bodies cut short' })
    .option('malformed-rate', { type: 'number', default: 0, describe: 'Share of bodies that are not JSON' })
    .option('cursor-expiry-rate', { type: 'number', default: 0, describe: 'Share of cursors refused as expired (400)' })
    .option('cursor-ttl-ms', { type: 'number', default: 0, describe: 'Cursors older than this are refused as expired (0: never)' })
    .option('restate-every', { type: 'number', default: 0, describe: 'Restate recent days every N requests' })
    .option('restate-days', { type: 'number', default: 3, describe: 'Recent days changed by each restatement' })
    .option('restate-add-rate', {
      type: 'number',
      default: 0,
      describe: 'Rows added to each restated day per restatement, as a share of --rows-per-day',
    })
    .option('restate-at-page', {
      type: 'number',
      default: 0,
      describe: 'Restate before answering the Nth continued line-items page (a restatement between two pages of one window)',
    })
    .option('cursor-mode', {
      choices: ['position', 'offset'] as const,
      default: 'position' as const,
      describe: 'position: stable signed cursors; offset: an offset into the data as it is at each request',
    })
    .option('log-requests', { type: 'boolean', default: false, describe: 'Print each request as a JSON line' });
}

type EmulatorArgs = Awaited<ReturnType<typeof emulatorOptions>['argv']>;

/** Turns command-line arguments into emulator options, checking each; `parseKeys` checks a --keys file's contents. */
export function emulatorOptionsFromArgs(args: EmulatorArgs, parseKeys: (value: unknown, source: string) => KeysConfig): EmulatorInput {
  const endDate = args['end-date'] !== undefined ? dateArg('end-date', args['end-date']) : undefined;
  // --days counts back from --end-date, or from today (UTC) without one; --start-date, given, wins.
  const days = intArg('days', args.days, 1, 36_600, 120);
  const startDate =
    args['start-date'] !== undefined ? dateArg('start-date', args['start-date']) : addDays(endDate ?? utcDate(Date.now()), -(days - 1));
  return {
    port: intArg('port', args.port, 0, 65535, 8787),
    host: args.host,
    seed: intArg('seed', args.seed, 0, Number.MAX_SAFE_INTEGER, 1),
    ...(startDate !== undefined ? { startDate } : {}),
    ...(endDate !== undefined ? { endDate } : {}),
    rowsPerDay: intArg('rows-per-day', args['rows-per-day'], 0, 100_000, 200),
    anomaliesPerDay: intArg('anomalies-per-day', args['anomalies-per-day'], 0, 1000, 3),
    anomalyOrder: choiceArg('anomaly-order', args['anomaly-order'], ['asc', 'desc', 'unordered'] as const),
    lineItemOrder: args['line-item-order'],
    lastPageCursor: args['last-page-cursor'],
    rateLimit: intArg('rate-limit', args['rate-limit'], 0, 1_000_000, 60),
    retryAfterHeader: args['retry-after'],
    ...(args.keys !== undefined ? { keys: parseKeys(readJsonFile('keys', args.keys), args.keys) } : {}),
    vendor: args.vendor,
    maxIngestRows: intArg('max-ingest-rows', args['max-ingest-rows'], 1),
    maxBodyBytes: intArg('max-body-bytes', args['max-body-bytes'], 1),
    ingestTooLarge: args['ingest-too-large'],
    ingestInvalidRows: args['ingest-invalid-rows'],
    ingestDuplicateRows: args['ingest-duplicates'],
    ingestRowErrorShape: args['ingest-row-errors'],
    ingestChargePeriodDates: args['ingest-dates'],
    ingestRefuseServices: (args['ingest-refuse-service'] ?? []).map(String),
    ingestSkipServices: (args['ingest-skip-service'] ?? []).map(String),
    serviceRollupFillsProvider: args['service-rollup-fills-provider'],
    pageOverlapRate: rateArg('page-overlap-rate', args['page-overlap-rate']),
    cursorMode: args['cursor-mode'],
    restateAtPage: intArg('restate-at-page', args['restate-at-page'], 0),
    restatement: {
      days: intArg('restate-days', args['restate-days'], 0),
      changeRate: 0.1,
      deleteRate: 0.05,
      addRate: rateArg('restate-add-rate', args['restate-add-rate']),
    },
    faults: {
      latencyMs: intArg('latency-ms', args['latency-ms'], 0),
      latencyJitterMs: intArg('latency-jitter-ms', args['latency-jitter-ms'], 0),
      errorRate: rateArg('error-rate', args['error-rate']),
      dropRate: rateArg('drop-rate', args['drop-rate']),
      truncateRate: rateArg('truncate-rate', args['truncate-rate']),
      malformedRate: rateArg('malformed-rate', args['malformed-rate']),
      cursorExpiryRate: rateArg('cursor-expiry-rate', args['cursor-expiry-rate']),
      cursorTtlMs: intArg('cursor-ttl-ms', args['cursor-ttl-ms'], 0),
      restateEveryRequests: intArg('restate-every', args['restate-every'], 0),
    },
  };
}

/** Starts the emulator, prints its URL as the first line, and serves until SIGINT or SIGTERM. */
export async function runEmulator(
  args: EmulatorArgs,
  out: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
): Promise<Emulator> {
  const { parseKeysConfig, startEmulator } = await import('../emulator/index.js');
  const options = emulatorOptionsFromArgs(args, parseKeysConfig);
  if (args['log-requests']) options.onRequest = (entry) => out(JSON.stringify(entry));
  const emulator = await startEmulator(options);
  out(emulator.url);
  const o = emulator.options;
  out(
    `Cost Data API emulator: data ${o.startDate}..${o.endDate}, ${o.rowsPerDay} line items a day, rate limit ${o.rateLimit ? `${o.rateLimit}/min` : 'off'}, seed ${o.seed}.`,
  );
  if (args.keys === undefined) out('Key: demo-key (every scope, business plan); connection: demo-connection (provider custom).');
  const stop = () => {
    void emulator.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return emulator;
}
