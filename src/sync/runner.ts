/**
 * One sync run: opens it (`run-context.ts`: locks, leases, the working copy), runs each source's
 * streams side by side (each with its own key, limiter and state), records the run in `sync_runs`,
 * and brings the outputs up to date.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { createApiClient, retryLine, type ApiClient, type ApiClientOptions, type ClientEvent } from '../api/client.js';
import { eventId } from '../fingerprint.js';
import { createRequestLimiter, systemClock, type Clock, type RequestLimiter } from '../api/resilience.js';
import { endpointOf, type Endpoint } from '../api/types.js';
import { configSources, type SyncConfig } from '../config.js';
import type { SourceConfig } from '../sources.js';
import { CostsyncError, ExitCode, describeError, diskFullError, errorFields, isCostsyncError, isFenced } from '../errors.js';
import type { IcebergCatalog } from '../iceberg/catalog.js';
import { openRestTables } from '../outputs/iceberg-catalog.js';
import { catalogSecrets } from '../iceberg/rest-auth.js';
import type { Logger } from '../log.js';
import { newRunId } from '../run-id.js';
import { CarriedCopy, SourceState, carriedIn, fileAndWarehouse, openSourceStore } from '../state/source-state.js';
import type { Warehouse } from '../storage/duckdb.js';
import { mark } from '../storage/outbox.js';
import { derivedOutputs } from '../outputs/derived.js';
import { icebergSeedLake, parquetSeedLake, seedFromLake } from '../outputs/lake-seed.js';
import { directoryCatalog } from '../iceberg/table.js';
import { SEVERITY_RANK, parseWebhook, type SendOptions, type Webhook } from '../outputs/notify.js';
import { adoptCompacted } from '../storage/working-copy.js';
import { openRun, type OpenRun } from '../run-context.js';
import { anomalyRequest, syncAnomalies } from './anomalies.js';
import { RunStop, memoryError, v8HeapProbe, type HeapProbe } from './run-stop.js';
import { emptyStats, type ProgressListener, type StreamName, type StreamStats, type SyncContext } from './context.js';
import { PageSlots, SPOOL_WAIT_PAGES, slotsForHeap } from './page-slots.js';
import { ProviderRollupExchange } from './reconcile.js';
import { RollupsOnHand } from './rollups-on-hand.js';
import { warehouseLookups, type SourceLookups } from './lookups.js';
import { lineItemsStream, rollupsStream, runChecks } from './streams.js';
import { mapAtMost } from '../at-most.js';
import { syncWindowedStream, windowRequest, type StreamOutcome } from './windowed.js';
import { restatedCounts, summarizeDates } from '../plan/horizon.js';
import { NO_RECHECK, recheckSettings, recheckSource } from './recheck.js';
import { SOURCES_PER_CORE } from '../settings.js';
import { leftUndone, leftUndoneText, phasePlan } from './phase-plan.js';

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
  /** With `--format iceberg`: each lake table's current metadata file. */
  lakeTables?: Record<string, string>;
  /** With `--format iceberg`: where the tables are (the directory, or the catalog and namespace) and each one's current snapshot. */
  lakeSnapshots?: { where: string | null; snapshots: Record<string, number | null> };
}

export interface SyncDeps {
  config: SyncConfig;
  logger: Logger;
  clock?: Clock;
  progress?: ProgressListener;
  /**
   * Abort to stop cleanly (SIGTERM, SIGINT), with the reason as a string: requests in flight are cut,
   * waits end, what was fetched is stored, progress is saved.
   */
  signal?: AbortSignal;
  /** With `--catalog`: opens the REST catalog the Iceberg tables are committed through. */
  icebergCatalog?: () => Promise<IcebergCatalog>;
  /** Client settings for tests (fast retries, say). */
  clientOptions?: Partial<ApiClientOptions>;
  /** Webhook send settings for tests (short timeouts and backoff). */
  sendOptions?: Partial<SendOptions>;
  /** The heap's use and limit (V8's by default; tests pass one that runs short). */
  heap?: HeapProbe;
  /** The command's environment, where a bucket's endpoint, region and keys come from (process.env by default). */
  env?: NodeJS.ProcessEnv;
}

/** A source's webhooks: the global ones and its own, once each. */
function webhooksOf(config: SyncConfig, source: SourceConfig): Webhook[] {
  const webhooks = [...config.notify, ...(source.notify ?? [])].map((url) => parseWebhook(url, '--notify'));
  return webhooks.filter((t, i) => webhooks.findIndex((o) => o.id === t.id) === i);
}

/** The stream a request path belongs to (ingest requests belong to none). */
const STREAM_OF_ENDPOINT: Record<Endpoint, StreamName | null> = {
  lineItems: 'line_items',
  rollups: 'rollups',
  anomalies: 'anomalies',
  ingest: null,
};
function streamOfPath(path: string): StreamName | null {
  const endpoint = endpointOf(path);
  return endpoint === null ? null : STREAM_OF_ENDPOINT[endpoint];
}

/** Every secret the run holds (keys, webhook URLs, the catalog's credentials), for the logger to hide. Pure. */
function runSecrets(config: SyncConfig, sources: readonly SourceConfig[]): string[] {
  return [
    ...sources.map((s) => s.apiKey),
    ...config.notify,
    ...sources.flatMap((s) => s.notify ?? []),
    ...(config.catalog === null ? [] : catalogSecrets(config.catalog.env)),
  ];
}

/** What every step of a sync run shares once it is open. */
interface OpenSync {
  deps: SyncDeps;
  clock: Clock;
  stop: RunStop;
  runId: string;
  startedMs: number;
  startedAt: string;
  sources: SourceConfig[];
  secrets: string[];
  run: OpenRun;
  catalog: (IcebergCatalog & { close?: () => Promise<void> }) | null;
}

/**
 * A sync run in named steps: open (the lock, the warehouse, the lake, the catalog), the sources' runs,
 * the outputs and the run records, then close, in one `finally` whatever happened.
 */
export async function runSync(deps: SyncDeps): Promise<RunSummary> {
  const { config, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const stop = new RunStop(clock, deps.signal);
  const startedMs = clock.now();
  const runId = newRunId(startedMs);
  const sources = configSources(config);
  const secrets = runSecrets(config, sources);
  for (const key of secrets) logger.addSecret(key);
  let run: OpenRun;
  try {
    run = await openRun({
      config,
      runId,
      command: `costsync sync (run ${runId})`,
      clock,
      logger,
      sources: sources.map((s) => s.name),
      kind: 'sync',
      ...(deps.env !== undefined && { env: deps.env }),
    });
  } catch (error) {
    stop.dispose();
    throw error;
  }
  const open: OpenSync = {
    deps,
    clock,
    stop,
    runId,
    startedMs,
    startedAt: new Date(startedMs).toISOString(),
    sources,
    secrets,
    run,
    catalog: null,
  };
  // The working copy, until a compacted publish replaces it (then it is closed already).
  let warehouse: Warehouse | null = run.warehouse;
  let opened = false;
  try {
    // The catalog is asked first, before any request to the API: a wrong URL or credential ends the run at once.
    open.catalog = await openCatalog(open);
    opened = true;
    const summary = await syncOpened(open);
    if (summary.compacted) {
      run.warehouse.close();
      warehouse = null;
      await adoptWorkingCopy(open);
    }
    return summary.summary;
  } catch (error) {
    // A run that got as far as its sources records them as failed, and brings its outputs up to date.
    if (opened && warehouse) await recordFailure(open, warehouse, error);
    throw error;
  } finally {
    stop.dispose();
    warehouse?.close();
    await open.catalog?.close?.().catch(() => undefined);
    await run.release();
  }
}

/** With --catalog (or a test's), the REST catalog the Iceberg tables are committed through; else null. */
async function openCatalog({ deps, clock, run }: OpenSync): Promise<OpenSync['catalog']> {
  const { config, logger } = deps;
  if (deps.icebergCatalog !== undefined) return deps.icebergCatalog();
  if (config.catalog === null || run.lake === null) return null;
  return openRestTables(config.catalog, {
    env: config.catalog.env,
    awsEnv: deps.env,
    clock,
    // Not the run's stop: a stopped run still brings the lake up to date, as with directory tables.
    logger,
    out: config.out,
    scratchRoot: resolve(config.stateDir, 'lake-scratch'),
  });
}

/** The run's derived outputs over `wh`: the lake, the published file, notifications and metrics. */
function outputsOf({ deps, clock, runId, sources, secrets, run, catalog, stop }: OpenSync, wh: Warehouse) {
  const { config, logger } = deps;
  return derivedOutputs({
    warehouse: wh,
    runId,
    clock,
    logger,
    sources: sources.map((s) => s.name),
    lake: run.lake,
    db: run.db,
    publishIntervalMs: config.publishIntervalMs,
    webhooks: [...new Map(sources.flatMap((s) => webhooksOf(config, s)).map((t) => [t.id, t])).values()],
    notifyFormat: config.notifyFormat,
    sendOptions: deps.sendOptions,
    metricsFile: config.metricsFile,
    secrets,
    guard: () => run.leases?.check(),
    lakeFormat: config.format === 'iceberg' ? 'iceberg' : 'parquet',
    icebergRetentionMs: config.icebergRetentionMs,
    icebergMaintenance: config.icebergMaintenance,
    icebergRepair: config.icebergRepair,
    icebergCatalog: catalog === null ? undefined : async () => catalog,
    signal: stop.signal,
  });
}

/**
 * The run once open, in its phases: a moved source read back from the lake, the run's start, the
 * sources, then the outputs and the verdict. `compacted`: the publish compacted, so the working copy is
 * to be replaced (after it is closed).
 */
async function syncOpened(open: OpenSync): Promise<{ summary: RunSummary; compacted: boolean }> {
  await seedMovedSources(open);
  const outputs = await startRun(open);
  const parts = await runSources(open, outputs);
  return finishRun(open, outputs, parts);
}

/**
 * A source new to this warehouse whose rows are in a shared lake (moved from another runner) is read
 * back first: the lake's start check would take their absence for deletions.
 */
async function seedMovedSources({ deps, sources, run, catalog }: OpenSync): Promise<void> {
  const { config, logger } = deps;
  const { lake } = run;
  if (lake === null || config.format === 'duckdb') return;
  const seedLake = config.format === 'parquet' ? parquetSeedLake(lake) : icebergSeedLake(lake, catalog ?? directoryCatalog(lake));
  await seedFromLake(
    run.warehouse,
    seedLake,
    sources.map((s) => s.name),
    logger,
  );
}

/**
 * The run's start: its rows in `sync_runs` (an earlier run's left "running" marked abandoned), the stop's
 * watch, then what a killed or failed run left finished (Parquet partitions, the published file).
 * Returns the run's outputs.
 */
async function startRun(open: OpenSync): Promise<RunOutputs> {
  const { deps, stop, runId, startedMs, startedAt, sources, run } = open;
  const { config, logger } = deps;
  const wh = run.warehouse;
  // "Running" rows need not reach readers at once: they go out with the run's first publish.
  await wh.transaction(
    async () => {
      await wh.run('sync/runs_mark_abandoned');
      for (const source of sources) {
        await wh.run('sync/run_start', [runId, startedAt, config.streams.join(','), config.since ?? null, config.until, source.name]);
      }
    },
    { publish: false },
  );
  // --max-runtime counts from here on too: a lake's backlog that a stopped run left is no exception.
  stop.watch({ startedMs, maxRuntimeMs: config.maxRuntimeMs, heap: deps.heap ?? v8HeapProbe, logger });
  // What an earlier run left, said as the dry run says it (phase-plan.ts), then finished first.
  const left = leftUndoneText(phasePlan(config, sources, new Set(), await leftUndone(wh)).resume, config.db);
  if (left !== null) logger.info(`first, what an earlier run left undone: ${left}`);
  const outputs = outputsOf(open, wh);
  await outputs.resume();
  return outputs;
}

/**
 * Each source's part, side by side, each with its own key, limiter and state; one failing stops none of
 * the others. Each records its outcome as it ends.
 */
async function runSources(open: OpenSync, outputs: RunOutputs): Promise<SourceSummary[]> {
  const { deps, clock, stop, runId, sources, run } = open;
  const { config, logger } = deps;
  const wh = run.warehouse;
  // Pages in memory are bounded by the heap, whatever the number of sources.
  const pageSlots = new PageSlots(slotsForHeap((deps.heap ?? v8HeapProbe)().limit));
  const spoolSlots = new PageSlots(SPOOL_WAIT_PAGES);
  const carried = new Map((await wh.query<{ source: string; state: string }>('state/carried_all')).map((r) => [r.source, r.state]));
  const lookups = warehouseLookups(wh);
  // Past --sources-at-once, the others wait their turn: beyond what the machine's cores can parse and
  // store, more at once only share the same throughput among more keys, in more memory.
  const atOnce = sourcesAtOnce(config.sourcesAtOnce, availableParallelism());
  if (sources.length > atOnce) logger.info(`${sources.length} sources, ${atOnce} at once (--sources-at-once); the others wait their turn`);
  return mapAtMost(sources, atOnce, (source) =>
    syncSource(source, {
      deps,
      clock,
      runId,
      warehouse: wh,
      shouldStop: stop.shouldStop,
      stop: stop.signal,
      addLimiter: stop.addLimiter,
      afterCommit: () => outputs.afterCommit(),
      several: sources.length > 1,
      pageSlots,
      spoolSlots,
      carried,
      lookups,
    }),
  );
}

/**
 * After the sources: what was committed reaches the lake and the published file (the lake only until a
 * stop), and the run's verdict is settled from the sources' parts, the stop's memory check and the
 * outputs' results (`settleParts`). A source's record is amended only when the verdict raises its
 * outcome, before the publish that carries it; the summary is combined once, from what was recorded.
 */
async function finishRun(
  open: OpenSync,
  outputs: RunOutputs,
  parts: readonly SourceSummary[],
): Promise<{ summary: RunSummary; compacted: boolean }> {
  const { deps, clock, stop, runId, startedAt, sources, secrets, run } = open;
  const { config, logger } = deps;
  const memory = stop.memoryShort === null ? null : memoryError(stop.memoryShort, sources.length);
  let recorded: readonly SourceSummary[] = parts;
  const settle = async (verdict: OutputsVerdict) => {
    // The verdict only rises, so a part whose outcome it leaves is recorded already.
    const next = settleParts(parts, memory, verdict).map((part, i) => (part.outcome === recorded[i]!.outcome ? recorded[i]! : part));
    for (const [i, part] of next.entries()) {
      if (part === recorded[i]) continue;
      const source = sources.find((s) => s.name === part.source)!;
      await recordSource(run.warehouse, runId, clock, part, secrets, webhooksOf(config, source), false);
    }
    recorded = next;
  };
  await settle(NOTHING_BEHIND);
  const verdict = await finishOutputs(outputs, settle);
  // Every source had failed on its own: the outputs' failure is told in the log, not in the summary.
  if (verdict.behind !== null && parts.every((p) => p.outcome === 'failed'))
    logger.error(describeError(verdict.behind, secrets), errorFields(verdict.behind, config.verbose));
  let summary = combine(runId, startedAt, clock, recorded, stop.reason);
  const lakeTables = outputs.lakeTables;
  if (lakeTables !== undefined && Object.keys(lakeTables).length > 0)
    summary = { ...summary, lakeTables, ...(outputs.lakeSnapshots !== undefined && { lakeSnapshots: outputs.lakeSnapshots }) };
  // Nothing was written since the last publish: when it compacted, the working copy takes its place.
  return { summary, compacted: verdict.behind === null && outputs.compacted };
}

/** What the outputs did for the run: the error of one that fell behind, and whether the stop left one unfinished. */
export interface OutputsVerdict {
  readonly behind: CostsyncError | null;
  readonly abandoned: boolean;
}

const NOTHING_BEHIND: OutputsVerdict = { behind: null, abandoned: false };

/**
 * Each source's part as the run ends: its own outcome, raised by a memory stop (failed), an output that
 * fell behind (failed, with that output's error) or one the stop left unfinished (a success becomes
 * stopped: the run did not finish its work). An outcome is never lowered; a part left as it was is the
 * same object. Pure.
 */
export function settleParts(parts: readonly SourceSummary[], memory: CostsyncError | null, verdict: OutputsVerdict): SourceSummary[] {
  const failure = memory ?? verdict.behind;
  return parts.map((part) => {
    if (failure !== null && part.outcome !== 'failed') return { ...part, outcome: 'failed', error: failure };
    if (verdict.abandoned && part.outcome === 'success') return { ...part, outcome: 'stopped' };
    return part;
  });
}

/** The compact copy just published replaces the working copy (closed by now); a failure keeps the working copy as it was. */
async function adoptWorkingCopy({ deps, run, secrets }: OpenSync): Promise<void> {
  const { config, logger } = deps;
  await adoptCompacted(config.db, run.warehouse.path)
    .then(() =>
      logger.info(
        `the working copy under --state-dir was replaced by the compact copy just published as ${config.db} (it had grown with freed space)`,
      ),
    )
    .catch((error: unknown) =>
      logger.warn(`the working copy was not rebuilt (it stays as it was, with its data): ${describeError(error, secrets)}`),
    );
}

/** A run that failed: each source recorded as failed, and (unless the run was fenced off) its outputs brought up to date. */
async function recordFailure(open: OpenSync, warehouse: Warehouse, error: unknown): Promise<void> {
  const { deps, clock, runId, sources, secrets } = open;
  const { config, logger } = deps;
  for (const source of sources) {
    await recordSource(warehouse, runId, clock, sourceSummary(source.name, 'failed', {}, error), secrets, webhooksOf(config, source)).catch(
      () => undefined,
    );
  }
  // A run fenced off (its lease taken over) writes nothing more; others bring their outputs up to date.
  if (!isFenced(error)) {
    await finishOutputs(outputsOf(open, warehouse), async () => undefined).catch((e: unknown) =>
      logger.error(describeError(e, secrets), errorFields(e, config.verbose)),
    );
  }
}

/** The run's derived outputs. */
type RunOutputs = ReturnType<typeof derivedOutputs>;

/** The run's outputs, as `finishOutputs` brings them up to date. */
type FinishingOutputs = Pick<RunOutputs, 'finishLake' | 'deliver' | 'finishRunTables' | 'notify' | 'end' | 'abandoned'>;

/**
 * After the sources, whatever the outcome: what was committed reaches the lake and the published
 * file. Each time the outputs' verdict rises, `settle` records it: a lake that fell behind or that the
 * stop left unfinished before the notifications go and the warehouse is published (so the published
 * file says so); a publish that fell behind after it, its notification then sent; run tables the stop
 * left pending last. Returns the final verdict.
 */
export async function finishOutputs(
  outputs: FinishingOutputs,
  settle: (verdict: OutputsVerdict) => Promise<void>,
): Promise<OutputsVerdict> {
  let verdict = NOTHING_BEHIND;
  const raise = async (behind: CostsyncError | null) => {
    const next = { behind: verdict.behind ?? behind, abandoned: outputs.abandoned };
    if (next.behind === verdict.behind && next.abandoned === verdict.abandoned) return false;
    verdict = next;
    await settle(verdict);
    return true;
  };
  await raise(await outputs.finishLake());
  const publishBehind = await outputs.deliver();
  if (publishBehind !== null && (await raise(publishBehind))) await outputs.notify();
  // After the publish, which records itself in sync_runs: the lake's run tables then hold the same rows.
  await outputs.finishRunTables();
  await raise(null);
  return { behind: await outputs.end(), abandoned: verdict.abandoned };
}

interface SourceRun {
  deps: SyncDeps;
  clock: Clock;
  runId: string;
  warehouse: Warehouse;
  shouldStop: () => boolean;
  /** The run's stop, for the requests: aborted, they end at once. */
  stop: AbortSignal;
  /** Each source's limiter, so a stop can drop the requests waiting in it. */
  addLimiter: (limiter: RequestLimiter) => void;
  afterCommit: () => Promise<void>;
  /** Several sources: progress lines are per source. */
  several: boolean;
  /** The run's page slots, shared by every source. */
  pageSlots: PageSlots;
  /** The run's slots for pages waiting on the disk, shared by every source. */
  spoolSlots: PageSlots;
  /** The state the warehouse carries for each source (JSON), read once for the run. */
  carried: ReadonlyMap<string, string>;
  /** Lookups of what the warehouse holds, one scan for the sources that ask together. */
  lookups: SourceLookups;
}

/** Sources a run syncs at once: the setting, or for 0, `SOURCES_PER_CORE` for each core. Pure. */
export function sourcesAtOnce(setting: number, cores: number): number {
  return setting > 0 ? setting : SOURCES_PER_CORE * Math.max(1, cores);
}

/** One source's part of a run: its state, key, limiter and streams. Never throws: a failure is its outcome. */
async function syncSource(source: SourceConfig, run: SourceRun): Promise<SourceSummary> {
  const { deps, clock, warehouse } = run;
  const { config, logger } = deps;
  const stats = { line_items: emptyStats(), rollups: emptyStats(), anomalies: emptyStats() };
  const streams: Partial<Record<StreamName, StreamStats>> = {};
  for (const name of config.streams) streams[name] = stats[name];
  let client: ApiClient | null = null;
  let summary: SourceSummary;
  const webhooks = webhooksOf(config, source);
  const secrets = [source.apiKey, ...webhooks.map((t) => t.url)];
  if (run.shouldStop()) {
    // A source whose turn (--sources-at-once) comes after a stop does nothing: its state stays as it was.
    summary = { ...sourceSummary(source.name, 'stopped', streams, undefined), ...stopReasonOf(run.stop) };
    await recordSource(warehouse, run.runId, clock, summary, secrets, webhooks);
    return summary;
  }
  try {
    const { state, carried, identity } = openSourceState(source, run);
    const onEvent = eventCounter(source, run, stats, (response) => {
      if (response.statusCode >= 200 && response.statusCode < 300 && state.current.source !== identity) state.confirmIdentity(identity);
    });
    // Every stream's windows may have a request in flight: size the limiter and the pool for all.
    const inFlight = Math.max(4, config.concurrency * config.streams.length);
    const limiter = createRequestLimiter({ requestsPerMinute: source.rateLimit, clock, maxConcurrent: inFlight });
    run.addLimiter(limiter);
    client = createApiClient({
      baseUrl: source.baseUrl,
      apiKey: source.apiKey,
      ...(source.keyFrom !== undefined && { keyFrom: source.keyFrom }),
      limiter,
      clock,
      onEvent,
      connections: inFlight,
      signal: run.stop,
      ...deps.clientOptions,
    });
    const ctx = sourceContext(source, run, { client, state, stats, webhooks, spoolDir: carried.spoolDir });
    const settled = await Promise.allSettled(streamTasks(ctx, config));
    // The source ends with the warehouse carrying its final state.
    await carried.copy.settle();
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    const stopped = settled.some((s) => s.status === 'fulfilled' && s.value === 'stopped');
    summary = sourceSummary(source.name, failed ? 'failed' : stopped ? 'stopped' : 'success', streams, failed?.reason);
    if (summary.outcome === 'stopped') summary = { ...summary, ...stopReasonOf(run.stop) };
  } catch (error) {
    summary = sourceSummary(source.name, 'failed', streams, error);
  } finally {
    await client?.close().catch(() => undefined);
  }
  if (summary.outcome === 'failed') {
    logger.debug(`${source.name}: failed: ${describeError(summary.error, [source.apiKey])}`, { source: source.name });
  }
  await recordSource(warehouse, run.runId, clock, summary, secrets, webhooks);
  return summary;
}

/**
 * A source's state, loaded from its file and reconciled with the state the warehouse carries (which
 * matches its data: it wins over a state file that disagrees, and an empty --state-dir, a clean
 * container, goes on from it); saved to the file, with the warehouse's copy following.
 */
function openSourceState(source: SourceConfig, run: SourceRun) {
  const { clock, warehouse } = run;
  const { config, logger } = run.deps;
  const row = run.carried.get(source.name) ?? null;
  const { store, identity, ...loaded } = openSourceStore(config.stateDir, warehouse.path, source, row);
  for (const notice of loaded.warnings) logger.warn(notice, { source: source.name });
  // An empty --state-dir going on from the warehouse is the documented clean-container case: worth a line, not a warning.
  for (const notice of loaded.info) logger.info(notice, { source: source.name });
  const now = () => new Date(clock.now());
  const copy = new CarriedCopy(carriedIn(warehouse, source.name, now), loaded.state, row !== null);
  const state = new SourceState(loaded.state, fileAndWarehouse(store, copy, now));
  return { state, identity, carried: { copy, spoolDir: store.spoolDir } };
}

/** Counts a source's client events into its streams' stats, and logs retries and rate limiting. */
function eventCounter(
  source: SourceConfig,
  run: SourceRun,
  stats: Record<StreamName, StreamStats>,
  onResponse: (event: Extract<ClientEvent, { type: 'response' }>) => void,
): (event: ClientEvent) => void {
  const { config, logger } = run.deps;
  return (event) => {
    const endpointStream = streamOfPath(event.path);
    if (endpointStream === null) return;
    // A stream not synced is requested only by another's check (line items fetch their provider rollups).
    const stream = config.streams.includes(endpointStream) ? endpointStream : 'line_items';
    if (event.type === 'request') stats[stream].requests += 1;
    else if (event.type === 'response') {
      onResponse(event);
      stats[stream].responses[event.statusCode] = (stats[stream].responses[event.statusCode] ?? 0) + 1;
    } else if (event.type === 'retry') {
      stats[stream].retries += 1;
      logger.info(`${run.several ? `${source.name}: ` : ''}${retryLine(event)}`, {
        source: source.name,
        stream,
        code: event.code,
        attempt: event.attempt,
      });
    } else if (event.type === 'rate_limited') {
      stats[stream].rateLimited += 1;
      logger.info(`${source.name}: rate limited: holding requests for ${Math.ceil(event.holdMs / 1000)} s`, {
        source: source.name,
        stream,
      });
    }
  };
}

/** What a source's streams work with. */
function sourceContext(
  source: SourceConfig,
  run: SourceRun,
  parts: { client: ApiClient; state: SourceState; stats: SyncContext['stats']; webhooks: readonly Webhook[]; spoolDir: string },
): SyncContext {
  const { deps, clock } = run;
  const { config } = deps;
  const bothChecked = runChecks(config).providerRollupsShared;
  return {
    client: parts.client,
    warehouse: run.warehouse,
    lookups: run.lookups,
    spoolDir: parts.spoolDir,
    state: parts.state,
    logger: deps.logger,
    clock,
    runId: run.runId,
    source: source.name,
    stats: parts.stats,
    shouldStop: run.shouldStop,
    signal: run.stop,
    progress: run.several ? perSource(source.name, deps.progress ?? {}) : (deps.progress ?? {}),
    pace: {
      concurrency: config.concurrency,
      // Half the publish interval: a window reaches the published file within about one and a half.
      storeWaitMs: config.publishIntervalMs / 2,
      pageSlots: run.pageSlots,
      spoolSlots: run.spoolSlots,
    },
    checks: {
      reconcile: config.reconcile,
      onHand: new RollupsOnHand(),
      ...(bothChecked ? { providerRollups: new ProviderRollupExchange() } : {}),
    },
    afterCommit: run.afterCommit,
    ...(parts.webhooks.length > 0
      ? {
          notify: {
            webhooks: parts.webhooks.map((t) => t.id),
            minRank: SEVERITY_RANK[config.notifySeverity],
            cutoff: new Date(clock.now() - config.notifyMaxAgeMs).toISOString(),
            statusChanges: config.notifyStatusChanges,
          },
        }
      : {}),
  };
}

/** The source's streams, side by side. */
function streamTasks(ctx: SyncContext, config: SyncConfig): Promise<StreamOutcome>[] {
  const windowReq = windowRequest(config);
  const tasks: Promise<StreamOutcome>[] = [];
  const windowed = config.streams.includes('line_items') || config.streams.includes('rollups');
  // The recheck goes first: the windowed streams plan the older dates it finds changed after their own.
  const recheck = windowed ? recheckSource(ctx, recheckSettings(config), windowReq) : Promise.resolve(NO_RECHECK);
  if (config.streams.includes('line_items'))
    tasks.push(recheck.then((found) => syncWindowedStream(lineItemsStream, ctx, { ...windowReq, recheck: found.line_items })));
  if (config.streams.includes('rollups'))
    tasks.push(recheck.then((found) => syncWindowedStream(rollupsStream, ctx, { ...windowReq, recheck: found.rollups })));
  if (config.streams.includes('anomalies')) tasks.push(syncAnomalies(ctx, anomalyRequest(config)));
  return tasks;
}

/** Progress of one of several sources: its lines are named `<source>/<stream>`. */
function perSource(source: string, progress: ProgressListener): ProgressListener {
  const name = (stream: StreamName) => `${source}/${stream}` as StreamName;
  // Only the callbacks the listener has: a missing `planned` means nobody reads the estimate.
  return {
    ...(progress.planned && {
      planned: (stream: StreamName, info: Parameters<NonNullable<ProgressListener['planned']>>[1]) => progress.planned!(name(stream), info),
    }),
    page: (stream, info) => progress.page?.(name(stream), info),
    windowDone: (stream, info) => progress.windowDone?.(name(stream), info),
  };
}

/** What a stopped source's record and notification say when nothing named the stop (an output the stop left unfinished). */
const NO_STOP_REASON = 'stopped before the end; progress is saved';

/** Why the run was told to stop (a signal, --max-runtime, a closed pipe), for a stopped source's record and notification. */
function stopReasonOf(stop: AbortSignal): { stopReason?: string } {
  return stop.aborted ? { stopReason: String(stop.reason) } : {};
}

function sourceSummary(
  source: string,
  outcome: RunOutcome,
  streams: Partial<Record<StreamName, StreamStats>>,
  error: unknown,
): SourceSummary {
  const all = Object.values(streams);
  return {
    source,
    outcome,
    streams,
    requests: all.reduce((n, s) => n + s.requests, 0),
    retries: all.reduce((n, s) => n + s.retries, 0),
    rateLimited: all.reduce((n, s) => n + s.rateLimited, 0),
    warnings: all.flatMap((s) => s.warnings),
    // A full disk gets its code and the space a run needs, in the log, sync_runs and the notification alike.
    ...(error !== undefined ? { error: diskFullError(error) ?? error } : {}),
  };
}

const OUTCOME_RANK: Record<RunOutcome, number> = { success: 0, stopped: 1, failed: 2 };

/** The run from its sources' parts: summed counts, per-stream sums, the worst outcome, the first failure. Pure. */
export function combine(
  runId: string,
  startedAt: string,
  clock: Clock,
  parts: readonly SourceSummary[],
  stopReason: string | undefined,
): RunSummary {
  const streams: Partial<Record<StreamName, StreamStats>> = {};
  for (const part of parts) {
    for (const [name, s] of Object.entries(part.streams) as [StreamName, StreamStats][]) {
      const sum = (streams[name] ??= emptyStats());
      for (const key of [
        'inserted',
        'updated',
        'deleted',
        'pages',
        'requests',
        'retries',
        'rateLimited',
        'refetches',
        'olderChanged',
        'olderSynced',
      ] as const)
        sum[key] += s[key];
      for (const [status, n] of Object.entries(s.responses)) sum.responses[status] = (sum.responses[status] ?? 0) + n;
      sum.warnings.push(...s.warnings.map((w) => (parts.length > 1 ? `${part.source}: ${w}` : w)));
      sum.olderDates = [...new Set([...sum.olderDates, ...s.olderDates])];
    }
  }
  const outcome = parts.reduce<RunOutcome>((worst, p) => (OUTCOME_RANK[p.outcome] > OUTCOME_RANK[worst] ? p.outcome : worst), 'success');
  const failure = parts.find((p) => p.outcome === 'failed');
  return {
    runId,
    outcome,
    startedAt,
    endedAt: new Date(clock.now()).toISOString(),
    streams,
    sources: [...parts],
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
  warehouse: Warehouse,
  runId: string,
  clock: Clock,
  summary: SourceSummary,
  secrets: string[],
  webhooks: readonly Webhook[],
  withStreams = true,
): Promise<void> {
  const endedAt = new Date(clock.now()).toISOString();
  await warehouse.transaction(async () => {
    if (summary.outcome !== 'success') {
      const kind = summary.outcome === 'failed' ? 'run_failed' : 'run_stopped';
      const error = summary.error;
      const event = {
        kind,
        source: summary.source,
        run_id: runId,
        exit_code: summary.outcome === 'stopped' ? ExitCode.STOPPED_EARLY : isCostsyncError(error) ? error.exitCode : ExitCode.FAILED,
        reason: summary.outcome === 'stopped' ? (summary.stopReason ?? NO_STOP_REASON) : describeError(error, secrets).split('\n')[0],
        fix: summary.outcome === 'stopped' ? 'Run the same command again to go on.' : isCostsyncError(error) ? (error.hint ?? null) : null,
      };
      const id = eventId(runId, summary.source, kind);
      for (const webhook of webhooks)
        await warehouse.run('notify/run_event', [id, webhook.id, summary.source, kind, JSON.stringify(event), endedAt]);
    }
    // Older dates the API restated: worth telling whoever reads the numbers, whatever the outcome.
    const { changed, synced, dates } = restatedCounts(Object.values(summary.streams));
    if (changed > 0) {
      const event = { kind: 'restated', source: summary.source, run_id: runId, changed, synced, dates: summarizeDates(dates) };
      const id = eventId(runId, summary.source, 'restated');
      for (const webhook of webhooks)
        await warehouse.run('notify/run_event', [id, webhook.id, summary.source, 'restated', JSON.stringify(event), endedAt]);
    }
    // The lake's copy of these rows is written again after the run's publish (or by the next run).
    await mark(warehouse, { kind: 'run-tables', source: summary.source });
    await warehouse.run('sync/run_finish', [
      runId,
      endedAt,
      summary.outcome,
      summary.requests,
      summary.retries,
      summary.rateLimited,
      JSON.stringify(summary.warnings),
      // A stop is not an error, but the row says why the run ended early (a signal, --max-runtime, a closed pipe).
      summary.error !== undefined
        ? describeError(summary.error, secrets)
        : summary.outcome === 'stopped'
          ? `stopped: ${summary.stopReason ?? NO_STOP_REASON}`
          : null,
      summary.source,
    ]);
    for (const [stream, s] of withStreams ? Object.entries(summary.streams) : []) {
      await warehouse.run('sync/run_stream', [
        runId,
        stream,
        s.inserted,
        s.updated,
        s.deleted,
        s.pages,
        s.requests,
        s.retries,
        s.rateLimited,
        JSON.stringify(s.warnings),
        s.refetches,
        summary.source,
        JSON.stringify(s.responses),
        s.olderChanged,
        s.olderSynced,
      ]);
    }
  });
}
