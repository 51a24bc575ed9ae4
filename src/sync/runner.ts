/**
 * One sync run: takes the locks, opens the warehouse and the state, runs the chosen streams
 * (sharing one rate limiter), and records the run in `sync_runs`. Collaborators are passed in.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { createApiClient, keyFingerprint, type ApiClientOptions, type ClientEvent } from '../api/client.js';
import { createRequestLimiter, systemClock, type Clock } from '../api/resilience.js';
import { endpointOf, type Endpoint } from '../api/types.js';
import type { SourceConfig, SyncConfig } from '../config.js';
import { CostsyncError, ExitCode, describeError, isCostsyncError } from '../errors.js';
import type { Logger } from '../log.js';
import { acquireLock, dbLockPath, type Lock } from '../state/lock.js';
import { newRunId } from '../run-id.js';
import { StateStore, removeStateLeftovers } from '../state/store.js';
import type { Warehouse } from '../storage/duckdb.js';
import { drainLake, finishLake, removeLakeLeftovers } from '../storage/parquet.js';
import { writeMetrics } from '../storage/metrics.js';
import { DEFAULT_SEND, SEVERITY_RANK, drainNotifications, webhookTarget, type SendOptions, type WebhookTarget } from '../notify/webhook.js';
import { adoptCompacted, logPublish, openWorkingCopy, publish } from '../storage/publish.js';
import { syncAnomalies } from './anomalies.js';
import { emptyStats, type ProgressListener, type StreamName, type StreamStats, type SyncContext } from './context.js';
import { ProviderRollupExchange } from './reconcile.js';
import { lineItemsStream, rollupsStream } from './streams.js';
import { syncWindowedStream, type StreamOutcome } from './windowed.js';

export type RunOutcome = 'success' | 'stopped' | 'failed';

/** What one source's part of a run did. */
export interface SourceSummary {
  source: string;
  outcome: RunOutcome;
  streams: Partial<Record<StreamName, StreamStats>>;
  requests: number;
  retries: number;
  rateLimited: number;
  warnings: string[];
  stopReason?: string;
  error?: unknown;
}

/** A run: every source's part, and their sums (the worst outcome, the first failure's error). */
export interface RunSummary extends Omit<SourceSummary, 'source'> {
  runId: string;
  startedAt: string;
  endedAt: string;
  sources: SourceSummary[];
}

export interface SyncDeps {
  config: SyncConfig;
  logger: Logger;
  clock?: Clock;
  progress?: ProgressListener;
  /** Set to stop cleanly (SIGTERM, SIGINT): the current page finishes, progress is saved. */
  stopSignal?: { stopped: boolean; reason?: string };
  /** Client settings for tests (fast retries, say). */
  clientOptions?: Partial<ApiClientOptions>;
  /** Webhook send settings for tests (short timeouts and backoff). */
  sendOptions?: Partial<SendOptions>;
}

/** A source's webhooks: the global ones and its own, once each. */
function targetsOf(config: SyncConfig, source: SourceConfig): WebhookTarget[] {
  const targets = [...config.notify, ...(source.notify ?? [])].map((url) => webhookTarget(url, '--notify'));
  return targets.filter((t, i) => targets.findIndex((o) => o.id === t.id) === i);
}

/** The stream a request path belongs to (ingest requests belong to none). */
const STREAM_OF_ENDPOINT: Record<Endpoint, StreamName | null> = {
  lineItems: 'line_items', rollups: 'rollups', anomalies: 'anomalies', ingest: null,
};
function streamOfPath(path: string): StreamName | null {
  const endpoint = endpointOf(path);
  return endpoint === null ? null : STREAM_OF_ENDPOINT[endpoint];
}

/** The lock files of a run: one in the state directory, one beside the database. */
export function lockPaths(config: Pick<SyncConfig, 'stateDir' | 'db'>): string[] {
  return [resolve(config.stateDir, 'costsync.lock'), dbLockPath(config.db)];
}

export async function runSync(deps: SyncDeps): Promise<RunSummary> {
  const { config, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const stop = deps.stopSignal ?? { stopped: false };
  const startedMs = clock.now();
  const startedAt = new Date(startedMs).toISOString();
  const runId = newRunId(startedMs);
  const sources: SourceConfig[] = config.sources ?? [{ name: 'default', baseUrl: config.baseUrl, apiKey: config.apiKey, rateLimit: config.rateLimit }];
  const secrets = [...sources.map((s) => s.apiKey), ...config.notify, ...sources.flatMap((s) => s.notify ?? [])];
  for (const key of secrets) logger.addSecret(key);

  try {
    mkdirSync(config.stateDir, { recursive: true, mode: 0o700 });
    mkdirSync(dirname(resolve(config.db)), { recursive: true });
  } catch (cause) {
    throw new CostsyncError('CS_ERR_STATE_IO', `Cannot create ${config.stateDir} or the database directory: ${(cause as Error).message}`, {
      hint: 'Check that --state-dir and --db point at writable places.', cause,
    });
  }
  const locks: Lock[] = [];
  try {
    for (const path of lockPaths(config)) locks.push(acquireLock(path, `costsync sync (run ${runId})`, new Date(startedMs)));
  } catch (error) {
    for (const lock of locks) lock.release();
    throw error;
  }

  let warehouse: Warehouse | null = null;
  try {
    removeStateLeftovers(config.stateDir);
    warehouse = await openWorkingCopy(config.db, config.stateDir, { lake: config.format === 'parquet' });
    const wh = warehouse;
    // "Running" rows need not reach readers at once: they go out with the run's first publish.
    await wh.transaction(async () => {
      await wh.run('sync/runs_mark_abandoned');
      for (const source of sources) {
        await wh.run('sync/run_start', [runId, startedAt, config.streams.join(','), config.since ?? null, config.until, source.name]);
      }
    }, { publish: false });
    // First finish what a killed or failed run left: Parquet partitions, then the published file.
    const outputs = derivedOutputs(wh, config, sources, runId, clock, logger, deps.sendOptions);
    await outputs.resume();

    const deadline = config.maxRuntimeMs === undefined ? Infinity : startedMs + config.maxRuntimeMs;
    const shouldStop = () => {
      if (!stop.stopped && clock.now() >= deadline) {
        stop.stopped = true;
        stop.reason = `--max-runtime of ${Math.round(config.maxRuntimeMs! / 1000)} s reached`;
      }
      return stop.stopped;
    };
    // Sources run side by side, each with its own key, limiter and state; one failing stops none of the others.
    const parts = await Promise.all(sources.map((source) => syncSource(source, {
      deps, clock, runId, warehouse: wh, shouldStop, afterCommit: () => outputs.afterCommit(), several: sources.length > 1,
    })));
    let summary = combine(runId, startedAt, clock, parts, stop.reason);
    // Whatever the outcome, what was committed reaches the lake and the published file.
    let finished = false;
    try {
      await outputs.finish();
      finished = true;
    } catch (error) {
      if (summary.outcome === 'failed') {
        logger.error(describeError(error, secrets));
      } else {
        const failed = parts.map((p) => ({ ...p, outcome: 'failed' as const, error }));
        for (const part of failed) await recordSource(wh, runId, clock, part, secrets, [], false);
        summary = combine(runId, startedAt, clock, failed, stop.reason);
      }
    }
    // Nothing was written since the last publish: when it compacted, the working copy takes its place.
    if (finished && outputs.compacted) {
      wh.close();
      warehouse = null;
      await adoptCompacted(config.db, wh.path)
        .then(() => logger.info(`the working copy was rebuilt compactly from ${config.db}`))
        .catch((error: unknown) => logger.warn(`the working copy was not rebuilt (it stays as it was, with its data): ${describeError(error, secrets)}`));
    }
    return summary;
  } catch (error) {
    if (warehouse) {
      for (const source of sources) {
        await recordSource(warehouse, runId, clock, sourceSummary(source.name, 'failed', {}, error), secrets, targetsOf(config, source)).catch(() => undefined);
      }
      await derivedOutputs(warehouse, config, sources, runId, clock, logger, deps.sendOptions).finish()
        .catch((e: unknown) => logger.error(describeError(e, secrets)));
    }
    throw error;
  } finally {
    warehouse?.close();
    for (const lock of locks.reverse()) lock.release();
  }
}

interface SourceRun {
  deps: SyncDeps;
  clock: Clock;
  runId: string;
  warehouse: Warehouse;
  shouldStop: () => boolean;
  afterCommit: () => Promise<void>;
  /** Several sources: progress lines are per source. */
  several: boolean;
}

/** One source's part of a run: its state, key, limiter and streams. Never throws: a failure is its outcome. */
async function syncSource(source: SourceConfig, run: SourceRun): Promise<SourceSummary> {
  const { deps, clock, warehouse } = run;
  const { config, logger } = deps;
  const stats = { line_items: emptyStats(), rollups: emptyStats(), anomalies: emptyStats() };
  const streams: Partial<Record<StreamName, StreamStats>> = {};
  for (const name of config.streams) streams[name] = stats[name];
  let client: ReturnType<typeof createApiClient> | null = null;
  let summary: SourceSummary;
  const targets = targetsOf(config, source);
  try {
    const store = new StateStore(config.stateDir, { name: source.name, baseUrl: source.baseUrl, keyFingerprint: keyFingerprint(source.apiKey) }, basename(warehouse.path, '.duckdb'));
    const state = store.load();
    for (const notice of store.notices) logger.warn(notice, { source: source.name });

    const onEvent = (event: ClientEvent) => {
      const endpointStream = streamOfPath(event.path);
      if (endpointStream === null) return;
      // A stream not synced is requested only by another's check (line items fetch their provider rollups).
      const stream = config.streams.includes(endpointStream) ? endpointStream : 'line_items';
      if (event.type === 'request') stats[stream].requests += 1;
      else if (event.type === 'response') stats[stream].responses[event.statusCode] = (stats[stream].responses[event.statusCode] ?? 0) + 1;
      else if (event.type === 'retry') {
        stats[stream].retries += 1;
        logger.debug(`retrying ${event.method} ${event.path}: ${event.message}`, { source: source.name, stream, code: event.code, attempt: event.attempt });
      } else if (event.type === 'rate_limited') {
        stats[stream].rateLimited += 1;
        logger.info(`${source.name}: rate limited: holding requests for ${Math.ceil(event.holdMs / 1000)} s`, { source: source.name, stream });
      }
    };
    // Every stream's windows may have a request in flight: size the limiter and the pool for all.
    const inFlight = Math.max(4, config.concurrency * config.streams.length);
    const limiter = createRequestLimiter({ requestsPerMinute: source.rateLimit, clock, maxConcurrent: inFlight });
    client = createApiClient({
      baseUrl: source.baseUrl, apiKey: source.apiKey, limiter, clock, onEvent, connections: inFlight, ...deps.clientOptions,
    });
    const ctx: SyncContext = {
      client, warehouse, spoolDir: store.spoolDir, state, logger, clock, runId: run.runId, source: source.name, stats,
      saveState: () => store.saveAsync(state, () => new Date(clock.now())),
      shouldStop: run.shouldStop,
      progress: run.several ? perSource(source.name, deps.progress ?? {}) : deps.progress ?? {},
      concurrency: config.concurrency,
      reconcile: config.reconcile,
      ...(config.reconcile !== 'off' && config.streams.includes('line_items') && config.streams.includes('rollups')
        ? { providerRollups: new ProviderRollupExchange() } : {}),
      afterCommit: run.afterCommit,
      ...(targets.length > 0 ? {
        notify: {
          targets: targets.map((t) => t.id), minRank: SEVERITY_RANK[config.notifySeverity],
          cutoff: new Date(clock.now() - config.notifyMaxAgeMs).toISOString(), statusChanges: config.notifyStatusChanges,
        },
      } : {}),
    };
    const windowReq = {
      since: config.since, until: config.until, startDate: config.startDate, lookbackDays: config.lookbackDays,
      windowDays: config.windowDays, fullRefresh: config.fullRefresh,
    };
    const tasks: Promise<StreamOutcome>[] = [];
    if (config.streams.includes('line_items')) tasks.push(syncWindowedStream(lineItemsStream, ctx, windowReq));
    if (config.streams.includes('rollups')) tasks.push(syncWindowedStream(rollupsStream, ctx, windowReq));
    if (config.streams.includes('anomalies')) {
      tasks.push(syncAnomalies(ctx, {
        since: config.since, until: config.until, startDate: config.startDate,
        refreshDays: config.anomalyRefreshDays, fullRefresh: config.fullRefresh,
      }));
    }
    const settled = await Promise.allSettled(tasks);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    const outcome: RunOutcome = failed ? 'failed' : settled.some((s) => s.status === 'fulfilled' && s.value === 'stopped') ? 'stopped' : 'success';
    summary = sourceSummary(source.name, outcome, streams, failed?.reason);
  } catch (error) {
    summary = sourceSummary(source.name, 'failed', streams, error);
  } finally {
    await client?.close().catch(() => undefined);
  }
  if (summary.outcome === 'failed') {
    logger.debug(`${source.name}: failed: ${describeError(summary.error, [source.apiKey])}`, { source: source.name });
  }
  await recordSource(warehouse, run.runId, clock, summary, [source.apiKey, ...targets.map((t) => t.url)], targets);
  return summary;
}

/** Progress of one of several sources: its lines are named `<source>/<stream>`. */
function perSource(source: string, progress: ProgressListener): ProgressListener {
  const name = (stream: StreamName) => `${source}/${stream}` as StreamName;
  // Only the callbacks the listener has: a missing `planned` means nobody reads the estimate.
  return {
    ...(progress.planned && { planned: (stream: StreamName, info: Parameters<NonNullable<ProgressListener['planned']>>[1]) => progress.planned!(name(stream), info) }),
    page: (stream, info) => progress.page?.(name(stream), info),
    windowDone: (stream, info) => progress.windowDone?.(name(stream), info),
  };
}

/**
 * What follows committed rows: the Parquet lake (with `--format parquet`) and the published file.
 * Each is recorded as pending in the commit that causes it (the outbox), so these only produce it.
 */
function derivedOutputs(
  warehouse: Warehouse, config: SyncConfig, sources: readonly SourceConfig[], runId: string, clock: Clock, logger: Logger, sendOptions: Partial<SendOptions> = {},
) {
  let lastPublish = clock.now();
  let compacted = false;
  const doPublish = async () => {
    const result = await publish(warehouse, config.db, { runId, now: () => clock.now() });
    lastPublish = clock.now();
    compacted = result?.method === 'compact';
    logPublish(logger, result);
  };
  // Pending notifications of every source (a killed run's too); a failure is a warning, never the run's.
  const notify = async () => {
    const targets = new Map(sources.flatMap((s) => targetsOf(config, s)).map((t) => [t.id, t]));
    if (targets.size === 0) return;
    const counts = await drainNotifications(warehouse, [...targets.values()], {
      ...DEFAULT_SEND, format: config.notifyFormat, ...sendOptions, now: () => clock.now(), warn: (m) => logger.warn(m),
    });
    await warehouse.transaction(async () => {
      for (const [source, c] of counts) await warehouse.run('notify/record_run', [runId, source, c.sent, c.failed]);
    });
  };
  const lake = async () => {
    if (!warehouse.lake) return;
    const written = await drainLake(warehouse, config.out);
    if (written > 0) logger.debug(`wrote ${written} Parquet partition(s) to ${config.out}`);
  };
  return {
    async resume() {
      if (warehouse.lake) removeLakeLeftovers(config.out);
      await lake();
      await doPublish();
    },
    async afterCommit() {
      await lake();
      if (clock.now() - lastPublish >= config.publishIntervalMs) await doPublish();
    },
    async finish() {
      if (warehouse.lake) await finishLake(warehouse, config.out, { runId, now: () => clock.now() });
      await notify();
      await doPublish();
      if (config.metricsFile !== undefined) await writeMetrics(warehouse, config.metricsFile);
    },
    /** The last publish rewrote the file compactly (free blocks had piled up): the working copy may take its place. */
    get compacted() {
      return compacted;
    },
  };
}

function sourceSummary(source: string, outcome: RunOutcome, streams: Partial<Record<StreamName, StreamStats>>, error: unknown): SourceSummary {
  const all = Object.values(streams);
  return {
    source, outcome, streams,
    requests: all.reduce((n, s) => n + s.requests, 0),
    retries: all.reduce((n, s) => n + s.retries, 0),
    rateLimited: all.reduce((n, s) => n + s.rateLimited, 0),
    warnings: all.flatMap((s) => s.warnings),
    ...(error !== undefined ? { error } : {}),
  };
}

const OUTCOME_RANK: Record<RunOutcome, number> = { success: 0, stopped: 1, failed: 2 };

/** The run from its sources' parts: summed counts, per-stream sums, the worst outcome, the first failure. Pure. */
export function combine(runId: string, startedAt: string, clock: Clock, parts: SourceSummary[], stopReason: string | undefined): RunSummary {
  const streams: Partial<Record<StreamName, StreamStats>> = {};
  for (const part of parts) {
    for (const [name, s] of Object.entries(part.streams) as [StreamName, StreamStats][]) {
      const sum = (streams[name] ??= emptyStats());
      for (const key of ['inserted', 'updated', 'deleted', 'pages', 'requests', 'retries', 'rateLimited', 'refetches'] as const) sum[key] += s[key];
      for (const [status, n] of Object.entries(s.responses)) sum.responses[status] = (sum.responses[status] ?? 0) + n;
      sum.warnings.push(...s.warnings.map((w) => (parts.length > 1 ? `${part.source}: ${w}` : w)));
    }
  }
  const outcome = parts.reduce<RunOutcome>((worst, p) => (OUTCOME_RANK[p.outcome] > OUTCOME_RANK[worst] ? p.outcome : worst), 'success');
  const failure = parts.find((p) => p.outcome === 'failed');
  return {
    runId, outcome, startedAt, endedAt: new Date(clock.now()).toISOString(), streams, sources: parts,
    requests: parts.reduce((n, p) => n + p.requests, 0),
    retries: parts.reduce((n, p) => n + p.retries, 0),
    rateLimited: parts.reduce((n, p) => n + p.rateLimited, 0),
    warnings: Object.values(streams).flatMap((s) => s.warnings),
    ...(stopReason && outcome === 'stopped' ? { stopReason } : {}),
    ...(failure ? { error: failure.error } : {}),
  };
}

/**
 * Records a source's outcome; a failed or stopped run also records its notification for each
 * webhook in the same transaction (the outbox), sent after the commit.
 */
async function recordSource(
  warehouse: Warehouse, runId: string, clock: Clock, summary: SourceSummary, secrets: string[], targets: readonly WebhookTarget[], withStreams = true,
): Promise<void> {
  const endedAt = new Date(clock.now()).toISOString();
  await warehouse.transaction(async () => {
    if (summary.outcome !== 'success') {
      const kind = summary.outcome === 'failed' ? 'run_failed' : 'run_stopped';
      const error = summary.error;
      const event = {
        kind, source: summary.source, run_id: runId,
        exit_code: summary.outcome === 'stopped' ? ExitCode.STOPPED_EARLY : isCostsyncError(error) ? error.exitCode : ExitCode.FAILED,
        reason: summary.outcome === 'stopped' ? (summary.stopReason ?? 'stopped before the end; progress is saved') : describeError(error, secrets).split('\n')[0],
        fix: summary.outcome === 'stopped' ? 'Run the same command again to go on.' : (isCostsyncError(error) ? error.hint ?? null : null),
      };
      const eventId = createHash('sha256').update(`${runId}:${summary.source}:${kind}`).digest('hex').slice(0, 32);
      for (const target of targets) await warehouse.run('notify/run_event', [eventId, target.id, summary.source, kind, JSON.stringify(event), endedAt]);
    }
    await warehouse.run('sync/run_finish', [
      runId, endedAt, summary.outcome, summary.requests, summary.retries, summary.rateLimited,
      JSON.stringify(summary.warnings), summary.error === undefined ? null : describeError(summary.error, secrets), summary.source,
    ]);
    for (const [stream, s] of withStreams ? Object.entries(summary.streams) : []) {
      await warehouse.run('sync/run_stream', [
        runId, stream, s.inserted, s.updated, s.deleted, s.pages, s.requests, s.retries, s.rateLimited, JSON.stringify(s.warnings), s.refetches, summary.source,
        JSON.stringify(s.responses),
      ]);
    }
  });
}
