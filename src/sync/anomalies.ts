/**
 * The anomalies stream. The endpoint has only `since` and `limit` (at most 100) and no stated
 * order, so a full response may hide records. `collectAnomalies` narrows full responses with the
 * filters until none is full, and, when the server turns out to answer in ascending order, by
 * moving `since` forward; what even that cannot reach is reported, never silently dropped.
 */
import type { AnomaliesQuery } from '../api/client.js';
import { ANOMALY_STATUSES, SEVERITIES, type Anomaly } from '../api/types.js';
import type { SyncConfig } from '../config.js';
import { addDays } from '../dates.js';
import { horizonStart } from '../plan/horizon.js';
import { APPENDER_KINDS, appendRecords, type Column } from '../storage/columns.js';
import type { ReadOnlyWarehouse } from '../storage/duckdb.js';
import { apiColumnsOf } from '../storage/tables.js';
import { isDroppedRequest, warn, type SyncContext } from './context.js';
import type { RequestEstimate } from './estimate.js';

export const ANOMALY_PAGE_LIMIT = 100;
/** Re-read this much before the watermark, for alerts that arrive late with an earlier timestamp. */
export const WATERMARK_OVERLAP_MS = 60 * 60 * 1000;
/** A bound on requests for one collection, so a hostile server cannot keep it going forever. */
export const MAX_ANOMALY_REQUESTS = 5000;

export type AnomalyFilters = Pick<AnomaliesQuery, 'severity' | 'status' | 'provider_type'>;

export interface Unreachable {
  filters: AnomalyFilters;
  since: string | undefined;
  reason: string;
}

export interface Collected {
  records: Map<string, Anomaly>;
  /** Responses received: a request a stop cut or kept from being sent is not a page. */
  pages: number;
  unreachable: Unreachable[];
  /** The run is stopping: the collection ended early, so `records` may be incomplete. */
  stopped: boolean;
}

const ms = (iso: string) => Date.parse(iso);

/** True when the timestamps never go down (the server answered oldest first). Pure. */
export function isAscending(records: readonly Anomaly[]): boolean {
  for (let i = 1; i < records.length; i++) if (ms(records[i]!.detected_date) < ms(records[i - 1]!.detected_date)) return false;
  return true;
}

/**
 * For a full, ascending response: the `since` that skips what was surely all seen, which is every
 * timestamp but the last (the last may continue past the page). Null when the page has one
 * timestamp only, so moving on would lose records. Pure.
 */
export function nextSinceAfterAscendingPage(records: readonly Anomaly[]): string | null {
  const distinct = [...new Set(records.map((r) => ms(r.detected_date)))].sort((a, b) => a - b);
  if (distinct.length < 2) return null;
  return new Date(distinct[distinct.length - 2]!).toISOString();
}

/**
 * Every anomaly after `since`, however the server orders them. `knownProviders` seeds the
 * provider split; providers seen in responses are added as they come.
 */
export async function collectAnomalies(
  fetch: (query: AnomaliesQuery) => Promise<Anomaly[]>,
  since: string | undefined,
  knownProviders: readonly string[],
  limit = ANOMALY_PAGE_LIMIT,
  shouldStop: () => boolean = () => false,
  startBySeverity = false,
): Promise<Collected> {
  const records = new Map<string, Anomaly>();
  const unreachable: Unreachable[] = [];
  const providers = new Set(knownProviders);
  // Provider splits done so far, with the providers each has visited: a provider first seen later
  // is visited in every earlier split too.
  const providerSplits: { filters: AnomalyFilters; from: string | undefined; visited: Set<string> }[] = [];
  let requests = 0;
  let pages = 0;
  let stopped = false;

  const visit = async (filters: AnomalyFilters, from: string | undefined): Promise<void> => {
    // A stop ends the collection at the next request: what was collected is kept, the watermark is not moved.
    if (stopped || shouldStop()) {
      stopped = true;
      return;
    }
    if (requests >= MAX_ANOMALY_REQUESTS) {
      unreachable.push({ filters, since: from, reason: `stopped after ${MAX_ANOMALY_REQUESTS} requests` });
      return;
    }
    requests += 1;
    let page: Anomaly[];
    try {
      page = await fetch({ ...filters, ...(from !== undefined ? { since: from } : {}), limit });
    } catch (error) {
      if (!(isDroppedRequest(error) && shouldStop())) throw error;
      stopped = true;
      return;
    }
    pages += 1;
    for (const a of page) {
      records.set(a.id, a);
      if (typeof a.provider_type === 'string') providers.add(a.provider_type);
    }
    if (page.length < limit) return;
    if (filters.severity === undefined) {
      for (const severity of SEVERITIES) await visit({ ...filters, severity }, from);
      return;
    }
    if (filters.status === undefined) {
      for (const status of ANOMALY_STATUSES) await visit({ ...filters, status }, from);
      return;
    }
    if (filters.provider_type === undefined) {
      const split = { filters, from, visited: new Set<string>() };
      providerSplits.push(split);
      for (const provider_type of [...providers].sort()) {
        split.visited.add(provider_type);
        await visit({ ...filters, provider_type }, from);
      }
      return;
    }
    const next = isAscending(page) ? nextSinceAfterAscendingPage(page) : null;
    if (next !== null && (from === undefined || ms(next) > ms(from))) {
      await visit(filters, next);
      return;
    }
    unreachable.push({
      filters,
      since: from,
      reason: isAscending(page)
        ? `more than ${limit} alerts share one timestamp with these filters`
        : `more than ${limit} alerts match these filters and the server does not answer oldest first`,
    });
  };

  // Known to overflow one response: the split a full first response would lead to, without that response.
  if (startBySeverity) for (const severity of SEVERITIES) await visit({ severity }, since);
  else await visit({}, since);
  for (let grew = true; grew;) {
    grew = false;
    for (const split of [...providerSplits]) {
      for (const provider_type of [...providers].sort()) {
        if (split.visited.has(provider_type)) continue;
        split.visited.add(provider_type);
        grew = true;
        await visit({ ...split.filters, provider_type }, split.from);
      }
    }
  }
  return { records, pages, unreachable, stopped };
}

/** The staged columns: the registry's, as the Appender writes them. */
const COLUMNS: readonly Column[] = apiColumnsOf('anomalies').map((c) => ({ name: c.name, kind: APPENDER_KINDS[c.type] }));

export interface AnomalyRequest {
  since?: string | undefined;
  until: string;
  startDate: string;
  refreshDays: number;
  fullRefresh: boolean;
  /**
   * The first date of an alert the source has stored (null: none): a full refresh starts there when earlier, and the
   * horizon's re-read never before it.
   */
  storedFrom?: string | null;
  /** The recheck horizon's first date (null: none): alerts detected since are read again, for status changes weeks later. */
  horizonFrom?: string | null;
}

/** The anomaly request from a run's settings: the run and its dry run alike. Pure. */
export function anomalyRequest(config: SyncConfig): AnomalyRequest {
  return {
    since: config.since,
    until: config.until,
    startDate: config.startDate,
    refreshDays: config.anomalyRefreshDays,
    fullRefresh: config.fullRefresh,
    horizonFrom: horizonStart(config.until, config.recheckDays),
  };
}

/** What `anomalySince` needs of the warehouse for a full refresh: the source's first stored alert date. */
export async function storedAnomaliesFrom(warehouse: Pick<ReadOnlyWarehouse, 'query'>, source: string): Promise<string | null> {
  const [row] = await warehouse.query<{ first: string | null }>('sync/anomalies_stored_from', [source]);
  return row?.first ?? null;
}

/**
 * Where this run's anomaly query starts (exclusive): the earlier of the watermark less an overlap
 * and the refresh window (so status changes of recent alerts arrive), or the first date for a
 * first run, a backfill or a full refresh. Pure.
 */
export function anomalySince(watermark: string | null, req: AnomalyRequest, nowMs: number): string {
  const dayStart = (date: string) => Date.parse(`${date}T00:00:00Z`) - 1;
  const refresh = Date.parse(`${addDays(new Date(nowMs).toISOString().slice(0, 10), -req.refreshDays)}T00:00:00Z`) - 1;
  let from: number;
  // A full refresh covers what is stored, as the windowed streams' does.
  const first = req.fullRefresh && req.storedFrom != null && req.storedFrom < req.startDate ? req.storedFrom : req.startDate;
  if (req.fullRefresh || watermark === null) from = dayStart(req.since ?? first);
  else
    from = Math.min(
      Date.parse(watermark) - WATERMARK_OVERLAP_MS,
      refresh,
      req.since !== undefined ? dayStart(req.since) : Infinity,
      // The horizon's alerts are read again, never ones older than the source holds (nothing outside what it synced).
      req.horizonFrom != null && req.storedFrom != null
        ? dayStart(req.horizonFrom > req.storedFrom ? req.horizonFrom : req.storedFrom)
        : Infinity,
    );
  return new Date(from).toISOString();
}

/**
 * Where a run's anomaly query starts (`anomalySince`), asking `storedFrom` for the source's first stored alert
 * only when it may count: a full refresh from the first date, or the horizon's re-read. The run and its dry run alike.
 */
export async function anomalyQueryStart(
  watermark: string | null,
  req: AnomalyRequest,
  storedFrom: () => Promise<string | null>,
  nowMs: number,
): Promise<string> {
  const needed = (req.fullRefresh && req.since === undefined) || req.horizonFrom != null;
  return anomalySince(watermark, { ...req, storedFrom: needed ? await storedFrom() : null }, nowMs);
}

/**
 * The anomalies requests a run makes, from the size of the first response (null: not known): one
 * when it is not full; else at least one more a severity, as `collectAnomalies` splits a full response. Pure.
 */
export function anomalyRequests(firstResponse: number | null, startBySeverity = false): RequestEstimate {
  // Started split (the last collection overflowed one response): a request a severity, at least.
  if (startBySeverity)
    return {
      requests: firstResponse !== null && firstResponse < ANOMALY_PAGE_LIMIT ? SEVERITIES.length : null,
      minRequests: SEVERITIES.length,
    };
  if (firstResponse === null) return { requests: null, minRequests: 1 };
  if (firstResponse < ANOMALY_PAGE_LIMIT) return { requests: 1, minRequests: 1 };
  return { requests: null, minRequests: 1 + SEVERITIES.length };
}

/**
 * What the anomalies stream would do, from its first response (`failed`: why it could not be made): its
 * requests (`anomalyRequests`) and how that is known, for a person. `sync --dry-run` asks this. Pure.
 */
export function estimateAnomalyRequests(
  first: { alerts: number } | { failed: string },
  startBySeverity = false,
): RequestEstimate & { basis: string } {
  if ('failed' in first)
    return {
      ...anomalyRequests(null, startBySeverity),
      basis: `the first request could not be made (${first.failed}); more when a response is full`,
    };
  if (startBySeverity)
    return {
      ...anomalyRequests(first.alerts, true),
      basis: `the last run's alerts overflowed one response: one request a severity${first.alerts < ANOMALY_PAGE_LIMIT ? ` (${first.alerts} alert(s) now: the next run asks once)` : ', further while a response is full'}`,
    };
  return {
    ...anomalyRequests(first.alerts),
    basis:
      first.alerts < ANOMALY_PAGE_LIMIT
        ? `${first.alerts} alert(s): one response holds them`
        : `the first response is full (${ANOMALY_PAGE_LIMIT} alerts): split by severity, then further while a response is full; how far is not known before`,
  };
}

/**
 * The start of an anomaly query as a person reads it: `since` is exclusive, so one millisecond before
 * midnight is that next date (`2026-08-27`, not `2026-08-26T23:59:59.999Z`); other times to the second. Pure.
 */
export function sinceLabel(since: string): string {
  if (since.endsWith('T23:59:59.999Z')) return new Date(Date.parse(since) + 1).toISOString().slice(0, 10);
  return since.replace(/\.\d{3}Z$/, 'Z');
}

export async function syncAnomalies(ctx: SyncContext, req: AnomalyRequest): Promise<'done' | 'stopped'> {
  const { warehouse } = ctx;
  const stats = ctx.stats.anomalies;
  // A first sync records the stream at once, as every later one finds it (status shows it from then on).
  if (ctx.state.anomalies() === undefined)
    await ctx.state.checkpoint({ stream: 'anomalies', state: { watermark: null, lastSuccessAt: null } });
  const streamState = ctx.state.anomalies()!;
  const since = await anomalyQueryStart(streamState.watermark, req, () => storedAnomaliesFrom(warehouse, ctx.source), ctx.clock.now());
  const known = await ctx.lookups.knownProviders(ctx.source);
  const label = `${sinceLabel(since)}..${req.until}`;
  ctx.progress.planned?.('anomalies', { windows: 1, from: sinceLabel(since), to: req.until, resumed: false });
  const collected = await collectAnomalies(
    (q) => ctx.client.anomalies(q),
    since,
    known,
    ANOMALY_PAGE_LIMIT,
    () => ctx.shouldStop(),
    streamState.splitBySeverity === true,
  );
  stats.pages += collected.pages;
  ctx.progress.page?.('anomalies', { rows: collected.records.size, window: label, pages: collected.pages });
  for (const u of collected.stopped ? [] : collected.unreachable) {
    warn(
      ctx,
      'anomalies',
      `anomalies: some alerts may be missing: ${u.reason} (filters ${JSON.stringify(u.filters)}, since ${u.since ?? 'the beginning'})`,
    );
  }

  const untilMs = Date.parse(`${req.until}T23:59:59.999Z`);
  const sinceMs = Date.parse(since);
  const all = [...collected.records.values()];
  const inRange = all.filter((a) => ms(a.detected_date) > sinceMs && ms(a.detected_date) <= untilMs);
  const beforeSince = all.filter((a) => ms(a.detected_date) <= sinceMs).length;
  if (beforeSince > 0) {
    warn(
      ctx,
      'anomalies',
      `anomalies: the server sent ${beforeSince} alert(s) detected before the requested "since"; they were not stored`,
    );
  }
  // Alerts after --until are outside the requested dates: left for the run that asks for them.
  const unknown = inRange.filter((a) => !SEVERITIES.includes(a.severity as never) || !ANOMALY_STATUSES.includes(a.status as never));
  if (unknown.length > 0) {
    warn(
      ctx,
      'anomalies',
      `anomalies: ${unknown.length} alert(s) have a severity or status the spec does not list (for example ${unknown[0]!.id}: ${unknown[0]!.severity}/${unknown[0]!.status}); stored as sent`,
    );
  }

  if (collected.stopped && inRange.length === 0) {
    ctx.logger.info(`anomalies ${label}: stopped before any alert arrived; the next run collects them`, {
      stream: 'anomalies',
      window: label,
    });
    return 'stopped';
  }
  const now = new Date(ctx.clock.now()).toISOString();
  const diff = await warehouse.transaction(async () => {
    // The stage is emptied before this transaction commits, so it is empty whenever one begins.
    await warehouse.append('_stage_anomalies', (appender) => appendRecords(appender, COLUMNS, inRange, (i) => [i]));
    const dates = await warehouse.query<{ d: string }>('sync/anomalies_changed_dates', [ctx.source]);
    await warehouse.changed(
      'anomalies',
      ctx.source,
      dates.map((r) => r.d),
    );
    // Notifications are recorded with the change that causes them (before the upsert: it compares with what is stored).
    for (const webhook of ctx.notify?.webhooks ?? []) {
      await warehouse.run('notify/anomaly_events', [
        ctx.source,
        ctx.notify!.minRank,
        ctx.notify!.cutoff,
        ctx.notify!.statusChanges,
        now,
        webhook,
      ]);
    }
    // History rows are added (dated today) only for alerts that are new or whose status changed.
    if ((await warehouse.run('sync/anomalies_record_history', [now, ctx.runId, ctx.source])) > 0)
      await warehouse.changed('anomaly_status_history', ctx.source, [now.slice(0, 10)]);
    const [counts] = await warehouse.query<{ inserted: number; updated: number; deleted: number }>('sync/anomalies_diff', [ctx.source]);
    await warehouse.run('sync/anomalies_upsert', [now, ctx.source]);
    await warehouse.run('sync/stage_clear_all', [], { stage: '_stage_anomalies' });
    return counts!;
  });
  stats.inserted += diff.inserted;
  stats.updated += diff.updated;
  await ctx.afterCommit?.();

  if (collected.stopped) {
    // What was collected is stored (an upsert, safe to repeat); the watermark stays, so the next run collects from the same point.
    // Not a window done: the line says what was stored of a collection the stop cut.
    ctx.logger.info(
      `anomalies ${label}: stopped after ${collected.pages} page(s); stored what arrived (+${diff.inserted} ~${diff.updated}), and the next run collects from the same point`,
      { stream: 'anomalies', window: label, inserted: diff.inserted, updated: diff.updated },
    );
    return 'stopped';
  }
  const newest = inRange.reduce<string | null>(
    (max, a) => (max === null || ms(a.detected_date) > ms(max) ? a.detected_date : max),
    streamState.watermark,
  );
  await ctx.state.checkpoint({
    stream: 'anomalies',
    state: {
      watermark: newest === null ? null : new Date(ms(newest)).toISOString(),
      lastSuccessAt: now,
      // More than one response holds: the next collection starts split (fewer again, and it asks unfiltered).
      ...(collected.records.size >= ANOMALY_PAGE_LIMIT ? { splitBySeverity: true as const } : {}),
    },
  });
  ctx.progress.windowDone?.('anomalies', { window: label, ...diff });
  return 'done';
}
