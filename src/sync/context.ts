/** What every stream gets to work with: collaborators passed in, never module singletons. */
import type { ApiClient } from '../api/client.js';
import type { Clock } from '../api/resilience.js';
import { ApiError, ClientErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import type { SourceState } from '../state/source-state.js';
import type { Warehouse } from '../storage/duckdb.js';
import type { Spool } from '../storage/spool.js';
import type { PageSlots } from './page-slots.js';
import type { SourceLookups } from './lookups.js';
import type { DayBasis } from './estimate.js';
import type { ProviderRollupExchange, ReconcileMode } from './reconcile.js';
import type { RollupsOnHand } from './rollups-on-hand.js';

// Declared with the API's types, below the config that names them too; here for the sync's modules.
import { STREAM_NAMES, type StreamName } from '../api/types.js';
export { STREAM_NAMES, type StreamName };

export interface StreamStats {
  inserted: number;
  updated: number;
  deleted: number;
  pages: number;
  requests: number;
  retries: number;
  rateLimited: number;
  /** Windows fetched again because their check against the rollups failed. */
  refetches: number;
  /** Older dates (outside the plan's own) the recheck found changed at the API, and how many of them were synced again. */
  olderChanged: number;
  olderSynced: number;
  /** The older dates found changed. */
  olderDates: string[];
  /** Responses by HTTP status ("200", "429", …). */
  responses: Record<string, number>;
  warnings: string[];
}

export function emptyStats(): StreamStats {
  return {
    inserted: 0,
    updated: 0,
    deleted: 0,
    pages: 0,
    requests: 0,
    retries: 0,
    rateLimited: 0,
    refetches: 0,
    olderChanged: 0,
    olderSynced: 0,
    olderDates: [],
    responses: {},
    warnings: [],
  };
}

/** Told as work progresses, for progress bars and JSON logs. */
export interface ProgressListener {
  /**
   * A stream's plan. `pages` when its page count is known in advance (rollups: three a window);
   * `days` when it can be estimated (line items: what is known of each date before it is fetched).
   * `older`: of the windows, those of older dates the recheck found changed (outside `from..to`).
   */
  planned?(
    stream: StreamName,
    info: { windows: number; from: string; to: string; resumed: boolean; pages?: number; days?: DayBasis[]; older?: number },
  ): void;
  /** Pages fetched (one unless said), their rows, and their amount in dollars (line items). */
  page?(stream: StreamName, info: { rows: number; window: string; pages?: number; usd?: number }): void;
  windowDone?(
    stream: StreamName,
    info: { window: string; inserted: number; updated: number; deleted: number; days?: number; pages?: number },
  ): void;
}

/** How a source's windows share the run: how many at once, how long a fetched one waits to be stored, and the run's slots. */
export interface Pace {
  /** Windows fetched at once per stream (each window's pages are a cursor chain). */
  concurrency: number;
  /**
   * How long a fetched window may wait to be stored together with the next ones (see store-batch.ts);
   * 0: each at once. None: as long as the batch takes to fill.
   */
  storeWaitMs?: number;
  /** Slots bounding the pages held in memory across every source of the run (none: unbounded). */
  pageSlots?: PageSlots;
  /** Slots bounding the pages waiting for the disk across every source (see `SPOOL_WAIT_PAGES`; none: unbounded). */
  spoolSlots?: PageSlots;
}

/** How fetched windows are checked before they commit. */
export interface Checks {
  /** Whether fetched windows are checked against the rollups before they commit (`--reconcile`). */
  reconcile: ReconcileMode;
  /** Present when both windowed streams run with checks: line items hand their provider rollups to the rollups stream. */
  providerRollups?: ProviderRollupExchange;
  /** The rollups the recheck fetched, served to the rollups windows and checks inside its span. */
  onHand?: RollupsOnHand;
}

export interface SyncContext {
  client: ApiClient;
  warehouse: Warehouse;
  /** Lookups of what the warehouse holds, shared by the run's sources (`warehouseLookups`). */
  lookups: SourceLookups;
  /** Where windowed streams spool their pages until a window is replaced. */
  spoolDir: string;
  /** The spool's file operations (the files under `spoolDir` by default). */
  spool?: Spool;
  /** The source's state: read it and change it here, save it after the data it describes is committed. */
  state: SourceState;
  logger: Logger;
  clock: Clock;
  runId: string;
  /** The source (workspace) being synced: every row it writes carries this name. */
  source: string;
  /** True once --max-runtime passed or a stop signal came: finish the current step, then return. */
  shouldStop(): boolean;
  /** Aborts when the run is told to stop: a pause ends at once instead of holding the stop up. */
  signal?: AbortSignal;
  stats: Record<StreamName, StreamStats>;
  progress: ProgressListener;
  pace: Pace;
  checks: Checks;
  /** Webhooks to tell about anomalies (their fingerprints), and which anomalies to tell. */
  notify?: { webhooks: string[]; minRank: number; cutoff: string; statusChanges: boolean };
  /** Called after each commit of synced rows: derived outputs (Parquet, the published file) follow. */
  afterCommit?(): Promise<void>;
}

export function warn(ctx: SyncContext, stream: StreamName, message: string, fields: Record<string, unknown> = {}): void {
  ctx.stats[stream].warnings.push(message);
  ctx.logger.warn(message, { stream, ...fields });
}

/** True when `error` is a request the client dropped because the run is stopping (not a failure). */
export function isDroppedRequest(error: unknown): boolean {
  return error instanceof ApiError && error.code === ClientErrorCode.ABORTED;
}
