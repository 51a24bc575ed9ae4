/**
 * One sync run: takes the locks, opens the warehouse and the state, runs the chosen streams
 * (sharing one rate limiter), and records the run in `sync_runs`. Collaborators are passed in.
 */
import { mkdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createApiClient, keyFingerprint, type ApiClientOptions, type ClientEvent } from '../api/client.js';
import { createRequestLimiter, systemClock, type Clock } from '../api/resilience.js';
import { endpointOf, type Endpoint } from '../api/types.js';
import type { SyncConfig } from '../config.js';
import { CostsyncError, describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { acquireLock, dbLockPath, type Lock } from '../state/lock.js';
import { newRunId } from '../run-id.js';
import { StateStore, removeStateLeftovers } from '../state/store.js';
import type { Warehouse } from '../storage/duckdb.js';
import { drainLake, finishLake, removeLakeLeftovers } from '../storage/parquet.js';
import { openWorkingCopy, publish } from '../storage/publish.js';
import { syncAnomalies } from './anomalies.js';
import { emptyStats, type ProgressListener, type StreamName, type StreamStats, type SyncContext } from './context.js';
import { ProviderRollupExchange } from './reconcile.js';
import { lineItemsStream, rollupsStream } from './streams.js';
import { syncWindowedStream, type StreamOutcome } from './windowed.js';

export type RunOutcome = 'success' | 'stopped' | 'failed';

export interface RunSummary {
  runId: string;
  outcome: RunOutcome;
  startedAt: string;
  endedAt: string;
  streams: Partial<Record<StreamName, StreamStats>>;
  requests: number;
  retries: number;
  rateLimited: number;
  warnings: string[];
  stopReason?: string;
  error?: unknown;
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
  logger.addSecret(config.apiKey);

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
  const streams: Partial<Record<StreamName, StreamStats>> = {};
  const stats = { line_items: emptyStats(), rollups: emptyStats(), anomalies: emptyStats() };
  for (const name of config.streams) streams[name] = stats[name];
  let client: ReturnType<typeof createApiClient> | null = null;
  let summary: RunSummary | null = null;
  const lake = config.format === 'parquet';
  try {
    const fingerprint = keyFingerprint(config.apiKey);
    const store = new StateStore(config.stateDir, { baseUrl: config.baseUrl, keyFingerprint: fingerprint });
    const state = store.load();
    removeStateLeftovers(config.stateDir);
    warehouse = await openWorkingCopy(config.db, config.stateDir, { lake });
    const wh = warehouse;
    // A "running" row need not reach readers at once: it goes out with the run's first publish.
    await wh.transaction(async () => {
      await wh.run('sync/runs_mark_abandoned');
      await wh.run('sync/run_start', [runId, startedAt, config.streams.join(','), config.since ?? null, config.until]);
    }, { publish: false });
    // First finish what a killed or failed run left: Parquet partitions, then the published file.
    const outputs = derivedOutputs(wh, config, runId, clock, logger);
    await outputs.resume();

    const onEvent = (event: ClientEvent) => {
      const endpointStream = streamOfPath(event.path);
      if (endpointStream === null) return;
      // A stream not synced is requested only by another's check (line items fetch their provider rollups).
      const stream = config.streams.includes(endpointStream) ? endpointStream : 'line_items';
      if (event.type === 'request') stats[stream].requests += 1;
      else if (event.type === 'retry') {
        stats[stream].retries += 1;
        logger.debug(`retrying ${event.method} ${event.path}: ${event.message}`, { stream, code: event.code, attempt: event.attempt });
      } else if (event.type === 'rate_limited') {
        stats[stream].rateLimited += 1;
        logger.info(`rate limited: holding requests for ${Math.ceil(event.holdMs / 1000)} s`, { stream });
      }
    };
    // Every stream's windows may have a request in flight: size the limiter and the pool for all.
    const inFlight = Math.max(4, config.concurrency * config.streams.length);
    const limiter = createRequestLimiter({ requestsPerMinute: config.rateLimit, clock, maxConcurrent: inFlight });
    client = createApiClient({
      baseUrl: config.baseUrl, apiKey: config.apiKey, limiter, clock, onEvent, connections: inFlight, ...deps.clientOptions,
    });

    const deadline = config.maxRuntimeMs === undefined ? Infinity : startedMs + config.maxRuntimeMs;
    const ctx: SyncContext = {
      client, warehouse: wh, spoolDir: join(config.stateDir, 'spool', basename(store.path, '.json')), state, logger, clock, runId, stats,
      saveState: () => store.saveAsync(state, () => new Date(clock.now())),
      shouldStop: () => {
        if (!stop.stopped && clock.now() >= deadline) {
          stop.stopped = true;
          stop.reason = `--max-runtime of ${Math.round(config.maxRuntimeMs! / 1000)} s reached`;
        }
        return stop.stopped;
      },
      progress: deps.progress ?? {},
      concurrency: config.concurrency,
      reconcile: config.reconcile,
      ...(config.reconcile !== 'off' && config.streams.includes('line_items') && config.streams.includes('rollups')
        ? { providerRollups: new ProviderRollupExchange() } : {}),
      afterCommit: () => outputs.afterCommit(),
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
    summary = finish(runId, outcome, startedAt, clock, streams, failed?.reason, stop.reason);
    await recordRun(wh, summary, config.apiKey);
    // Whatever the outcome, what was committed reaches the lake and the published file.
    try {
      await outputs.finish();
    } catch (error) {
      if (summary.outcome !== 'failed') {
        summary = finish(runId, 'failed', startedAt, clock, streams, error, stop.reason);
        await recordRun(wh, summary, config.apiKey);
      } else {
        logger.error(describeError(error, [config.apiKey]));
      }
    }
    return summary;
  } catch (error) {
    if (warehouse) {
      const failed = finish(runId, 'failed', startedAt, clock, streams, error, undefined);
      await recordRun(warehouse, failed, config.apiKey).catch(() => undefined);
      await derivedOutputs(warehouse, config, runId, clock, logger).finish()
        .catch((e: unknown) => logger.error(describeError(e, [config.apiKey])));
    }
    throw error;
  } finally {
    await client?.close().catch(() => undefined);
    warehouse?.close();
    for (const lock of locks.reverse()) lock.release();
  }
}

/**
 * What follows committed rows: the Parquet lake (with `--format parquet`) and the published file.
 * Each is recorded as pending in the commit that causes it (the outbox), so these only produce it.
 */
function derivedOutputs(warehouse: Warehouse, config: SyncConfig, runId: string, clock: Clock, logger: Logger) {
  let lastPublish = clock.now();
  const doPublish = async () => {
    const result = await publish(warehouse, config.db, { runId, now: () => clock.now() });
    lastPublish = clock.now();
    if (result) {
      logger.info(`published ${result.path} (${result.bytes} bytes, ${result.seconds.toFixed(2)} s)`, {
        file: result.path, bytes: result.bytes, seconds: result.seconds, method: result.method,
      });
    }
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
      await doPublish();
    },
  };
}

function finish(
  runId: string, outcome: RunOutcome, startedAt: string, clock: Clock,
  streams: Partial<Record<StreamName, StreamStats>>, error: unknown, stopReason: string | undefined,
): RunSummary {
  const all = Object.values(streams);
  return {
    runId, outcome, startedAt, endedAt: new Date(clock.now()).toISOString(), streams,
    requests: all.reduce((n, s) => n + s.requests, 0),
    retries: all.reduce((n, s) => n + s.retries, 0),
    rateLimited: all.reduce((n, s) => n + s.rateLimited, 0),
    warnings: all.flatMap((s) => s.warnings),
    ...(stopReason ? { stopReason } : {}),
    ...(error !== undefined ? { error } : {}),
  };
}

async function recordRun(warehouse: Warehouse, summary: RunSummary, apiKey: string): Promise<void> {
  await warehouse.transaction(async () => {
    await warehouse.run('sync/run_finish', [
      summary.runId, summary.endedAt, summary.outcome, summary.requests, summary.retries, summary.rateLimited,
      JSON.stringify(summary.warnings), summary.error === undefined ? null : describeError(summary.error, [apiKey]),
    ]);
    for (const [stream, s] of Object.entries(summary.streams)) {
      await warehouse.run('sync/run_stream', [
        summary.runId, stream, s.inserted, s.updated, s.deleted, s.pages, s.requests, s.retries, s.rateLimited, JSON.stringify(s.warnings), s.refetches,
      ]);
    }
  });
}
