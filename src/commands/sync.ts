/** `costsync sync`: resolves the configuration, runs the sync, prints what changed, picks the exit code. */
import type { Argv } from 'yargs';
import { ExitCode, describeError, errorFields, isCostsyncError, redact } from '../errors.js';
import type { SyncConfig } from '../config.js';
import { loadConfig, makeLogger, processIo, warnShortSecrets, type CommandIo } from './common.js';
import { createLogger } from '../log.js';
import { settingOptions } from '../settings.js';
import { sendNow } from '../outputs/notify.js';
import { gatherMetrics, prometheusText, writeRefusedRunMetrics } from '../outputs/metrics.js';
import { isS3Url } from '../outputs/s3-url.js';
import { checkLakeFormat } from '../outputs/iceberg.js';
import { directoryTarget } from '../outputs/target.js';
import { openReadOnly } from '../storage/duckdb.js';
import { existsSync } from 'node:fs';
import { createProgress, runSummaryText } from '../progress.js';
import { runSync, type RunSummary } from '../sync/runner.js';
import { dryRunText, planDryRun } from '../sync/dry-run.js';
import { phasePlanLines } from '../sync/phase-plan.js';

export function syncOptions(yargs: Argv): Argv {
  return settingOptions(yargs, ['connection', 'rate', 'notify', 'sync', 'lease', 'catalog']).option('dry-run', {
    type: 'boolean',
    describe:
      'Print the plan (windows, requests expected, time at the rate limit, what the lookback re-reads); the recheck (3 rollups requests, as the run makes them) and at most three more (a line-items page when nothing stored prices them, the provider rollups, the first anomalies request), nothing written',
  });
}

/** Sends a run's failure straight to the webhooks, for failures that cannot use the outbox. Never throws. */
async function notifyDirectly(urls: string[], format: 'json' | 'slack', reason: string, warn: (m: string) => void): Promise<void> {
  const event = {
    kind: 'run_failed' as const,
    source: 'all',
    event_id: `locked-${Date.now()}`,
    run_id: '(not started)',
    exit_code: ExitCode.LOCKED,
    reason,
  };
  for (const r of await sendNow(urls, event, format)) if (r.error !== undefined) warn(`notification not sent: ${r.error}`);
}

/** The published warehouse's metrics (readers never wait on a run's lock), or null when there is no local one. */
async function publishedMetrics(db: string): Promise<string | null> {
  if (isS3Url(db) || !existsSync(db)) return null;
  const wh = await openReadOnly(db);
  try {
    return prometheusText(await gatherMetrics(wh, 'published'));
  } finally {
    wh.close();
  }
}

/** What a shard that owns no source says. Pure. */
export function emptyShardText(shard: NonNullable<SyncConfig['shard']>): string {
  const n = shard.sourcesBeforeSplit;
  const of = shard.narrowedBySource
    ? `the ${n} source${n === 1 ? '' : 's'} --source names`
    : `the config's ${n} source${n === 1 ? '' : 's'}`;
  return `Shard ${shard.index}/${shard.count} owns none of ${of} (each source goes to one of the ${shard.count} shards by its name): nothing to sync.`;
}

/** The run's exit code: the worst of its sources' (a failure over a stop; among failures the highest code). */
export function exitCodeOf(summary: RunSummary): ExitCode {
  if (summary.outcome === 'success') return ExitCode.OK;
  if (summary.outcome === 'stopped') return ExitCode.STOPPED_EARLY;
  const codes = summary.sources
    .filter((s) => s.outcome === 'failed')
    .map((s) => (isCostsyncError(s.error) ? s.error.exitCode : ExitCode.FAILED));
  return codes.length === 0
    ? isCostsyncError(summary.error)
      ? summary.error.exitCode
      : ExitCode.FAILED
    : (Math.max(...codes) as ExitCode);
}

/**
 * `sync --dry-run`: prints the plan. A source that could not be planned because of a setting (a wrong
 * key, an unreachable URL) is logged as the run would log it, and the exit code is the run's: the worst.
 */
async function runDryRun(config: SyncConfig, io: CommandIo): Promise<ExitCode> {
  // Refused as the run would be: a directory lake that holds the other format (a bucket's is the run's to check).
  if (config.format !== 'duckdb' && config.catalog === null && !isS3Url(config.out))
    await checkLakeFormat(directoryTarget(config.out), config.format === 'iceberg' ? 'iceberg' : 'parquet');
  const { plans, failed, phases } = await planDryRun(config, io.now());
  const several = plans.length + failed.length > 1;
  const secrets = [config.apiKey, ...(config.sources ?? []).map((s) => s.apiKey)];
  if (failed.length > 0) {
    const logger = makeLogger(config, io);
    for (const key of secrets) logger.addSecret(key);
    for (const { source, error } of failed)
      logger.error(`${several ? `${source}: ` : ''}${describeError(error, secrets)}`, { ...errorFields(error, config.verbose), source });
  }
  if (config.logFormat === 'json') {
    const notPlanned = failed.map(({ source, error }) => ({
      source,
      code: error.code,
      exitCode: error.exitCode,
      message: redact(error.message, secrets),
      ...(error.hint !== undefined && { hint: redact(error.hint, secrets) }),
    }));
    io.stdout(`${JSON.stringify({ dryRun: true, phases, sources: plans, ...(failed.length > 0 && { failed: notPlanned }) })}\n`);
  } else {
    const lake = config.catalog !== null ? `the Iceberg tables of ${config.catalog.url}` : `the lake at ${config.out}`;
    io.stdout(
      dryRunText(
        plans,
        several,
        failed.map((f) => f.source),
        // A run that could plan no source would fail before its phases: they are not said.
        plans.length > 0
          ? phasePlanLines(
              phases,
              config.db,
              lake,
              plans.flatMap((p) => p.streams.filter((st) => st.resumed).map((st) => (several ? `${p.source}/${st.stream}` : st.stream))),
            )
          : undefined,
      ),
    );
  }
  return failed.length === 0 ? ExitCode.OK : (Math.max(...failed.map((f) => f.error.exitCode)) as ExitCode);
}

export async function runSyncCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  const config = loadConfig(args, io);
  // A shard that owns no source opens nothing (no lock, no warehouse, no lake): there is nothing to sync.
  if (config.shard !== undefined && config.sources?.length === 0) {
    const text = emptyShardText(config.shard);
    if (config.quiet) return ExitCode.OK;
    if (config.logFormat === 'json') {
      const line = createLogger({ format: 'json', write: (l) => io.stdout(`${l}\n`), now: io.now });
      line.info(text, {
        shard: `${config.shard.index}/${config.shard.count}`,
        sources: 0,
        sourcesBeforeSplit: config.shard.sourcesBeforeSplit,
      });
    } else io.stdout(`${text}\n`);
    return ExitCode.OK;
  }
  if (args['dry-run'] === true) return runDryRun(config, io);
  const webhooks = [...config.notify, ...(config.sources ?? []).flatMap((s) => s.notify ?? [])];
  const secrets = [config.apiKey, ...(config.sources ?? []).map((s) => s.apiKey), ...webhooks];
  const logger = makeLogger(config, io);
  for (const key of secrets) logger.addSecret(key);
  warnShortSecrets(config, logger);
  const live = config.logFormat === 'pretty' && io.isTTY && !config.quiet;
  const progress = createProgress({
    live,
    logger,
    write: io.stderr,
    requestsPerMinute: config.rateLimit,
    now: io.now,
    eventIntervalMs: config.logFormat === 'json' ? 30_000 : 0,
    sources: config.sources?.length ?? 1,
  });
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      // A second Ctrl-C (or SIGTERM): at once. Nothing is lost: progress is only recorded after what it describes is durable.
      logger.warn(`${signal} again: exiting now; the next run goes on from the last saved progress`);
      process.exit(ExitCode.STOPPED_EARLY);
    }
    logger.warn(
      `${signal}: stopping now with progress saved (requests in flight are fetched again next run); ${signal === 'SIGINT' ? 'Ctrl-C' : 'the signal'} again exits at once`,
    );
    stop.abort(`${signal} received`);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // A reader that went away (`| head`) stops the run as SIGTERM does: never an exit 0 that did half the work.
  const unwatchPipes = io.onClosedPipe?.((which) => {
    if (!stop.signal.aborted) stop.abort(`${which} was closed`);
  });
  const startedMs = io.now();
  try {
    const summary = await runSync({ config, logger, progress, signal: stop.signal, env: io.env });
    progress.finish();
    for (const part of summary.sources.filter((s) => s.outcome === 'failed')) {
      const prefix = summary.sources.length > 1 ? `${part.source}: ` : '';
      logger.error(`${prefix}${describeError(part.error, secrets)}`, {
        ...errorFields(part.error, config.verbose),
        runId: summary.runId,
        source: part.source,
      });
    }
    if (summary.outcome === 'failed' && !summary.sources.some((s) => s.outcome === 'failed')) {
      logger.error(describeError(summary.error, secrets), { ...errorFields(summary.error, config.verbose), runId: summary.runId });
    }
    // The summary is the run's output: on stdout (`sync > run.log` keeps it); logs go to stderr.
    if (config.logFormat === 'json' && !config.quiet) {
      const summaryLog = createLogger({ format: 'json', secrets, write: (line) => io.stdout(`${line}\n`), now: io.now });
      summaryLog.info('sync finished', {
        runId: summary.runId,
        outcome: summary.outcome,
        ...(summary.stopReason ? { stopReason: summary.stopReason } : {}),
        streams: summary.streams,
        requests: summary.requests,
        retries: summary.retries,
        rateLimited: summary.rateLimited,
        warnings: summary.warnings.length,
        sources: summary.sources.map((s) => ({ source: s.source, outcome: s.outcome, requests: s.requests, warnings: s.warnings.length })),
        ...(summary.lakeTables !== undefined && { lakeTables: summary.lakeTables }),
        ...(summary.lakeSnapshots !== undefined && { lakeSnapshots: summary.lakeSnapshots }),
      });
    } else if (!config.quiet && config.logFormat !== 'json') {
      io.stdout(`\n${runSummaryText(summary.sources, summary.streams)}\n`);
      if (summary.lakeTables !== undefined && config.catalog !== null) {
        const snapshots = Object.entries(summary.lakeSnapshots?.snapshots ?? {}).map(([t, id]) => `${t} ${id ?? 'none'}`);
        io.stdout(`Iceberg tables in ${summary.lakeSnapshots?.where ?? config.catalog.url} (current snapshot): ${snapshots.join(', ')}\n`);
      } else if (summary.lakeTables !== undefined) {
        const versions = Object.entries(summary.lakeTables).map(
          ([t, file]) => `${t} ${/v\d+(?=\.metadata\.json$)/.exec(file)?.[0] ?? file}`,
        );
        io.stdout(`Iceberg tables in ${config.out} (current metadata): ${versions.join(', ')}\n`);
      }
      const end =
        summary.outcome === 'stopped'
          ? `Stopped early (${summary.stopReason ?? 'stop requested'}); progress is saved: run the same command again to go on.`
          : summary.outcome === 'success'
            ? `Done: run ${summary.runId}.`
            : `Failed: run ${summary.runId}; progress up to the failure is saved.`;
      io.stdout(`${end}\n`);
    }
    for (const w of summary.warnings.slice(0, 20)) if (config.logFormat !== 'json') io.stderr(`warning: ${w}\n`);
    await io.flushed?.();
    // The exit code says what the run records say (sync_runs, the metrics): a reader that went away after the
    // run had finished its work changes neither (one that went before stopped the run, recorded as stopped).
    return exitCodeOf(summary);
  } catch (error) {
    progress.finish();
    logger.error(describeError(error, secrets), errorFields(error, config.verbose));
    const code = isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
    // Another run holds the warehouse: nothing can be recorded in its outbox, so say so directly (best effort).
    if (code === ExitCode.LOCKED) await notifyDirectly(webhooks, config.notifyFormat, describeError(error, secrets), (m) => logger.warn(m));
    // The warehouse is another run's, but a collector still reads this run's outcome (the docs: after every run).
    if (code === ExitCode.LOCKED && config.metricsFile !== undefined) {
      const sources = config.sources?.map((s) => s.name) ?? ['default'];
      await writeRefusedRunMetrics(config.metricsFile, { sources, startedS: startedMs / 1000, endedS: io.now() / 1000 }, () =>
        publishedMetrics(config.db),
      ).catch((e: unknown) => logger.warn(`the metrics file ${config.metricsFile} could not be written: ${describeError(e, secrets)}`));
    }
    return code;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    unwatchPipes?.();
  }
}
