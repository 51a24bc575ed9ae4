/**
 * The recheck: on every incremental run, the dates a source has synced within the horizon
 * (`plan/horizon.ts`) are compared with the API's rollups, which answer any range in one response per
 * grouping, so a restatement weeks old is found for three requests a source. The dates that differ
 * are synced again after the lookback's own (`planRun`'s `recheck`). Dates this run fetches anyway
 * are not compared.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { ApiClient } from '../api/client.js';
import type { SyncConfig } from '../config.js';
import { GROUP_BYS, type GroupBy, type RollupRow } from '../api/types.js';
import { addRange, coverageOf } from '../plan/coverage.js';
import { changedWindows, clipRanges, horizonStart, inRanges, subtractRange } from '../plan/horizon.js';
import { confirmCompared } from '../state/recency.js';
import { planStream, type DateWindow, type WindowRequest } from '../plan/windows.js';
import { emptyWindowedState, type DateRange, type RecheckedDate, type WindowedStreamState } from '../state/store.js';
import type { ReadOnlyWarehouse } from '../storage/duckdb.js';
import { differencesFromApi, fetchRollups, micros, type ApiDifference, type StoredAmount } from '../verify-api.js';
import { formatUsd } from '../money.js';
import type { HeldSpan } from './rollups-on-hand.js';
import { isDroppedRequest, warn, type StreamName, type SyncContext } from './context.js';

type Windowed = 'line_items' | 'rollups';

/** What a recheck compares: the horizon's first date and, per stream, the stored dates within it the lookback does not sync. */
export interface RecheckScope {
  /** The horizon's first date. */
  horizon: string;
  from: string;
  to: string;
  ranges: Record<Windowed, DateRange[]>;
}

/** The recheck's settings, from the run's. */
export interface RecheckSettings {
  streams: readonly StreamName[];
  /** `--recheck-days` (null or absent: the default horizon; 0: no recheck). */
  recheckDays: number | null | undefined;
  /** The largest difference per date and group that is not a change, in dollars. */
  tolerance: number;
  windowDays: number;
}

/** The recheck's settings from a run's (`tolerance` absent: verify's default, one cent). Pure. */
export function recheckSettings(
  config: Pick<SyncConfig, 'streams' | 'windowDays'> & { recheckDays?: number | null; tolerance?: number },
): RecheckSettings {
  return { streams: config.streams, recheckDays: config.recheckDays, tolerance: config.tolerance ?? 0.01, windowDays: config.windowDays };
}

/**
 * The dates to compare, per windowed stream: covered, within the horizon, and outside the windows this
 * run plans anyway. Null for a full refresh, a recheck turned off, or nothing to compare. Pure.
 */
export function recheckScope(
  states: Partial<Record<Windowed, WindowedStreamState | undefined>>,
  req: WindowRequest,
  settings: Pick<RecheckSettings, 'streams' | 'recheckDays'>,
): RecheckScope | null {
  const horizon = req.fullRefresh ? null : horizonStart(req.until, settings.recheckDays);
  if (horizon === null) return null;
  // Nothing before --drop-before is synced again.
  const from = req.dropBefore !== undefined && req.dropBefore > horizon ? req.dropBefore : horizon;
  const ranges: Record<Windowed, DateRange[]> = { line_items: [], rollups: [] };
  for (const stream of ['line_items', 'rollups'] as const) {
    if (!settings.streams.includes(stream)) continue;
    const { state, plan } = planStream(states[stream] ?? emptyWindowedState(), { ...req, recheck: [] });
    // What is stored: the coverage, and the windows a plan under way has stored (covered once it completes).
    let stored = coverageOf(state).ranges;
    for (const w of plan.windows) if (w.status === 'done') stored = addRange(stored, { from: w.start, to: w.end });
    let mine = clipRanges(stored, from, req.until);
    // A window this run fetches needs no comparison; one an earlier run of the plan stored does (the API may have changed since).
    for (const w of plan.windows) if (w.status !== 'done') mine = subtractRange(mine, { from: w.start, to: w.end });
    ranges[stream] = mine;
  }
  const all = [...ranges.line_items, ...ranges.rollups];
  if (all.length === 0) return null;
  return {
    horizon,
    from: all.map((r) => r.from).sort()[0]!,
    to: all
      .map((r) => r.to)
      .sort()
      .at(-1)!,
    ranges,
  };
}

/** The stored and the API's amounts over a scope, and where they differ. */
export interface Comparison {
  differences: ApiDifference[];
  api: ReadonlyMap<GroupBy, readonly RollupRow[]>;
  stored: readonly StoredAmount[];
  requests: number;
}

/**
 * The span the recheck asks the API for: the scope, run on through `until` (the run's last date) so the
 * same requests answer for the lookback's dates too (not compared; the run's windows take them,
 * `RollupsOnHand`), and the last date a check may take (the last one compared). Pure.
 */
export function askedSpan(scope: Pick<RecheckScope, 'from' | 'to'>, until: string): HeldSpan {
  return { from: scope.from, to: until > scope.to ? until : scope.to, checksTo: scope.to };
}

/**
 * Fetches the API's rollups over the scope (provider only when rollups are not synced), through `through`
 * (`askedSpan`), and compares them with the warehouse's.
 */
export async function compareScope(
  client: ApiClient,
  warehouse: Pick<ReadOnlyWarehouse, 'query'>,
  source: string,
  scope: RecheckScope,
  settings: Pick<RecheckSettings, 'streams' | 'tolerance'>,
  through: string = scope.to,
): Promise<Comparison> {
  let requests = 0;
  const api = new Map<GroupBy, RollupRow[]>();
  const groupBys: readonly GroupBy[] = settings.streams.includes('rollups') ? GROUP_BYS : ['provider'];
  const { to } = askedSpan(scope, through);
  for (const groupBy of groupBys) api.set(groupBy, await fetchRollups(client, scope.from, to, groupBy, () => (requests += 1)));
  const stored = await warehouse.query<StoredAmount>('verify/api_stored', [source, scope.from, scope.to]);
  const dates = {
    inRollups: (d: string) => inRanges(scope.ranges.rollups, d),
    inLineItems: (d: string) => inRanges(scope.ranges.line_items, d),
  };
  return { differences: differencesFromApi(source, stored, api, dates, settings.tolerance), api, stored, requests };
}

/** A short, stable digest of one date's amounts of one kind (`provider` rollups, or `line_items` sums). Pure. */
export function dateDigest(rows: readonly { date: string; key: string; usd: string | number }[], date: string): string {
  const text = rows
    .filter((r) => r.date === date)
    .map((r) => `${r.key}=${micros(r.usd)}`)
    .sort()
    .join(';');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** What the recheck decided: the dates each stream syncs again, those left as they are, and the memory to keep. */
export interface RecheckDecision {
  changed: Record<Windowed, string[]>;
  /** Dates whose line items still differ from the rollups they were synced again against: not fetched again. */
  accepted: string[];
  rechecked: Record<string, RecheckedDate>;
}

/**
 * Which dates to sync again. A rollup group that differs syncs the rollups of its date; line items
 * whose sum differs from the provider rollups sync the line items, unless the date was synced again
 * against these same rollups already and its stored sums are as they were then (the API never
 * promises that rollups equal the line items' sums). Memory of dates that now agree is dropped. Pure.
 */
export function decideRecheck(
  comparison: Comparison,
  scope: RecheckScope,
  memory: Readonly<Record<string, RecheckedDate>>,
): RecheckDecision {
  const rollupDates = new Set<string>();
  const lineDates = new Set<string>();
  for (const d of comparison.differences) (d.check === 'line_items' ? lineDates : rollupDates).add(d.date);
  const provider = (comparison.api.get('provider') ?? []).map((r) => ({ date: r.date, key: r.provider_type ?? '', usd: r.cost_usd }));
  const lines = comparison.stored
    .filter((r) => r.group_by === 'line_items')
    .map((r) => ({ date: r.date, key: r.provider_type ?? '', usd: r.usd }));
  const rechecked: Record<string, RecheckedDate> = {};
  for (const [date, entry] of Object.entries(memory)) {
    // Kept while the date is outside what this run compared (the lookback's), or still differs.
    if (date >= scope.from && (!inRanges(scope.ranges.line_items, date) || lineDates.has(date))) rechecked[date] = { ...entry };
  }
  const accepted: string[] = [];
  for (const date of [...lineDates].sort()) {
    const api = dateDigest(provider, date);
    const stored = dateDigest(lines, date);
    const entry = rechecked[date];
    if (entry !== undefined && entry.api === api && entry.synced === true && (entry.lines === undefined || entry.lines === stored)) {
      rechecked[date] = { ...entry, lines: stored };
      accepted.push(date);
      lineDates.delete(date);
    } else rechecked[date] = { api };
  }
  return { changed: { line_items: [...lineDates].sort(), rollups: [...rollupDates].sort() }, accepted, rechecked };
}

/**
 * A stream state whose coverage an older costsync wrote as a min..max (which may hide gaps), once the recheck
 * compared all of it with the API and found no date to sync again: its ranges are checked now. Null: unchanged. Pure.
 */
export function coverageChecked(state: WindowedStreamState, scope: RecheckScope, changed: readonly string[]): WindowedStreamState | null {
  const { ranges, checked } = coverageOf(state);
  if (checked || changed.length > 0 || !ranges.every((r) => r.from >= scope.horizon)) return null;
  const { coverageUnchecked: _unchecked, ...rest } = state;
  return { ...rest, covered: ranges.map((r) => ({ ...r })) };
}

/** One line per date that differs, for a person: `2026-10-12 rollups provider aws: stored $1.00, API $2.00`. Pure. */
export function describeChanges(differences: readonly ApiDifference[], max = 5): string {
  const shown = differences
    .slice(0, max)
    .map((d) => `${d.date} ${d.check} ${d.group}: stored ${formatUsd(d.stored_usd)}, API ${formatUsd(d.api_usd)}`);
  return shown.join('; ') + (differences.length > max ? `; and ${differences.length - max} more` : '');
}

/** The windows each stream syncs again. */
export type RecheckWindows = Record<Windowed, DateWindow[]>;

export const NO_RECHECK: RecheckWindows = { line_items: [], rollups: [] };

/**
 * A source's recheck before its windowed streams plan: compares, decides, keeps the memory in the line
 * items' state (saved with their plan), counts and logs what it found. A stop cuts it short: nothing found.
 */
export async function recheckSource(ctx: SyncContext, settings: RecheckSettings, req: WindowRequest): Promise<RecheckWindows> {
  const lineState = ctx.state.windowed('line_items');
  const scope = recheckScope({ line_items: lineState, rollups: ctx.state.windowed('rollups') }, req, settings);
  if (scope === null || ctx.shouldStop()) return NO_RECHECK;
  // Dates found equal hold the API's as of the asking or later: confirmed at this time (FOCUS's Recency).
  const at = new Date(ctx.clock.now()).toISOString();
  let comparison: Comparison;
  try {
    comparison = await compareScope(ctx.client, ctx.warehouse, ctx.source, scope, settings, req.until);
  } catch (error) {
    if (isDroppedRequest(error) && ctx.shouldStop()) return NO_RECHECK;
    throw error;
  }
  const held = askedSpan(scope, req.until);
  for (const [groupBy, rows] of comparison.api) ctx.checks.onHand?.put(groupBy, held, rows);
  const decision = decideRecheck(comparison, scope, lineState?.rechecked ?? {});
  const found: Record<Windowed, WindowedStreamState | undefined> = { line_items: lineState, rollups: ctx.state.windowed('rollups') };
  if (lineState !== undefined) {
    const { rechecked: _old, ...rest } = lineState;
    found.line_items = Object.keys(decision.rechecked).length > 0 ? { ...rest, rechecked: decision.rechecked } : rest;
  }
  // The line items' dates compared and found equal are confirmed; those that differ are, once synced again.
  const lines = found.line_items;
  if (lines !== undefined && settings.streams.includes('line_items') && scope.ranges.line_items.length > 0) {
    const unequal = [...decision.changed.line_items, ...decision.accepted];
    found.line_items = { ...lines, confirmed: confirmCompared(lines.confirmed, scope.ranges.line_items, unequal, at, req.lookbackDays) };
  }
  for (const stream of ['line_items', 'rollups'] as const) {
    const state = found[stream];
    const checked =
      state === undefined || !settings.streams.includes(stream) ? null : coverageChecked(state, scope, decision.changed[stream]);
    if (checked !== null) found[stream] = checked;
  }
  // What the recheck learnt (its memory, coverage now checked), recorded when it changed anything.
  const changes = (['line_items', 'rollups'] as const).flatMap((stream) => {
    const state = found[stream];
    return state === undefined || isDeepStrictEqual(state, ctx.state.windowed(stream)) ? [] : [{ stream, state }];
  });
  if (changes.length > 0) await ctx.state.checkpoint(...changes);
  const fields = { source: ctx.source, from: scope.from, to: scope.to };
  for (const stream of ['line_items', 'rollups'] as const) {
    const dates = decision.changed[stream];
    if (!settings.streams.includes(stream) || dates.length === 0) continue;
    ctx.stats[stream].olderChanged += dates.length;
    ctx.stats[stream].olderDates.push(...dates);
    const why = describeChanges(
      comparison.differences.filter((d) => dates.includes(d.date) && (d.check === 'line_items') === (stream === 'line_items')),
    );
    ctx.logger.info(
      `${stream}: ${dates.length} older date(s) no longer equal the API (restated since they were synced, or changed here); syncing them again: ${why}`,
      {
        ...fields,
        stream,
        dates,
      },
    );
  }
  if (decision.accepted.length > 0) {
    warn(
      ctx,
      'line_items',
      `line_items: ${decision.accepted.length} date(s) (${decision.accepted.join(', ')}) still differ from the API's provider rollups after they were synced again against them; kept as the API's line items give them, and not fetched again until those rollups change`,
      fields,
    );
  }
  ctx.logger.debug(
    `recheck ${scope.from}..${scope.to}: ${comparison.requests} request(s), ${comparison.differences.length} difference(s)`,
    fields,
  );
  return {
    line_items: changedWindows(decision.changed.line_items, settings.windowDays),
    rollups: changedWindows(decision.changed.rollups, settings.windowDays),
  };
}
