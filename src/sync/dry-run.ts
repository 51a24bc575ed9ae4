/**
 * `sync --dry-run`: what a run would do, before it spends a day's quota. Plans each source's windows
 * exactly as a run would (same state, same carried state, same mending), estimates the requests
 * from what is known (rows the warehouse holds per date; with one provider-rollups request, the
 * dollars of dates it does not hold, at the warehouse's own dollars per row, or with no rows stored
 * at a sample page's; with the first anomalies request, whether alerts take one request or several),
 * and writes nothing: no state directory, no lock, no working copy.
 */
import { existsSync } from 'node:fs';
import { createApiClient, type ApiClient } from '../api/client.js';
import { createRequestLimiter } from '../api/resilience.js';
import { configSources, type SyncConfig } from '../config.js';
import type { SourceConfig } from '../sources.js';
import { formatDuration } from '../dates.js';
import { dropBefore, planStream, remainingWindows, splitWindows } from '../plan/windows.js';
import { LINE_ITEMS, ROLLUPS_DAILY, tableNames } from '../storage/tables.js';
import { openSourceStore } from '../state/source-state.js';
import { emptyWindowedState } from '../state/store.js';
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
import { ROWS_PER_PAGE, dollarsPerRow, rowsOfDay, wantsRollupTotals, type DayBasis } from './estimate.js';
import { GROUP_BYS } from '../api/types.js';
import { LINE_ITEM_PAGE_LIMIT } from './streams.js';
import type { StreamName } from './context.js';
import { windowRequest } from './windowed.js';
import { NO_RECHECK, compareScope, decideRecheck, describeChanges, recheckScope, recheckSettings, type RecheckWindows } from './recheck.js';
import { changedWindows, summarizeDates } from '../plan/horizon.js';
import { lineItemsPerDate } from './lookups.js';
import { ExitCode, isCostsyncError, type CostsyncError } from '../errors.js';

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
  /** Dates already stored that the run fetches again (the lookback), as `from..to (N days)`. */
  refetches: string | null;
  /** How the estimate was made, for a person. */
  basis: string;
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

/**
 * Line items' expected pages for the windows to fetch (each given by its dates): rows stored for a
 * date, else its rollup dollars at the dollars per row; null when some date has neither. A window
 * takes its rows' pages, the last one part full, and one request when it is empty. Pure.
 */
export function expectedLineItemPages(windows: readonly (readonly DayBasis[])[], usdPerRow: number | null): number | null {
  let pages = 0;
  for (const days of windows) {
    let rows = 0;
    for (const day of days) {
      const n = rowsOfDay(day, usdPerRow);
      if (n === null) return null;
      rows += n;
    }
    pages += Math.max(1, Math.ceil(rows / ROWS_PER_PAGE));
  }
  return pages;
}

/** The dates of `[from, to]` that the warehouse already holds (their count and span), for the lookback line. Pure. */
export function storedSpan(days: readonly DayBasis[]): string | null {
  const stored = days.filter((d) => d.storedRows !== null && d.storedRows > 0).map((d) => d.date);
  if (stored.length === 0) return null;
  return `${stored[0]}..${stored.at(-1)} (${stored.length} day${stored.length === 1 ? '' : 's'})`;
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

async function planSourceWith(source: SourceConfig, deps: DryRunDeps, api: () => ApiClient): Promise<SourcePlan> {
  const { config, warehouse } = deps;
  const made = { rollups: 0, lineItems: 0, anomalies: 0 };
  const firstLine = (error: unknown) => (error as Error).message.split('\n')[0] ?? '';
  const notices: string[] = [];
  let carried: string | null = null;
  if (warehouse !== null) {
    // A warehouse from before the carried state (schema 006) carries none.
    const rows = await warehouse.query<{ state: string }>('state/carried', [source.name]).catch(() => []);
    carried = rows[0]?.state ?? null;
  }
  const loaded = openSourceStore(config.stateDir, workingCopyPath(config.stateDir, config.db), source, carried);
  notices.push(...loaded.warnings, ...loaded.info);
  const { state } = loaded;

  const req = windowRequest(config);
  const plans: StreamPlan[] = [];
  // The recheck the run makes first (3 requests), made now: its changed dates are part of the plan.
  let found: RecheckWindows = NO_RECHECK;
  let recheck: SourcePlan['recheck'] = null;
  const settings = recheckSettings(config);
  const scope = warehouse === null ? null : recheckScope(state.streams, req, settings);
  if (scope !== null && warehouse !== null) {
    // The run makes the same requests: one a grouping compared (the provider view alone without the rollups stream).
    const requests = config.streams.includes('rollups') ? GROUP_BYS.length : 1;
    recheck = { range: `${scope.from}..${scope.to}`, requests, changed: [], failed: null };
    try {
      const comparison = await compareScope(api(), warehouse, source.name, scope, settings);
      made.rollups += comparison.requests;
      const decision = decideRecheck(comparison, scope, state.streams.line_items?.rechecked ?? {});
      found = {
        line_items: changedWindows(decision.changed.line_items, config.windowDays),
        rollups: changedWindows(decision.changed.rollups, config.windowDays),
      };
      for (const stream of ['line_items', 'rollups'] as const) {
        const dates = decision.changed[stream];
        if (dates.length === 0) continue;
        const why = comparison.differences.filter(
          (d) => dates.includes(d.date) && (d.check === 'line_items') === (stream === 'line_items'),
        );
        recheck.changed.push({ stream, dates: summarizeDates(dates), why: describeChanges(why, 3) });
      }
    } catch (error) {
      if (isSettingError(error)) throw error;
      made.rollups += 1;
      recheck.failed = firstLine(error);
    }
  }
  const specOf = { line_items: LINE_ITEMS, rollups: ROLLUPS_DAILY } as const;
  /** What the run deletes and replaces of a stream's stored dates, as a person reads it. */
  const replacedAndDropped = async (name: 'line_items' | 'rollups', plan: { from: string; to: string }) => {
    if (warehouse === null) return { replaces: null, drops: null };
    const names = tableNames(specOf[name]);
    let drops: string | null = null;
    if (config.dropBefore !== undefined) {
      const [d] = await warehouse.query<{ n: number; dates: string[] }>('sync/drop_before_count', [config.dropBefore, source.name], names);
      const dates = [...(d?.dates ?? [])].sort();
      drops = Number(d?.n ?? 0) === 0 ? 'nothing stored before it' : `${Number(d!.n)} row(s) dated ${dates[0]}..${dates.at(-1)}`;
    }
    return { replaces: config.fullRefresh ? `${plan.from}..${plan.to}` : null, drops };
  };
  const planned = async (name: 'line_items' | 'rollups') => {
    const storedFrom =
      config.fullRefresh && warehouse !== null
        ? ((await warehouse.query<{ first: string | null }>('sync/stored_from', [source.name], tableNames(specOf[name])))[0]?.first ?? null)
        : null;
    // A drop first moves the watermark, as the run does.
    const saved = state.streams[name] ?? emptyWindowedState();
    const { notice, plan, resumed } = planStream(config.dropBefore === undefined ? saved : dropBefore(saved, config.dropBefore), {
      ...req,
      storedFrom,
      recheck: found[name],
    });
    if (notice !== null) notices.push(`${name}: ${notice}`);
    return { plan, resumed, todo: remainingWindows(plan), ...(await replacedAndDropped(name, plan)) };
  };

  if (config.streams.includes('line_items')) {
    const { plan, resumed, todo, replaces, drops } = await planned('line_items');
    const byWindow = todo.map((w) =>
      splitWindows(w.start, w.end, 1).map(({ start: date }): DayBasis => ({ date, usd: null, storedRows: null })),
    );
    const days = byWindow.flat();
    let usdPerRow: number | null = null;
    if (warehouse !== null && days.length > 0) {
      const [stored] = await lineItemsPerDate(
        (name, params) => warehouse.query(name, params),
        [{ source: source.name, from: days[0]!.date, to: days.at(-1)!.date }],
      );
      for (const d of days) d.storedRows = stored!.get(d.date) ?? null;
      const [avg] = await warehouse.query<{ usd_per_row: number | null }>('sync/line_items_usd_per_row', [source.name]);
      usdPerRow = avg?.usd_per_row ?? null;
    }
    const unknown = days.filter((d) => d.storedRows === null);
    let basis = days.length === 0 ? 'nothing to fetch' : unknown.length === 0 ? 'rows the warehouse holds for these dates' : '';
    let priced = `the warehouse's $${(usdPerRow ?? 0).toFixed(2)} a row`;
    if (unknown.length > 0 && usdPerRow === null) {
      // No stored rows to price the dates (a first run): the first page of the first window gives the dollars per line item.
      made.lineItems += 1;
      try {
        const sample = await api().lineItems({ startDate: todo[0]!.start, endDate: todo[0]!.end, limit: LINE_ITEM_PAGE_LIMIT });
        usdPerRow = dollarsPerRow(sample.data.map((r) => Number(r.net_amount_usd)));
        priced = `$${(usdPerRow ?? 0).toFixed(2)} a row (a sample page of ${sample.data.length} line items)`;
        if (usdPerRow === null)
          basis = `not known before the run for ${unknown.length} date(s): the sample page of line items held no costs to price them`;
      } catch (error) {
        if (isSettingError(error)) throw error;
        basis = `not known for ${unknown.length} date(s): a sample page of line items could not be read (${firstLine(error)})`;
      }
    }
    if (unknown.length > 0 && usdPerRow !== null) {
      // The dollars of the dates not stored, priced at the dollars per row.
      made.rollups += 1;
      try {
        const usd = new Map<string, number>();
        // The recheck's older windows come after the plan's own: the span is the earliest to the latest date.
        const dates = unknown.map((d) => d.date).sort();
        for (const r of await api().rollups({ startDate: dates[0]!, endDate: dates.at(-1)!, groupBy: 'provider' }))
          usd.set(r.date, (usd.get(r.date) ?? 0) + Number(r.cost_usd));
        for (const d of unknown) d.usd = usd.get(d.date) ?? 0;
        basis = `${unknown.length === days.length ? '' : 'rows stored, and '}the provider rollups' dollars at ${priced} for ${unknown.length} date(s) not stored`;
      } catch (error) {
        if (isSettingError(error)) throw error;
        basis = `not known for ${unknown.length} date(s): the provider rollups could not be read (${firstLine(error)})`;
      }
    }
    const pages = expectedLineItemPages(byWindow, usdPerRow);
    // Each window is checked against its provider rollups before it commits (one request each).
    const checks = config.reconcile === 'off' ? 0 : todo.length;
    // The run's progress display asks the provider rollups once for its own estimate.
    const storedDates = days.filter((d) => d.storedRows !== null && d.storedRows > 0).length;
    const estimate = wantsRollupTotals(todo.length, resumed, storedDates) ? 1 : 0;
    plans.push({
      stream: 'line_items',
      range: `${plan.from}..${plan.to}`,
      windows: todo.length,
      older: todo.filter((w) => w.recheck === true).length,
      resumed,
      requests: pages === null ? null : pages + checks + estimate,
      minRequests: todo.length + checks + estimate,
      refetches: storedSpan(days),
      basis,
      replaces,
      drops,
    });
  }
  if (config.streams.includes('rollups')) {
    const { plan, resumed, todo, replaces, drops } = await planned('rollups');
    // The provider view comes from the line items' check when both streams run with checks.
    const perWindow = GROUP_BYS.length - (config.reconcile !== 'off' && config.streams.includes('line_items') ? 1 : 0);
    const requests = todo.length * perWindow;
    plans.push({
      stream: 'rollups',
      range: `${plan.from}..${plan.to}`,
      windows: todo.length,
      older: todo.filter((w) => w.recheck === true).length,
      resumed,
      requests,
      minRequests: requests,
      refetches: null,
      basis: `${perWindow} request(s) a window`,
      replaces,
      drops,
    });
  }
  if (config.streams.includes('anomalies')) {
    const since = await anomalyQueryStart(
      state.streams.anomalies?.watermark ?? null,
      anomalyRequest(config),
      async () => (warehouse === null ? null : storedAnomaliesFrom(warehouse, source.name)),
      deps.nowMs,
    );
    // The run's first request, made now: one that is not full is the whole collection.
    made.anomalies += 1;
    let first: { alerts: number } | { failed: string };
    try {
      first = { alerts: (await api().anomalies({ since, limit: ANOMALY_PAGE_LIMIT })).length };
    } catch (error) {
      if (isSettingError(error)) throw error;
      first = { failed: firstLine(error) };
    }
    const { basis, ...estimate } = estimateAnomalyRequests(first);
    plans.push({
      stream: 'anomalies',
      range: `${sinceLabel(since)}..${config.until}`,
      windows: 1,
      resumed: false,
      ...estimate,
      refetches: null,
      replaces: null,
      drops: null,
      basis,
    });
  }
  const requests = plans.reduce((n, p) => n + (p.requests ?? p.minRequests), 0) + (recheck?.requests ?? 0);
  return {
    source: source.name,
    streams: plans,
    notices,
    requests,
    atLeast: plans.some((p) => p.requests === null),
    rateLimit: source.rateLimit,
    dryRunRequests: made,
    recheck,
    seconds: Math.ceil((requests * 60) / source.rateLimit),
  };
}

/**
 * Every selected source's plan, and the sources that could not be planned because of a setting (their
 * runs would fail the same way). Reads the state and the published warehouse; writes nothing.
 */
export async function planDryRun(config: SyncConfig, nowMs: number): Promise<{ plans: SourcePlan[]; failed: SourceFailure[] }> {
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
    return { plans, failed };
  } finally {
    warehouse?.close();
  }
}

/** The plan as a person reads it; `failed` names the sources not planned (their errors are logged). Pure. */
export function dryRunText(plans: readonly SourcePlan[], several: boolean, failed: readonly string[] = []): string {
  const lines: string[] = [];
  for (const p of plans) {
    if (several) lines.push(`Source ${p.source}:`);
    for (const n of p.notices) lines.push(`  note: ${n}`);
    for (const s of p.streams) {
      const requests = s.requests === null ? `at least ${s.minRequests}` : `about ${s.requests}`;
      lines.push(
        `  ${s.stream}: ${s.range}, ${s.windows - (s.older ?? 0)} window(s)${s.older ? `, then ${s.older} of older dates (below)` : ''}${s.resumed ? ' (resuming an unfinished plan)' : ''}, ${requests} request(s) [${s.basis}]`,
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
  if (failed.length === 0) lines.push('Dry run: nothing was written. Run the same command without --dry-run to sync.');
  else
    lines.push(
      several
        ? `Dry run: nothing was written. Not planned: ${failed.join(', ')}; their runs would fail the same way: fix what the errors name, then try the dry run again.`
        : 'Dry run: nothing was written. It could not be planned; the run would fail the same way: fix what the error names, then try the dry run again.',
    );
  return `${lines.join('\n')}\n`;
}
