/**
 * The engine for date-windowed streams: plans a stream's windows, fetches several at once (each as
 * window-fetch.ts's steps: every page spooled before the cursor after it is saved), and stores them.
 * A fully fetched window replaces the table's rows for its dates in one
 * transaction, loaded from its page files (small windows wait for each other and share one:
 * store-batch.ts), and only then is it marked done. A crash at any point therefore redoes some pages
 * or an idempotent replace, never loses or doubles a row.
 */
import { eventId } from '../fingerprint.js';
import { join } from 'node:path';
import { CostsyncError } from '../errors.js';
import { completePlan, dropBefore, planStream, remainingWindows, splitWindows, windowDone, type WindowRequest } from '../plan/windows.js';
import type { SyncConfig } from '../config.js';
import { emptyWindowedState, type PlannedWindow, type WindowedStreamState } from '../state/store.js';
import { fileSpool, pageGlob, windowSpoolDir } from '../storage/spool.js';
import { tableNames } from '../storage/tables.js';
import { warn, type SyncContext } from './context.js';
import { horizonStart } from '../plan/horizon.js';
import { wantsRollupTotals, type DayBasis } from './estimate.js';
import type { ProviderRollupExchange } from './reconcile.js';
import { storeNow } from './store-batch.js';
import type { WindowedStreamSpec } from './streams.js';
import { fetchWindow, type FetchedWindow, type WindowPlace } from './window-fetch.js';

export type StreamOutcome = 'done' | 'stopped';

/**
 * What is known of each date of the windows to fetch, for the progress estimate: rows already stored
 * (a re-sync or lookback), and, when that is not enough (see `wantsRollupTotals`), the dates' provider
 * rollup totals (one cheap request; the estimate goes without it if it fails).
 */
async function dayBasis(ctx: SyncContext, todo: readonly PlannedWindow[], resumed: boolean): Promise<DayBasis[]> {
  if (todo.length === 0) return [];
  // The recheck's windows come after the plan's own, newest first: the span is their earliest to latest.
  const from = todo.map((w) => w.start).sort()[0]!;
  const to = todo
    .map((w) => w.end)
    .sort()
    .at(-1)!;
  const stored = await ctx.lookups.lineItemsPerDate(ctx.source, from, to);
  const usd = new Map<string, number>();
  if (wantsRollupTotals(todo.length, resumed, stored.size, ctx.progress.planned !== undefined)) {
    try {
      for (const r of await ctx.client.rollups({ startDate: from, endDate: to, groupBy: 'provider' }))
        usd.set(r.date, (usd.get(r.date) ?? 0) + Number(r.cost_usd));
    } catch (error) {
      ctx.logger.debug(`progress estimate without rollups: ${(error as Error).message}`);
    }
  }
  return todo
    .flatMap((w) => splitWindows(w.start, w.end, 1))
    .map(({ start: date }) => ({ date, usd: usd.get(date) ?? null, storedRows: stored.get(date) ?? null }));
}

/** The window planner's request from a run's settings: the run and its dry run plan alike. Pure. */
export function windowRequest(config: SyncConfig): WindowRequest {
  return {
    since: config.since,
    until: config.until,
    startDate: config.startDate,
    lookbackDays: config.lookbackDays,
    windowDays: config.windowDays,
    fullRefresh: config.fullRefresh,
    dropBefore: config.dropBefore,
    today: config.today,
    horizon: config.fullRefresh ? null : horizonStart(config.until, config.recheckDays),
  };
}

export async function syncWindowedStream(spec: WindowedStreamSpec, ctx: SyncContext, req: WindowRequest): Promise<StreamOutcome> {
  const shared = spec.check.deliversProviderRollups ? ctx.checks.providerRollups : undefined;
  try {
    return await syncWindows(spec, ctx, req, shared);
  } finally {
    // However this stream ends, the rollups stream must not wait for it any longer.
    shared?.openAll();
  }
}

async function syncWindows(
  spec: WindowedStreamSpec,
  ctx: SyncContext,
  req: WindowRequest,
  shared: ProviderRollupExchange | undefined,
): Promise<StreamOutcome> {
  const { warehouse } = ctx;
  const saved = req.dropBefore !== undefined ? await dropStored(spec, ctx, req.dropBefore) : ctx.state.windowed(spec.name);
  const names = tableNames(spec.table);
  const storedFrom = req.fullRefresh
    ? ((await warehouse.query<{ first: string | null }>('sync/stored_from', [ctx.source], names))[0]?.first ?? null)
    : null;
  const { state: streamState, notice, plan, resumed } = planStream(saved ?? emptyWindowedState(), { ...req, storedFrom });
  if (notice !== null) ctx.logger.warn(`${spec.name}: ${notice}`, { source: ctx.source, stream: spec.name });
  await ctx.state.checkpoint({ stream: spec.name, state: { ...streamState, pending: plan } });
  if (!resumed) {
    // Pages of an abandoned plan are of no use now.
    await (ctx.spool ?? fileSpool).clear(join(ctx.spoolDir, spec.name));
  }
  const todo = remainingWindows(plan);
  // Older dates an earlier, stopped run found and did not finish: counted as found again here.
  for (const w of todo) {
    if (w.recheck !== true || (req.recheck ?? []).some((r) => r.start === w.start && r.end === w.end)) continue;
    const dates = splitWindows(w.start, w.end, 1).map((d) => d.start);
    ctx.stats[spec.name].olderChanged += dates.length;
    ctx.stats[spec.name].olderDates.push(...dates);
  }
  shared?.expect(todo);
  // The estimate (a warehouse query, perhaps one request) goes alongside the first pages, not before
  // them: with hundreds of sources, the query waits in the warehouse's queue for seconds.
  const announcing = (async () => {
    const size =
      'pagesPerWindow' in spec.size ? { pages: todo.length * spec.size.pagesPerWindow } : { days: await dayBasis(ctx, todo, resumed) };
    const older = todo.filter((w) => w.recheck === true).length;
    // The estimate may wait its turn for a request: a run stopped meanwhile does not announce a sync it will not make.
    if (ctx.shouldStop()) return;
    ctx.progress.planned?.(spec.name, {
      windows: todo.length,
      from: plan.from,
      to: plan.to,
      resumed,
      ...size,
      ...(older > 0 && { older }),
    });
  })();
  announcing.catch(() => undefined);
  ctx.logger.debug(`${spec.name}: ${resumed ? 'resuming' : 'planned'} ${plan.from}..${plan.to}, ${todo.length} window(s) to sync`, {
    stream: spec.name,
  });

  let failure: unknown = null;
  let stopped = false;
  const queue = [...todo];
  // Fetched windows wait here to be stored together (see store-batch.ts) while the workers go on fetching.
  const waiting: { fetched: FetchedWindow; since: number }[] = [];
  let fetching = 0;
  const stores: Promise<void>[] = [];
  /** Starts storing the waiting windows if it is time (`storeNow`); the stores started. */
  const storeWaiting = (ending: boolean): Promise<void>[] => {
    const rows = waiting.reduce((sum, w) => sum + (w.fetched.rows ?? Infinity), 0);
    const waitedMs = waiting.length === 0 ? 0 : ctx.clock.now() - waiting[0]!.since;
    const limits = { maxWaitMs: ctx.pace.storeWaitMs ?? Infinity, ending };
    if (!storeNow({ windows: waiting.length, rows, waitedMs }, { fetching, queued: queue.length }, limits)) return [];
    // Started together, so they reach the write queue together and share its group commit.
    const started = waiting.splice(0).map(({ fetched }) =>
      storeWindow(spec, ctx, fetched, req).catch((error: unknown) => {
        failure ??= error;
      }),
    );
    stores.push(...started);
    return started;
  };
  const worker = async () => {
    while (failure === null && !stopped) {
      const window = queue.shift();
      if (!window) return;
      fetching += 1;
      try {
        const fetched = await fetchWindow(spec, ctx, window, windowPlace(spec, ctx, window));
        if (fetched === 'stopped') stopped = true;
        else waiting.push({ fetched, since: ctx.clock.now() });
      } catch (error) {
        failure ??= error;
      } finally {
        fetching -= 1;
        shared?.open(window);
      }
      const started = storeWaiting(failure !== null || stopped);
      // No wait allowed (--publish-interval 0): each window is stored, and published, before the next is fetched.
      if (ctx.pace.storeWaitMs === 0) await Promise.all(started);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(ctx.pace.concurrency, queue.length)) }, worker));
  void storeWaiting(true);
  await Promise.all(stores);
  await announcing;
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- a caught error, rethrown as it came
  if (failure !== null) throw failure;
  // The plan is data: the state holds its windows as they went on.
  if (stopped || ctx.state.windowed(spec.name)!.pending!.windows.some((w) => w.status !== 'done')) return 'stopped';

  await ctx.state.checkpoint({
    stream: spec.name,
    state: completePlan(ctx.state.windowed(spec.name)!, plan, new Date(ctx.clock.now()).toISOString()),
  });
  return 'done';
}

/**
 * `--drop-before`: deletes the source's rows dated before `date`, with their derived outputs marked
 * in the same transaction; the stream's state with its watermark past them, recorded with the plan that
 * follows. Run again, it deletes nothing.
 */
async function dropStored(spec: WindowedStreamSpec, ctx: SyncContext, date: string): Promise<WindowedStreamState | undefined> {
  const { warehouse } = ctx;
  const names = tableNames(spec.table);
  const deleted = await warehouse.transaction(async () => {
    const [before] = await warehouse.query<{ n: number; dates: string[] }>('sync/drop_before_count', [date, ctx.source], names);
    if (Number(before!.n) === 0) return 0;
    await warehouse.run('sync/drop_before_delete', [date, ctx.source], names);
    await warehouse.changed(spec.table.table, ctx.source, before!.dates);
    return Number(before!.n);
  });
  if (deleted > 0) {
    ctx.stats[spec.name].deleted += deleted;
    ctx.logger.info(`${spec.name}: dropped ${deleted} row(s) dated before ${date} (--drop-before)`, {
      stream: spec.name,
      source: ctx.source,
    });
    await ctx.afterCommit?.();
  }
  const state = ctx.state.windowed(spec.name);
  return state === undefined ? undefined : dropBefore(state, date);
}

/** A window's name in messages, its spool directory, and the spool's file operations. */
function windowPlace(spec: WindowedStreamSpec, ctx: SyncContext, window: PlannedWindow): WindowPlace {
  return {
    label: `${window.start}..${window.end}`,
    dir: windowSpoolDir(ctx.spoolDir, spec.name, window.start),
    spool: ctx.spool ?? fileSpool,
  };
}

/**
 * Replaces the table's rows for a fetched window's dates with its spooled pages, in one transaction
 * (shared with the windows stored alongside), then marks the window done.
 */
async function storeWindow(
  spec: WindowedStreamSpec,
  ctx: SyncContext,
  { window, disagreement }: FetchedWindow,
  /** The run's request: its recheck horizon (older dates a moved row leaves are named in a warning) and lookback. */
  req: Pick<WindowRequest, 'horizon' | 'lookbackDays'>,
): Promise<void> {
  const { warehouse } = ctx;
  const horizon = req.horizon ?? null;
  // The window's dates equal the API's as fetched: confirmed with its commit, at one time in the state and its carried copy.
  const confirm = { at: new Date(ctx.clock.now()).toISOString(), lookbackDays: req.lookbackDays };
  const stats = ctx.stats[spec.name];
  const { label, dir, spool } = windowPlace(spec, ctx, window);
  const days = splitWindows(window.start, window.end, 1);
  const params = [pageGlob(dir), window.start, window.end, ctx.source];
  const names = tableNames(spec.table);
  const insertSql = window.unique === true ? spec.sql.insertUnique : spec.sql.insertWindow;
  // Windows finished together (other windows, other sources) share a commit, so this body may run twice:
  // what it keeps outside the warehouse (the carried copy's text) is told of a rollback (`CarriedCopy`).
  const diff = await warehouse.transactionMayRepeat(async () => {
    const [{ n: before }] = (await warehouse.query<{ n: number }>('sync/window_count', [window.start, window.end, ctx.source], names)) as [
      { n: number },
    ];
    // A window the table has no rows for (a first sync, a backfill) needs no comparison.
    const counts =
      before === 0
        ? { inserted: 0, updated: 0, deleted: 0 }
        : (await warehouse.query<{ inserted: number; updated: number; deleted: number }>(spec.sql.diff, params, names))[0]!;
    // An id new to a window already stored may be stored at another date (its usage date was corrected): it
    // moves here. A window stored for the first time (a backfill) is not searched: the recheck finds the old date.
    const moved =
      spec.sql.moved !== undefined && before > 0 && counts.inserted > 0
        ? await warehouse.query<{ date: string }>(spec.sql.moved, params, names)
        : [];
    // A moved row is the same line item with another date: an update, not a new row and a deleted one.
    counts.inserted -= moved.length;
    counts.updated += moved.length;
    const left = [...new Set(moved.map((r) => r.date))].sort();
    // A window stored as the API has it (most of a nightly's lookback) is left as it is: rewriting it
    // would change nothing, and its dates would be marked changed for every lake.
    const unchanged = before > 0 && counts.inserted === 0 && counts.updated === 0 && counts.deleted === 0;
    if (!unchanged) {
      if (before > 0) await warehouse.run('sync/window_delete', [window.start, window.end, ctx.source], names);
      const inserted = await warehouse.run(insertSql, params, names);
      await warehouse.changed(spec.table.table, ctx.source, [...days.map((d) => d.start), ...left]);
      if (before === 0) counts.inserted = inserted;
    }
    await ctx.state.carry({ stream: spec.name, start: window.start, end: window.end, ...(confirm !== undefined && { confirm }) });
    // A window stored although its two views disagree is worth telling someone, with the commit.
    if (disagreement !== null) {
      const event = JSON.stringify({ kind: 'reconcile', source: ctx.source, stream: spec.name, window: label, reason: disagreement });
      const id = eventId(ctx.runId, ctx.source, spec.name, label);
      const now = new Date(ctx.clock.now()).toISOString();
      for (const webhook of ctx.notify?.webhooks ?? [])
        await warehouse.run('notify/run_event', [id, webhook, ctx.source, 'reconcile', event, now]);
    }
    return { ...counts, left };
  });
  // The dates the rows left keep rollups that counted them: within the horizon the recheck syncs them
  // again (this run's or the next); an older one is named, with its fix.
  const older = diff.left.filter((date) => horizon === null || date < horizon);
  if (older.length > 0) {
    warn(
      ctx,
      spec.name,
      `${spec.name} ${label}: line item(s) moved here from ${older.join(', ')} (their usage date was corrected) and removed there; the rollups of those dates still count them, and no recheck reaches them: costsync sync --since ${older[0]} --until ${older.at(-1)} brings them up to date`,
      { source: ctx.source, window: label, dates: older },
    );
  }
  const synced = window.recheck === true ? days.map((d) => d.start) : [];
  stats.olderSynced += synced.length;
  await ctx.state.checkpoint(
    { stream: spec.name, synced },
    ...(confirm === undefined ? [] : [{ stream: spec.name, confirm: { from: window.start, to: window.end, ...confirm } }]),
    { stream: spec.name, window: windowDone(window) },
  );
  await spool.clear(dir);
  stats.inserted += diff.inserted;
  stats.updated += diff.updated;
  stats.deleted += diff.deleted;
  await ctx.afterCommit?.();
  ctx.progress.windowDone?.(spec.name, { window: label, ...diff, days: days.length, pages: window.page });
  if (disagreement !== null && ctx.checks.reconcile === 'strict') {
    throw new CostsyncError('CS_ERR_RECONCILE', disagreement, {
      hint: 'The window was stored as last fetched. Run again later (the source may have settled), or use --reconcile on to store such windows with a warning.',
    });
  }
}
