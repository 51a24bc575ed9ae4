/**
 * `sync --dry-run`: what a run would do, before it spends a day's quota. Plans each source's windows
 * exactly as a run would (same state, same carried state, same mending), estimates the requests
 * from what is known (rows the warehouse holds per date; with one provider-rollups request, the
 * dollars of dates it does not hold, at the warehouse's own dollars per row), and writes nothing:
 * no state directory, no lock, no working copy.
 */
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { createApiClient } from '../api/client.js';
import { createRequestLimiter } from '../api/resilience.js';
import type { SyncConfig } from '../config.js';
import type { SourceConfig } from '../sources.js';
import { formatDuration } from '../dates.js';
import { keyFingerprint } from '../fingerprint.js';
import { dropBefore, planStream, remainingWindows, splitWindows, type WindowRequest } from '../plan/windows.js';
import { LINE_ITEMS, ROLLUPS_DAILY, tableNames } from '../storage/tables.js';
import { reconcileCarried, type CarriedState } from '../state/carried.js';
import { StateStore, emptyWindowedState } from '../state/store.js';
import { openReadOnly, type ReadOnlyWarehouse } from '../storage/duckdb.js';
import { workingCopyPath } from '../storage/working-copy.js';
import { isS3Url } from '../outputs/s3-url.js';
import { anomalySince, sinceLabel } from './anomalies.js';
import { ROWS_PER_PAGE, rowsOfDay, type DayBasis } from './estimate.js';
import { GROUP_BYS } from '../api/types.js';
import type { StreamName } from './context.js';
import { lineItemsPerDate } from './lookups.js';

/** One stream's part of the plan. */
export interface StreamPlan {
  stream: StreamName;
  /** `from..to` of the dates (anomalies: the detection time it asks from). */
  range: string;
  windows: number;
  resumed: boolean;
  /** Requests expected; null when nothing tells (a first run of line items without rollups). */
  requests: number | null;
  /** At least this many (one a window, or one for anomalies). */
  minRequests: number;
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
  /** Requests the plan expects (the known part), and the time they take at the source's rate limit. */
  requests: number;
  seconds: number;
  rateLimit: number;
  rollupsRequests: number;
}

/**
 * Line items' expected pages for the dates of the windows to fetch: rows stored for a date, else its
 * rollup dollars at the warehouse's dollars per row; null when some date has neither. Each window
 * ends with a part page. Pure.
 */
export function expectedLineItemPages(days: readonly DayBasis[], usdPerRow: number | null, windows: number): number | null {
  let rows = 0;
  for (const day of days) {
    const n = rowsOfDay(day, usdPerRow);
    if (n === null) return null;
    rows += n;
  }
  return Math.ceil(rows / ROWS_PER_PAGE + windows / 2);
}

/** The dates of `[from, to]` that the warehouse already holds (their count and span), for the lookback line. Pure. */
export function storedSpan(days: readonly DayBasis[]): string | null {
  const stored = days.filter((d) => d.storedRows !== null && d.storedRows > 0).map((d) => d.date);
  if (stored.length === 0) return null;
  return `${stored[0]}..${stored.at(-1)} (${stored.length} day${stored.length === 1 ? '' : 's'})`;
}

interface DryRunDeps {
  config: SyncConfig;
  nowMs: number;
  /** The warehouse to read what is stored (the published --db), when there is one. */
  warehouse: ReadOnlyWarehouse | null;
}

/** Plans one source. Makes at most one request (the provider rollups of dates the warehouse does not hold). */
async function planSource(source: SourceConfig, deps: DryRunDeps): Promise<SourcePlan> {
  const { config, warehouse } = deps;
  const notices: string[] = [];
  const identity = { name: source.name, baseUrl: source.baseUrl, keyFingerprint: keyFingerprint(source.apiKey) };
  const store = new StateStore(config.stateDir, identity, basename(workingCopyPath(config.stateDir, config.db), '.duckdb'));
  const fileExisted = existsSync(store.path);
  const loaded = store.load();
  notices.push(...store.notices);
  let carried: CarriedState | null = null;
  if (warehouse !== null) {
    // A warehouse from before the carried state (schema 006) carries none.
    const rows = await warehouse.query<{ state: string }>('state/carried', [source.name]).catch(() => []);
    carried = rows[0] === undefined ? null : JSON.parse(rows[0].state) as CarriedState;
  }
  const { state, notice } = reconcileCarried(loaded, fileExisted, carried, source.name);
  if (notice !== null) notices.push(notice);

  const req: WindowRequest = {
    since: config.since, until: config.until, startDate: config.startDate, lookbackDays: config.lookbackDays,
    windowDays: config.windowDays, fullRefresh: config.fullRefresh, dropBefore: config.dropBefore, today: config.today,
  };
  const plans: StreamPlan[] = [];
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
    const storedFrom = config.fullRefresh && warehouse !== null
      ? (await warehouse.query<{ first: string | null }>('sync/stored_from', [source.name], tableNames(specOf[name])))[0]?.first ?? null : null;
    // A drop first moves the watermark, as the run does.
    const saved = state.streams[name] ?? emptyWindowedState();
    const { notice, plan, resumed } = planStream(config.dropBefore === undefined ? saved : dropBefore(saved, config.dropBefore), { ...req, storedFrom });
    if (notice !== null) notices.push(`${name}: ${notice}`);
    return { plan, resumed, todo: remainingWindows(plan), ...(await replacedAndDropped(name, plan)) };
  };

  let rollupsRequests = 0;
  if (config.streams.includes('line_items')) {
    const { plan, resumed, todo, replaces, drops } = await planned('line_items');
    const days = todo.flatMap((w) => splitWindows(w.start, w.end, 1)).map(({ start: date }): DayBasis => ({ date, usd: null, storedRows: null }));
    let usdPerRow: number | null = null;
    if (warehouse !== null && days.length > 0) {
      const [stored] = await lineItemsPerDate((name, params) => warehouse.query(name, params), [{ source: source.name, from: days[0]!.date, to: days.at(-1)!.date }]);
      for (const d of days) d.storedRows = stored!.get(d.date) ?? null;
      const [avg] = await warehouse.query<{ usd_per_row: number | null }>('sync/line_items_usd_per_row', [source.name]);
      usdPerRow = avg?.usd_per_row ?? null;
    }
    const unknown = days.filter((d) => d.storedRows === null);
    let basis = days.length === 0 ? 'nothing to fetch' : unknown.length === 0 ? 'rows the warehouse holds for these dates' : '';
    if (unknown.length > 0 && usdPerRow !== null) {
      // The one request a dry run makes: the dollars of the dates not stored, priced at the warehouse's dollars per row.
      rollupsRequests += 1;
      try {
        const client = createApiClient({
          baseUrl: source.baseUrl, apiKey: source.apiKey, retry: { retries: 2 },
          limiter: createRequestLimiter({ requestsPerMinute: source.rateLimit }),
        });
        try {
          const usd = new Map<string, number>();
          for (const r of await client.rollups({ startDate: unknown[0]!.date, endDate: unknown.at(-1)!.date, groupBy: 'provider' })) usd.set(r.date, (usd.get(r.date) ?? 0) + Number(r.cost_usd));
          for (const d of unknown) d.usd = usd.get(d.date) ?? 0;
          basis = `rows stored, and the provider rollups' dollars at $${usdPerRow.toFixed(2)} a row for ${unknown.length} date(s) not stored`;
        } finally {
          await client.close();
        }
      } catch (error) {
        basis = `unknown for ${unknown.length} date(s): the provider rollups could not be read (${(error as Error).message.split('\n')[0]})`;
      }
    } else if (unknown.length > 0) {
      basis = `not known before the first page for ${unknown.length} date(s): the API gives no row count, and the warehouse holds no rows to price them`;
    }
    const pages = expectedLineItemPages(days, usdPerRow, todo.length);
    // Each window is checked against its provider rollups before it commits (one request each).
    const checks = config.reconcile === 'off' ? 0 : todo.length;
    plans.push({
      stream: 'line_items', range: `${plan.from}..${plan.to}`, windows: todo.length, resumed,
      requests: pages === null ? null : pages + checks, minRequests: todo.length + checks,
      refetches: storedSpan(days), basis, replaces, drops,
    });
  }
  if (config.streams.includes('rollups')) {
    const { plan, resumed, todo, replaces, drops } = await planned('rollups');
    // The provider view comes from the line items' check when both streams run with checks.
    const perWindow = GROUP_BYS.length - (config.reconcile !== 'off' && config.streams.includes('line_items') ? 1 : 0);
    const requests = todo.length * perWindow;
    plans.push({
      stream: 'rollups', range: `${plan.from}..${plan.to}`, windows: todo.length, resumed, requests, minRequests: requests,
      refetches: null, basis: `${perWindow} request(s) a window`, replaces, drops,
    });
  }
  if (config.streams.includes('anomalies')) {
    const since = anomalySince(state.streams.anomalies?.watermark ?? null, {
      since: config.since, until: config.until, startDate: config.startDate, refreshDays: config.anomalyRefreshDays, fullRefresh: config.fullRefresh,
    }, deps.nowMs);
    plans.push({
      stream: 'anomalies', range: `${sinceLabel(since)}..${config.until}`, windows: 1, resumed: false, requests: null, minRequests: 1,
      refetches: null, basis: 'one request a 100 alerts at least; more when a response is full', replaces: null, drops: null,
    });
  }
  const requests = plans.reduce((n, p) => n + (p.requests ?? p.minRequests), 0) + rollupsRequests;
  return {
    source: source.name, streams: plans, notices, requests, rateLimit: source.rateLimit, rollupsRequests,
    seconds: Math.ceil((requests * 60) / source.rateLimit),
  };
}

/** Every selected source's plan. Reads the state and the published warehouse; writes nothing. */
export async function planDryRun(config: SyncConfig, nowMs: number): Promise<SourcePlan[]> {
  const sources: SourceConfig[] = config.sources ?? [{ name: 'default', baseUrl: config.baseUrl, apiKey: config.apiKey, rateLimit: config.rateLimit }];
  // A warehouse in a bucket is not downloaded for a dry run: the state directory's view is used alone.
  const warehouse = !isS3Url(config.db) && existsSync(config.db) ? await openReadOnly(config.db) : null;
  try {
    const out: SourcePlan[] = [];
    for (const source of sources) out.push(await planSource(source, { config, nowMs, warehouse }));
    return out;
  } finally {
    warehouse?.close();
  }
}

/** The plan as a person reads it. Pure. */
export function dryRunText(plans: readonly SourcePlan[], several: boolean): string {
  const lines: string[] = [];
  for (const p of plans) {
    if (several) lines.push(`Source ${p.source}:`);
    for (const n of p.notices) lines.push(`  note: ${n}`);
    for (const s of p.streams) {
      const requests = s.requests === null ? `at least ${s.minRequests}` : `about ${s.requests}`;
      lines.push(`  ${s.stream}: ${s.range}, ${s.windows} window(s)${s.resumed ? ' (resuming an unfinished plan)' : ''}, ${requests} request(s) [${s.basis}]`);
      if (s.drops !== null) lines.push(`    deleted first (--drop-before): ${s.drops}`);
      if (s.replaces !== null) lines.push(`    replaced (--full-refresh): every stored date of ${s.replaces}; nothing outside it is deleted`);
      else if (s.refetches !== null) lines.push(`    fetched again (already stored; restated costs are re-read): ${s.refetches}`);
    }
    if (p.rollupsRequests > 0) lines.push(`  this dry run made ${p.rollupsRequests} provider-rollups request(s) for the estimate`);
    lines.push(`  about ${p.requests} request(s) in all: ${formatDuration(p.seconds * 1000)} at ${p.rateLimit} requests a minute${p.streams.some((s) => s.requests === null) ? ' (at least; see above)' : ''}`);
  }
  lines.push('Dry run: nothing was written. Run the same command without --dry-run to sync.');
  return `${lines.join('\n')}\n`;
}
