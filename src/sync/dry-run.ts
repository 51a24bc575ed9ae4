/**
 * `sync --dry-run`: what a run would do, before it spends a day's quota. Plans each source's windows
 * exactly as a run would (the state opened as the run opens it, same carried state, same mending),
 * reads what is known of their dates (rows the warehouse holds per date; with one provider-rollups
 * request, the dollars of dates it does not hold, at the warehouse's own dollars per row, or with no
 * rows stored at a sample page's; with the first anomalies request, whether alerts take one request or
 * several), asks each stream how many requests that makes (`estimateRequests`, `estimateAnomalyRequests`),
 * and writes nothing: no state directory, no lock, no working copy.
 */
import { existsSync } from 'node:fs';
import { createApiClient, type ApiClient } from '../api/client.js';
import { createRequestLimiter } from '../api/resilience.js';
import { configSources, type SyncConfig } from '../config.js';
import type { SourceConfig } from '../sources.js';
import { formatDuration } from '../dates.js';
import { dropBefore, planStream, remainingWindows, splitWindows, type DateWindow } from '../plan/windows.js';
import { tableNames } from '../storage/tables.js';
import { openSourceStore } from '../state/source-state.js';
import { emptyWindowedState, type PendingPlan, type PlannedWindow, type SyncState } from '../state/store.js';
import { openReadOnly, type ReadOnlyWarehouse } from '../storage/duckdb.js';
import { workingCopyPath } from '../storage/working-copy.js';
import { isS3Url } from '../outputs/s3-url.js';
import { requireDbDirectory } from '../run-context.js';
import {
  ANOMALY_PAGE_LIMIT,
  anomalyQueryStart,
  anomalyRequest,
  estimateAnomalyRequests,
  sinceLabel,
  storedAnomaliesFrom,
} from './anomalies.js';
import { dollarsPerRow, type DayBasis } from './estimate.js';
import { GROUP_BYS } from '../api/types.js';
import { lineItemsStream, rollupsStream, runChecks, type RunChecks, type WindowedStreamSpec } from './streams.js';
import type { StreamName } from './context.js';
import { windowRequest } from './windowed.js';
import { type HeldSpan } from './rollups-on-hand.js';
import {
  NO_RECHECK,
  askedSpan,
  compareScope,
  decideRecheck,
  describeChanges,
  recheckScope,
  recheckSettings,
  type RecheckWindows,
} from './recheck.js';
import { changedWindows, summarizeDates } from '../plan/horizon.js';
import { lineItemsPerDate } from './lookups.js';
import { ExitCode, isCostsyncError, type CostsyncError } from '../errors.js';
import { NOTHING_LEFT, leftUndone, phasePlan, type PhasePlan } from './phase-plan.js';

/** One stream's part of the plan. */
export interface StreamPlan {
  stream: StreamName;
  /** `from..to` of the dates (anomalies: the detection time it asks from). */
  range: string;
  windows: number;
  resumed: boolean;
  /** Requests the run is expected to make; null when nothing tells (then `minRequests` is all that is known). */
  requests: number | null;
  /** At least this many (one a window; anomalies: one, or five once the first response is full). */
  minRequests: number;
  /** Of `windows`, those of older dates the recheck found no longer equal to the API (outside `range`). */
  older?: number;
  /** Dates already stored that the run fetches again (the lookback), as `from..to, date (N days)`. */
  refetches: string | null;
  /** How the estimate was made, for a person. */
  basis: string;
  /** Which of the requests go to another endpoint than the stream's own (its checks'), for a person. */
  endpoints?: string;
  /** With --full-refresh: the stored dates the run replaces, as `from..to`. */
  replaces: string | null;
  /** With --drop-before: what the run deletes, as `N row(s) dated from..to`. */
  drops: string | null;
}

export interface SourcePlan {
  source: string;
  streams: StreamPlan[];
  notices: string[];
  /**
   * Requests the run is expected to make (a stream not known counts its least), and the time they
   * take at the source's rate limit. The dry run's own requests are not among them.
   */
  requests: number;
  /** Some stream's count is only its least: the run may make more than `requests`. */
  atLeast: boolean;
  seconds: number;
  rateLimit: number;
  /** Requests this dry run made for the estimate, by endpoint. */
  dryRunRequests: { rollups: number; lineItems: number; anomalies: number };
  /**
   * The recheck of older stored dates (null: none, a full refresh or nothing stored in the horizon): the dates
   * compared, the older dates found changed and why (the run syncs them again), or why it could not compare.
   */
  recheck: { range: string; requests: number; changed: { stream: string; dates: string; why: string }[]; failed: string | null } | null;
}

/** The dates of `[from, to]` that the warehouse already holds (their count and span), for the lookback line. Pure. */
export function storedSpan(days: readonly DayBasis[]): string | null {
  // Sorted: the recheck's older windows come after the plan's own, newest first.
  const stored = days
    .filter((d) => d.storedRows !== null && d.storedRows > 0)
    .map((d) => d.date)
    .sort();
  if (stored.length === 0) return null;
  // As ranges: one span from the first to the last would name dates that are not fetched again.
  return `${summarizeDates(stored)} (${stored.length} day${stored.length === 1 ? '' : 's'})`;
}

/**
 * An error a setting causes (the key: exit 3; the base URL, a flag or a file: exit 2): the run would
 * stop on it whatever its retries, so the dry run stops too instead of planning around it.
 */
export function isSettingError(error: unknown): error is CostsyncError {
  return isCostsyncError(error) && (error.exitCode === ExitCode.AUTH || error.exitCode === ExitCode.USAGE);
}

/** A source the dry run could not plan, and why (an error the run would fail on the same way). */
export interface SourceFailure {
  source: string;
  error: CostsyncError;
}

interface DryRunDeps {
  config: SyncConfig;
  nowMs: number;
  /** The warehouse to read what is stored (the published --db), when there is one. */
  warehouse: ReadOnlyWarehouse | null;
}

/** What the steps of one source's plan share. */
interface SourceStep extends DryRunDeps {
  source: SourceConfig;
  /** The source's client, made at its first request. */
  api: () => ApiClient;
  /** The state the run would go on from. */
  state: SyncState;
  notices: string[];
  /** Requests this dry run made, by endpoint. */
  made: SourcePlan['dryRunRequests'];
}

/** A windowed stream's windows as the run would plan them, and what it deletes and replaces first. */
export interface PlannedStream {
  plan: Pick<PendingPlan, 'from' | 'to'>;
  resumed: boolean;
  /** The windows to fetch, in the run's order. */
  todo: readonly (Pick<PlannedWindow, 'start' | 'end' | 'recheck'> & Partial<Pick<PlannedWindow, 'page' | 'fetched'>>)[];
  replaces: string | null;
  drops: string | null;
}

/** What the dry run read of the windows' dates, for the stream to count its requests from. */
export interface KnownDays {
  /** Each window to fetch, as what is known of its dates. */
  days: DayBasis[][];
  usdPerRow: number | null;
  /** How the dates were read, for a person (when the stream's count does not say it itself). */
  basis: string;
}

/**
 * Plans one source. Makes the recheck's requests (3, as the run does), and at most three more: a sample page of line items when the warehouse
 * holds none to price them, the provider rollups of dates it does not hold, and the first anomalies request.
 */
async function planSource(source: SourceConfig, deps: DryRunDeps): Promise<SourcePlan> {
  const client: { current: ApiClient | null } = { current: null };
  try {
    return await planSourceWith(
      source,
      deps,
      () =>
        (client.current ??= createApiClient({
          baseUrl: source.baseUrl,
          apiKey: source.apiKey,
          ...(source.keyFrom !== undefined && { keyFrom: source.keyFrom }),
          retry: { retries: 2 },
          limiter: createRequestLimiter({ requestsPerMinute: source.rateLimit }),
        })),
    );
  } finally {
    await client.current?.close();
  }
}

/** One source's plan in the run's order: its state, the recheck, each windowed stream, the anomalies, the totals. */
async function planSourceWith(source: SourceConfig, deps: DryRunDeps, api: () => ApiClient): Promise<SourcePlan> {
  const step: SourceStep = { ...deps, source, api, ...(await loadState(source, deps)), made: { rollups: 0, lineItems: 0, anomalies: 0 } };
  const { found, recheck, held } = await recheckFirst(step);
  const plans: StreamPlan[] = [];
  for (const spec of [lineItemsStream, rollupsStream]) {
    if (!step.config.streams.includes(spec.name)) continue;
    const planned = await planWindows(spec, step, found[spec.name]);
    // A stream sized by its daily totals needs its dates read; one of fixed pages a window needs only their count.
    const known = 'estimate' in spec.size ? await dailyTotals(spec, step, planned.todo) : unreadDays(planned.todo);
    plans.push(windowedStreamPlan(spec, planned, known, { ...runChecks(step.config), held }));
  }
  if (step.config.streams.includes('anomalies')) plans.push(await anomaliesPlan(step));
  return sourcePlan(step, plans, recheck);
}

/** The first line of an error's message, for a plan's line. */
const firstLine = (error: unknown) => (error as Error).message.split('\n')[0] ?? '';

/** The state the run would go on from, loaded as the run loads it (with the state the published warehouse carries), and what loading told. */
async function loadState(source: SourceConfig, { config, warehouse }: DryRunDeps): Promise<{ state: SyncState; notices: string[] }> {
  let carried: string | null = null;
  if (warehouse !== null) {
    // A warehouse from before the carried state (schema 006) carries none.
    const rows = await warehouse.query<{ state: string }>('state/carried', [source.name]).catch(() => []);
    carried = rows[0]?.state ?? null;
  }
  const loaded = openSourceStore(config.stateDir, workingCopyPath(config.stateDir, config.db), source, carried);
  return { state: loaded.state, notices: [...loaded.warnings, ...loaded.info] };
}

/** The recheck the run makes first (3 requests), made now: its changed dates are part of the plan. */
async function recheckFirst(step: SourceStep): Promise<{ found: RecheckWindows; recheck: SourcePlan['recheck']; held: HeldSpan | null }> {
  const { config, warehouse, source, state } = step;
  const settings = recheckSettings(config);
  const scope = warehouse === null ? null : recheckScope(state.streams, windowRequest(config), settings);
  if (scope === null || warehouse === null) return { found: NO_RECHECK, recheck: null, held: null };
  // The run makes the same requests: one a grouping compared (the provider view alone without the rollups stream).
  const requests = config.streams.includes('rollups') ? GROUP_BYS.length : 1;
  const recheck: NonNullable<SourcePlan['recheck']> = { range: `${scope.from}..${scope.to}`, requests, changed: [], failed: null };
  try {
    const comparison = await compareScope(step.api(), warehouse, source.name, scope, settings, config.until);
    step.made.rollups += comparison.requests;
    const decision = decideRecheck(comparison, scope, state.streams.line_items?.rechecked ?? {});
    const found = {
      line_items: changedWindows(decision.changed.line_items, config.windowDays),
      rollups: changedWindows(decision.changed.rollups, config.windowDays),
    };
    for (const stream of ['line_items', 'rollups'] as const) {
      const dates = decision.changed[stream];
      if (dates.length === 0) continue;
      const why = comparison.differences.filter((d) => dates.includes(d.date) && (d.check === 'line_items') === (stream === 'line_items'));
      recheck.changed.push({ stream, dates: summarizeDates(dates), why: describeChanges(why, 3) });
    }
    // The run's recheck answers for its span through the last date (recheck.ts): the windows inside ask nothing more.
    return { found, recheck, held: askedSpan(scope, config.until) };
  } catch (error) {
    if (isSettingError(error)) throw error;
    step.made.rollups += 1;
    return { found: NO_RECHECK, recheck: { ...recheck, failed: firstLine(error) }, held: null };
  }
}

/** A windowed stream's windows as the run plans them (a drop first moves the watermark, as the run does), with what it deletes and replaces. */
async function planWindows(spec: WindowedStreamSpec, step: SourceStep, recheck: readonly DateWindow[]): Promise<PlannedStream> {
  const { config, warehouse, source, state } = step;
  const names = tableNames(spec.table);
  const storedFrom =
    config.fullRefresh && warehouse !== null
      ? ((await warehouse.query<{ first: string | null }>('sync/stored_from', [source.name], names))[0]?.first ?? null)
      : null;
  const saved = state.streams[spec.name] ?? emptyWindowedState();
  const { notice, plan, resumed } = planStream(config.dropBefore === undefined ? saved : dropBefore(saved, config.dropBefore), {
    ...windowRequest(config),
    storedFrom,
    recheck,
  });
  if (notice !== null) step.notices.push(`${spec.name}: ${notice}`);
  let drops: string | null = null;
  if (warehouse !== null && config.dropBefore !== undefined) {
    const [d] = await warehouse.query<{ n: number; dates: string[] }>('sync/drop_before_count', [config.dropBefore, source.name], names);
    const dates = [...(d?.dates ?? [])].sort();
    drops = Number(d?.n ?? 0) === 0 ? 'nothing stored before it' : `${Number(d!.n)} row(s) dated ${dates[0]}..${dates.at(-1)}`;
  }
  const replaces = warehouse !== null && config.fullRefresh ? `${plan.from}..${plan.to}` : null;
  return { plan, resumed, todo: remainingWindows(plan), replaces, drops };
}

/** Each window's dates, nothing known of them. Pure. */
function unreadDays(todo: PlannedStream['todo']): KnownDays {
  const days = todo.map((w) => splitWindows(w.start, w.end, 1).map(({ start: date }): DayBasis => ({ date, usd: null, storedRows: null })));
  return { days, usdPerRow: null, basis: '' };
}

/**
 * What is known of the dates of a stream sized by its daily totals (the line items): rows the warehouse
 * holds a date, else the provider rollups' dollars at the dollars a row, the warehouse's or, with none
 * stored, a sample page's. Makes at most two requests.
 */
async function dailyTotals(spec: WindowedStreamSpec, step: SourceStep, todo: PlannedStream['todo']): Promise<KnownDays> {
  const known = unreadDays(todo);
  const days = known.days.flat();
  const usdPerRow = step.warehouse !== null && days.length > 0 ? await readStoredRows(step, step.warehouse, days) : null;
  const unknown = days.filter((d) => d.storedRows === null);
  const price: Pricing = {
    usdPerRow,
    priced: `the warehouse's $${(usdPerRow ?? 0).toFixed(2)} a row`,
    basis: days.length === 0 ? 'nothing to fetch' : unknown.length === 0 ? 'rows the warehouse holds for these dates' : '',
  };
  // The sample is of the newest window: a backfill's first window often predates the account's first costs.
  if (unknown.length > 0 && price.usdPerRow === null)
    await priceBySample(
      spec,
      step,
      todo.reduce((a, b) => (b.start > a.start ? b : a)),
      unknown.length,
      price,
    );
  if (unknown.length > 0 && price.usdPerRow !== null) await priceByRollups(step, unknown, days.length, price);
  return { days: known.days, usdPerRow: price.usdPerRow, basis: price.basis };
}

/** How the dates not stored are priced, as far as it got. */
interface Pricing {
  usdPerRow: number | null;
  /** The dollars a row and where they come from, for a person. */
  priced: string;
  basis: string;
}

/** Fills in the rows the warehouse holds for each date; the dollars its line items average (null: none stored). */
async function readStoredRows(step: SourceStep, warehouse: ReadOnlyWarehouse, days: DayBasis[]): Promise<number | null> {
  // From the earliest date to the latest: the recheck's older windows come after the plan's own, newest first.
  const dates = days.map((d) => d.date).sort();
  const [stored] = await lineItemsPerDate(
    (name, params) => warehouse.query(name, params),
    [{ source: step.source.name, from: dates[0]!, to: dates.at(-1)! }],
  );
  for (const d of days) d.storedRows = stored!.get(d.date) ?? null;
  const [avg] = await warehouse.query<{ usd_per_row: number | null }>('sync/line_items_usd_per_row', [step.source.name]);
  return avg?.usd_per_row ?? null;
}

/** No stored rows to price the dates (a first run): the first page of `window`, fetched as the stream fetches it, gives the dollars a row. */
async function priceBySample(
  spec: WindowedStreamSpec,
  step: SourceStep,
  window: DateWindow,
  unknown: number,
  price: Pricing,
): Promise<void> {
  const { size } = spec;
  if (!('amountField' in size)) return;
  step.made.lineItems += 1;
  try {
    const sample = await spec.fetchPage(step.api(), window, null);
    price.usdPerRow = dollarsPerRow(sample.records.map((r) => Number(r[size.amountField])));
    price.priced = `$${(price.usdPerRow ?? 0).toFixed(2)} a row (a sample page of ${sample.records.length} line items)`;
    if (price.usdPerRow === null)
      price.basis =
        sample.records.length === 0
          ? `not known before the run for ${unknown} date(s): the API sent no line items for ${window.start}..${window.end}, the newest window, to price them (it may have no costs for these dates)`
          : `not known before the run for ${unknown} date(s): the sample page of line items held no costs to price them`;
  } catch (error) {
    if (isSettingError(error)) throw error;
    price.basis = `not known for ${unknown} date(s): a sample page of line items could not be read (${firstLine(error)})`;
  }
}

/** The dollars of the dates not stored (one provider-rollups request), priced at the dollars a row. */
async function priceByRollups(step: SourceStep, unknown: DayBasis[], all: number, price: Pricing): Promise<void> {
  step.made.rollups += 1;
  try {
    const usd = new Map<string, number>();
    // The recheck's older windows come after the plan's own: the span is the earliest to the latest date.
    const dates = unknown.map((d) => d.date).sort();
    for (const r of await step.api().rollups({ startDate: dates[0]!, endDate: dates.at(-1)!, groupBy: 'provider' }))
      usd.set(r.date, (usd.get(r.date) ?? 0) + Number(r.cost_usd));
    for (const d of unknown) d.usd = usd.get(d.date) ?? 0;
    price.basis = `${unknown.length === all ? '' : 'rows stored, and '}the provider rollups' dollars at ${price.priced} for ${unknown.length} date(s) not stored`;
  } catch (error) {
    if (isSettingError(error)) throw error;
    price.basis = `not known for ${unknown.length} date(s): the provider rollups could not be read (${firstLine(error)})`;
  }
}

/**
 * A windowed stream's part of the plan: its windows, and the requests the stream itself says they take
 * (`estimateRequests`) from what was read of their dates. Pure.
 */
export function windowedStreamPlan(spec: WindowedStreamSpec, planned: PlannedStream, known: KnownDays, run: RunChecks): StreamPlan {
  const { todo, plan, resumed } = planned;
  const saved = todo.map((w) => ({ page: w.page ?? 0, fetched: w.fetched ?? false }));
  const { basis, endpoints, ...estimate } = spec.estimateRequests({ days: known.days, usdPerRow: known.usdPerRow, resumed, saved }, run);
  return {
    stream: spec.name,
    range: `${plan.from}..${plan.to}`,
    windows: todo.length,
    older: todo.filter((w) => w.recheck === true).length,
    resumed,
    requests: estimate.requests,
    minRequests: estimate.minRequests,
    refetches: storedSpan(known.days.flat()),
    basis: basis ?? known.basis,
    ...(endpoints !== undefined && { endpoints }),
    replaces: planned.replaces,
    drops: planned.drops,
  };
}

/** The anomalies' part of the plan: where the run's query starts, and its first request, made now (one not full is the whole collection). */
async function anomaliesPlan(step: SourceStep): Promise<StreamPlan> {
  const { config, warehouse, source, state } = step;
  const since = await anomalyQueryStart(
    state.streams.anomalies?.watermark ?? null,
    anomalyRequest(config),
    async () => (warehouse === null ? null : storedAnomaliesFrom(warehouse, source.name)),
    step.nowMs,
  );
  step.made.anomalies += 1;
  let first: { alerts: number } | { failed: string };
  try {
    first = { alerts: (await step.api().anomalies({ since, limit: ANOMALY_PAGE_LIMIT })).length };
  } catch (error) {
    if (isSettingError(error)) throw error;
    first = { failed: firstLine(error) };
  }
  const { basis, ...estimate } = estimateAnomalyRequests(first, state.streams.anomalies?.splitBySeverity === true);
  return {
    stream: 'anomalies',
    range: `${sinceLabel(since)}..${config.until}`,
    windows: 1,
    resumed: false,
    ...estimate,
    refetches: null,
    replaces: null,
    drops: null,
    basis,
  };
}

/** The source's plan from its streams': the requests in all (a stream not known counts its least) and their time at the rate limit. Pure. */
function sourcePlan(step: SourceStep, plans: StreamPlan[], recheck: SourcePlan['recheck']): SourcePlan {
  const { source } = step;
  const requests = plans.reduce((n, p) => n + (p.requests ?? p.minRequests), 0) + (recheck?.requests ?? 0);
  return {
    source: source.name,
    streams: plans,
    notices: step.notices,
    requests,
    atLeast: plans.some((p) => p.requests === null),
    rateLimit: source.rateLimit,
    dryRunRequests: step.made,
    recheck,
    seconds: Math.ceil((requests * 60) / source.rateLimit),
  };
}

/**
 * Every selected source's plan, and the sources that could not be planned because of a setting (their
 * runs would fail the same way). Reads the state and the published warehouse; writes nothing.
 */
export async function planDryRun(
  config: SyncConfig,
  nowMs: number,
): Promise<{ plans: SourcePlan[]; failed: SourceFailure[]; phases: PhasePlan }> {
  const sources = configSources(config);
  // Refused as the run refuses it: a plan for a mistyped --db would be a first run's.
  requireDbDirectory(config.db);
  // A warehouse in a bucket is not downloaded for a dry run: the state directory's view is used alone.
  const warehouse = !isS3Url(config.db) && existsSync(config.db) ? await openReadOnly(config.db) : null;
  try {
    const plans: SourcePlan[] = [];
    const failed: SourceFailure[] = [];
    for (const source of sources) {
      try {
        plans.push(await planSource(source, { config, nowMs, warehouse }));
      } catch (error) {
        // As in a run, one source's wrong key or URL does not keep the others from being planned.
        if (!isSettingError(error)) throw error;
        failed.push({ source: source.name, error });
      }
    }
    return { plans, failed, phases: await phasesOf(config, sources, warehouse) };
  } finally {
    warehouse?.close();
  }
}

/**
 * The phases around the sources, asked as the run asks them: what an earlier run left undone in the working
 * copy (else the published file), and the sources the warehouse carries no state for.
 */
async function phasesOf(config: SyncConfig, sources: readonly SourceConfig[], published: ReadOnlyWarehouse | null): Promise<PhasePlan> {
  const carried = new Set<string>();
  if (published !== null)
    for (const r of await published.query<{ source: string }>('state/carried_all').catch(() => [])) carried.add(r.source);
  const read = async (wh: ReadOnlyWarehouse) => leftUndone(wh).catch(() => NOTHING_LEFT);
  const work = workingCopyPath(config.stateDir, config.db);
  let left = NOTHING_LEFT;
  if (existsSync(work)) {
    // A working copy a running sync holds open cannot be read: the published file's outbox says what it can.
    const wh = await openReadOnly(work).catch(() => null);
    if (wh !== null)
      try {
        left = await read(wh);
      } finally {
        wh.close();
      }
    else if (published !== null) left = await read(published);
  } else if (published !== null) left = await read(published);
  return phasePlan(config, sources, carried, left);
}

/** The plan as a person reads it; `failed` names the sources not planned (their errors are logged). Pure. */
export function dryRunText(
  plans: readonly SourcePlan[],
  several: boolean,
  failed: readonly string[] = [],
  around: { before: readonly string[]; after: readonly string[] } = { before: [], after: [] },
): string {
  const lines: string[] = [...around.before];
  for (const p of plans) {
    if (several) lines.push(`Source ${p.source}:`);
    for (const n of p.notices) lines.push(`  note: ${n}`);
    for (const s of p.streams) {
      const requests = s.requests === null ? `at least ${s.minRequests}` : `about ${s.requests}`;
      lines.push(
        `  ${s.stream}: ${s.range}, ${s.windows - (s.older ?? 0)} window(s)${s.older ? `, then ${s.older} of older dates (below)` : ''}${s.resumed ? ' (resuming an unfinished plan)' : ''}, ${requests} request(s)${s.endpoints === undefined ? '' : ` (${s.endpoints})`} [${s.basis}]`,
      );
      if (s.drops !== null) lines.push(`    deleted first (--drop-before): ${s.drops}`);
      if (s.replaces !== null)
        lines.push(`    replaced (--full-refresh): every stored date of ${s.replaces}; nothing outside it is deleted`);
      else if (s.refetches !== null) lines.push(`    fetched again (already stored; restated costs are re-read): ${s.refetches}`);
    }
    if (p.recheck !== null) {
      const r = p.recheck;
      const head = `  recheck of ${r.range} (${r.requests} rollups request(s))`;
      if (r.failed !== null)
        lines.push(`${head}: could not compare with the API's rollups (${r.failed}); the run fails on it too unless it has passed by then`);
      else if (r.changed.length === 0)
        lines.push(`${head}: every date it compared equals the API's rollups (dates this run syncs anyway are not compared)`);
      for (const c of r.changed) lines.push(`${head}: ${c.stream} synced again (no longer equal to the API): ${c.dates} [${c.why}]`);
    }
    const made = p.dryRunRequests;
    const madeParts = [
      [made.lineItems, 'line-items page'],
      [made.rollups, 'rollups request'],
      [made.anomalies, 'anomalies request'],
    ] as const;
    const madeText = madeParts
      .filter(([n]) => n > 0)
      .map(([n, what]) => `${n} ${what}${n === 1 ? '' : 's'}`)
      .join(', ');
    if (madeText !== '') lines.push(`  this dry run made ${madeText} for the estimate`);
    const open = p.streams.filter((s) => s.requests === null).map((s) => s.stream);
    const total = p.atLeast
      ? `at least ${p.requests} request(s) in all (${open.join(' and ')} may take more; see above)`
      : `about ${p.requests} request(s) in all`;
    lines.push(`  ${total}: ${formatDuration(p.seconds * 1000)} at ${p.rateLimit} requests a minute`);
  }
  lines.push(...around.after);
  if (failed.length === 0) lines.push('Dry run: nothing was written. Run the same command without --dry-run to sync.');
  else
    lines.push(
      several
        ? `Dry run: nothing was written. Not planned: ${failed.join(', ')}; their runs would fail the same way: fix what the errors name, then try the dry run again.`
        : 'Dry run: nothing was written. It could not be planned; the run would fail the same way: fix what the error names, then try the dry run again.',
    );
  return `${lines.join('\n')}\n`;
}
