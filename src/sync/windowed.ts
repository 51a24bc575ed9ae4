/**
 * The engine for date-windowed streams. Each page is written durably to the spool (one file per
 * page, tagged by window and page number), and only then is the cursor saved (every second page or
 * second: `CURSOR_SAVE_PAGES`, `CURSOR_SAVE_MS`); a fully fetched window replaces the table's rows for its dates in one
 * transaction, loaded from its page files (small windows wait for each other and share one:
 * store-batch.ts), and only then is it marked done. A crash at any point therefore redoes some pages
 * or an idempotent replace, never loses or doubles a row.
 */
import { eventId } from '../fingerprint.js';
import { join } from 'node:path';
import { ApiError, CostsyncError } from '../errors.js';
import { DROPPED_MESSAGE } from '../api/resilience.js';
import { completePlan, dropBefore, planStream, remainingWindows, splitWindows, type WindowRequest } from '../plan/windows.js';
import { emptyWindowedState, type PlannedWindow } from '../state/store.js';
import { fileSpool, pageGlob, spoolPage, windowSpoolDir, type Spool } from '../storage/spool.js';
import { isDroppedRequest, warn, type SyncContext } from './context.js';
import { IdHashes, hash52 } from './id-set.js';
import { wantsRollupTotals, type DayBasis } from './estimate.js';
import { MAX_FETCH_ATTEMPTS, REFETCH_PAUSE_MS, describeMismatches, totalKey, totalsOf, type ProviderRollupExchange } from './reconcile.js';
import type { FetchedPage, WindowedStreamSpec } from './streams.js';
import { tableNames } from '../storage/tables.js';
import { storeNow } from './store-batch.js';

/** Ids tracked per window to prove them unique; past this the window is simply deduplicated, so memory stays flat. */
export const MAX_TRACKED_IDS = 250_000;

/**
 * A window's cursor is saved once this many pages wait for it or this long passed since the last save,
 * whichever comes first, and at once after the last page, a stop or a failure. Each page is durable in
 * the spool before the cursor after it is saved either way, so a SIGKILL makes the next run fetch again
 * at most these pages (and the one in flight), at any rate limit; a save a page costs CPU that a fast
 * sync notices (a state file written, and the carried state compared, for every page).
 */
export const CURSOR_SAVE_PAGES = 2;
export const CURSOR_SAVE_MS = 1000;

/** How many times a window restarts after the server refuses its cursor (expired). */
export const MAX_WINDOW_RESTARTS = 3;

export type StreamOutcome = 'done' | 'stopped';

/**
 * What is known of each date of the windows to fetch, for the progress estimate: rows already stored
 * (a re-sync or lookback), and, when that is not enough (see `wantsRollupTotals`), the dates' provider
 * rollup totals (one cheap request; the estimate goes without it if it fails).
 */
async function dayBasis(ctx: SyncContext, todo: readonly PlannedWindow[], resumed: boolean): Promise<DayBasis[]> {
  if (todo.length === 0) return [];
  const from = todo[0]!.start;
  const to = todo.at(-1)!.end;
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

/** What the engine keeps of a fetched page once its records are looked at. */
interface TakenPage {
  /** The page's spool file (storage/spool.ts). */
  data: Uint8Array;
  nextCursor: string | null;
  /** Records dated inside the window, and their amount (for progress). */
  rows: number;
  usd: number | undefined;
  /** Records dated outside the window (not stored; warned about). */
  outside: number;
  /** The server returned a cursor it had returned before. */
  loop: boolean;
}

/**
 * Looks at a page's records once, synchronously: dates outside the window, a repeated cursor, the ids'
 * hashes (added to `idHashes`), the rows and amount for progress, and what to spool (the records are the
 * spool's afterwards: see `spoolPage`). Adds the next cursor
 * to `seenCursors`, and the amounts of records inside the window to `totals` (per date and the check's
 * key, see `check.paged`).
 */
export function takePage(
  spec: WindowedStreamSpec,
  page: FetchedPage,
  window: { start: string; end: string; cursor: string | null },
  seenCursors: Set<string>,
  idHashes: IdHashes | null,
  totals: Map<string, number> | null = null,
): TakenPage {
  const { dateField } = spec.spec;
  const amountField = 'amountField' in spec.size ? spec.size.amountField : null;
  const paged = totals === null ? undefined : spec.check.paged;
  let outside = 0;
  let usd = 0;
  for (const r of page.records) {
    const date = r[dateField];
    const inside = typeof date === 'string' && date >= window.start && date <= window.end;
    if (!inside) outside += 1;
    if (amountField !== null && typeof r[amountField] === 'number') usd += r[amountField];
    if (paged !== undefined && inside) addTotal(totals!, date, r[paged.keyField], r[paged.amountField]);
  }
  let loop = false;
  if (page.nextCursor !== null && spec.serverCursors) {
    loop = page.nextCursor === window.cursor || seenCursors.has(page.nextCursor);
    seenCursors.add(page.nextCursor);
  }
  if (idHashes !== null && spec.idField !== null) {
    for (const r of page.records) idHashes.add(hash52(String(r[spec.idField])));
  }
  // As bytes: outside the JavaScript heap while the write waits on the disk.
  const data = spoolPage(page.records, spec.spec.columns);
  return {
    data,
    nextCursor: page.nextCursor,
    rows: page.records.length - outside,
    usd: amountField === null ? undefined : usd,
    outside,
    loop,
  };
}

/** Adds an amount to its date and key (a missing amount counts nothing, as SQL's sum skips NULL). */
function addTotal(totals: Map<string, number>, date: string, key: unknown, amount: unknown): void {
  const k = totalKey(date, key);
  totals.set(k, (totals.get(k) ?? 0) + (typeof amount === 'number' ? amount : 0));
}

function isRejectedCursor(error: unknown): boolean {
  return error instanceof ApiError && error.statusCode === 400 && /cursor/i.test(error.message);
}

export async function syncWindowedStream(spec: WindowedStreamSpec, ctx: SyncContext, req: WindowRequest): Promise<StreamOutcome> {
  const shared = spec.check.deliversProviderRollups ? ctx.providerRollups : undefined;
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
  if (req.dropBefore !== undefined) await dropStored(spec, ctx, req.dropBefore);
  const names = tableNames(spec.spec);
  const storedFrom = req.fullRefresh
    ? ((await warehouse.query<{ first: string | null }>('sync/stored_from', [ctx.source], names))[0]?.first ?? null)
    : null;
  const {
    state: streamState,
    notice,
    plan,
    resumed,
  } = planStream(ctx.state.streams[spec.name] ?? emptyWindowedState(), { ...req, storedFrom });
  ctx.state.streams[spec.name] = streamState;
  if (notice !== null) ctx.logger.warn(`${spec.name}: ${notice}`, { source: ctx.source, stream: spec.name });
  streamState.pending = plan;
  await ctx.saveState();
  if (!resumed) {
    // Pages of an abandoned plan are of no use now.
    await (ctx.spool ?? fileSpool).clear(join(ctx.spoolDir, spec.name));
  }
  const todo = remainingWindows(plan);
  shared?.expect(todo);
  // The estimate (a warehouse query, perhaps one request) goes alongside the first pages, not before
  // them: with hundreds of sources, the query waits in the warehouse's queue for seconds.
  const announcing = (async () => {
    const size =
      'pagesPerWindow' in spec.size ? { pages: todo.length * spec.size.pagesPerWindow } : { days: await dayBasis(ctx, todo, resumed) };
    ctx.progress.planned?.(spec.name, { windows: todo.length, from: plan.from, to: plan.to, resumed, ...size });
  })();
  announcing.catch(() => undefined);
  ctx.logger.debug(`${spec.name}: ${resumed ? 'resuming' : 'planned'} ${plan.from}..${plan.to}, ${todo.length} window(s) to sync`, {
    stream: spec.name,
  });

  let failure: unknown = null;
  let stopped = false;
  const queue = [...todo];
  // Fetched windows wait here to be stored together (see store-batch.ts) while the workers go on fetching.
  const waiting: { window: PlannedWindow; fetched: FetchedWindow; since: number }[] = [];
  let fetching = 0;
  const stores: Promise<void>[] = [];
  /** Starts storing the waiting windows if it is time (`storeNow`); the stores started. */
  const storeWaiting = (ending: boolean): Promise<void>[] => {
    const rows = waiting.reduce((sum, w) => sum + (w.fetched.rows ?? Infinity), 0);
    const waitedMs = waiting.length === 0 ? 0 : ctx.clock.now() - waiting[0]!.since;
    const limits = { maxWaitMs: ctx.storeWaitMs ?? Infinity, ending };
    if (!storeNow({ windows: waiting.length, rows, waitedMs }, { fetching, queued: queue.length }, limits)) return [];
    // Started together, so they reach the write queue together and share its group commit.
    const started = waiting.splice(0).map(({ window, fetched }) =>
      storeWindow(spec, ctx, window, fetched).catch((error: unknown) => {
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
        const fetched = await fetchWindow(spec, ctx, window);
        if (fetched === 'stopped') stopped = true;
        else waiting.push({ window, fetched, since: ctx.clock.now() });
      } catch (error) {
        failure ??= error;
      } finally {
        fetching -= 1;
        shared?.open(window);
      }
      const started = storeWaiting(failure !== null || stopped);
      // No wait allowed (--publish-interval 0): each window is stored, and published, before the next is fetched.
      if (ctx.storeWaitMs === 0) await Promise.all(started);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(ctx.concurrency, queue.length)) }, worker));
  void storeWaiting(true);
  await Promise.all(stores);
  await announcing;
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- a caught error, rethrown as it came
  if (failure !== null) throw failure;
  if (stopped || plan.windows.some((w) => w.status !== 'done')) return 'stopped';

  ctx.state.streams[spec.name] = completePlan(streamState, plan, new Date(ctx.clock.now()).toISOString());
  await ctx.saveState();
  return 'done';
}

/**
 * `--drop-before`: deletes the source's rows dated before `date`, with their derived outputs marked
 * in the same transaction, and moves the stream's watermark past them. Run again, it deletes nothing.
 */
async function dropStored(spec: WindowedStreamSpec, ctx: SyncContext, date: string): Promise<void> {
  const { warehouse } = ctx;
  const names = tableNames(spec.spec);
  const deleted = await warehouse.transaction(async () => {
    const [before] = await warehouse.query<{ n: number; dates: string[] }>('sync/drop_before_count', [date, ctx.source], names);
    if (Number(before!.n) === 0) return 0;
    await warehouse.run('sync/drop_before_delete', [date, ctx.source], names);
    await warehouse.changed(spec.spec.table, ctx.source, before!.dates);
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
  const state = ctx.state.streams[spec.name];
  if (state !== undefined) ctx.state.streams[spec.name] = dropBefore(state, date);
}

/** A window's name in messages, its spool directory, and the spool's file operations. */
function windowPlace(spec: WindowedStreamSpec, ctx: SyncContext, window: PlannedWindow): { label: string; dir: string; spool: Spool } {
  return {
    label: `${window.start}..${window.end}`,
    dir: windowSpoolDir(ctx.spoolDir, spec.name, window.start),
    spool: ctx.spool ?? fileSpool,
  };
}

/** A window whose pages are all spooled, its state saved as fetched: what its store needs to know. */
interface FetchedWindow {
  /** Rows fetched in this run; null when earlier runs fetched some (a resumed window). */
  rows: number | null;
  /** Why the window is stored although its two views disagree, if they do. */
  disagreement: string | null;
}

/** Fetches a window's pages (those not spooled yet) and checks them; 'stopped' when a stop came first. */
async function fetchWindow(spec: WindowedStreamSpec, ctx: SyncContext, window: PlannedWindow): Promise<FetchedWindow | 'stopped'> {
  const stats = ctx.stats[spec.name];
  const { label, dir, spool } = windowPlace(spec, ctx, window);

  if (window.status === 'todo') await spool.clear(dir);
  else {
    // Pages written after the last saved cursor are fetched again: drop them first.
    if (!window.fetched) spool.dropPagesAfter(dir, window.page);
    // Pages an earlier version spooled, in the form this one reads.
    await spool.upgradePages(dir);
  }

  let restarts = 0;
  let rows: number | null = window.page === 0 && !window.fetched ? 0 : null;
  const seenCursors = new Set<string>();
  // Hashes of the ids staged in this run: no repeat shows the window's ids are unique, so the
  // replace can skip deduplication. After a resume the earlier pages' ids are unknown, so the
  // window is deduplicated.
  let idHashes = window.page === 0 && spec.idField !== null ? new IdHashes() : null;
  let unique = idHashes !== null;
  // The check's totals, summed while the pages come: exact only while every id comes once (`unique`).
  let totals = idHashes !== null && spec.check.paged ? new Map<string, number>() : null;
  /** Drops what was fetched of the window, so it is fetched again from its first page. */
  const startOver = async () => {
    await spool.clear(dir);
    Object.assign(window, { status: 'active', cursor: null, page: 0, fetched: false });
    delete window.unique;
    await ctx.saveState();
    seenCursors.clear();
    rows = 0;
    idHashes = spec.idField !== null ? new IdHashes() : null;
    unique = idHashes !== null;
    totals = idHashes !== null && spec.check.paged ? new Map<string, number>() : null;
  };
  let disagreement: string | null = null;
  for (let attempt = 1; ; attempt++) {
    // The next page is fetched while the last one is written: its cursor is known once the page is
    // parsed, and the state takes that cursor only after the page is on disk. At most one page is
    // being written while the next is fetched, and pages are written and saved in order.
    let cursor = window.cursor;
    let fetched = window.fetched;
    let pageNo = window.page;
    /** Every page taken so far, written and its cursor saved, in order; never rejects (see `failed`, the write's error). */
    let writing: Promise<void> = Promise.resolve();
    /** The same, short of the last page. */
    let before = writing;
    const failed: unknown[] = [];
    /** When the cursor was last saved, and whether pages written since then wait for a save. */
    let savedAt = ctx.clock.now();
    let unsaved = 0;
    try {
      while (!fetched) {
        await before;
        if (failed.length > 0) throw failed[0];
        if (ctx.shouldStop()) return 'stopped';
        // The page takes a slot once its key's limiter lets the request go (not while it waits there,
        // or a few slots would hold back every source), and gives it back once its records are taken:
        // what then waits on the disk is bytes outside the heap, at most two pages a window.
        let release = (): void => undefined;
        const slots = spec.takesPageSlot ? ctx.pageSlots : undefined;
        const admit =
          slots &&
          (async () => {
            release = await slots.take();
            if (ctx.shouldStop()) {
              release();
              throw new CostsyncError('CS_ERR_ABORTED', DROPPED_MESSAGE);
            }
            return release;
          });
        let taken: TakenPage | undefined;
        try {
          let page: FetchedPage | undefined;
          try {
            page = await spec.fetchPage(ctx.client, window, cursor, ctx.providerRollups, admit);
          } catch (error) {
            await writing;
            if (failed.length > 0) throw failed[0];
            if (isDroppedRequest(error) && ctx.shouldStop()) return 'stopped';
            if (spec.serverCursors && cursor !== null && isRejectedCursor(error) && restarts < MAX_WINDOW_RESTARTS) {
              restarts += 1;
              warn(
                ctx,
                spec.name,
                `${spec.name} ${label}: the server refused the saved cursor (${(error as Error).message.replace(/^.*?: /, '')}); restarting the window`,
                { window: label },
              );
              await startOver();
              unique = false;
              ({ cursor, fetched, page: pageNo } = window);
              continue;
            }
            throw error;
          }
          // Everything the engine needs of the records is taken now, in one go, so the parsed page is
          // garbage before its write waits on the disk: with hundreds of sources, only the spool
          // files' bytes (outside the JavaScript heap) wait there.
          taken = takePage(
            spec,
            page,
            { start: window.start, end: window.end, cursor },
            seenCursors,
            unique ? idHashes : null,
            unique ? totals : null,
          );
          // This function's frame would otherwise keep the records alive until the next page comes.
          page = undefined;
        } finally {
          release();
        }
        if (taken.outside > 0) {
          warn(
            ctx,
            spec.name,
            `${spec.name} ${label}: the server sent ${taken.outside} record(s) dated outside the requested dates; they were not stored`,
            { window: label },
          );
        }
        if (taken.loop) {
          throw new CostsyncError(
            'CS_ERR_CURSOR_LOOP',
            `${spec.name} ${label}: the server returned a cursor it had already returned, so paging would never end.`,
            {
              hint: 'This is a server fault; report it to the API provider. Progress up to the last good page is kept.',
            },
          );
        }
        pageNo += 1;
        cursor = taken.nextCursor;
        fetched = cursor === null;
        // Every id came once, as far as the window's last page (or the tracking limit) tells.
        if (unique && ((idHashes?.size ?? 0) > MAX_TRACKED_IDS || (fetched && idHashes!.hasRepeat()))) {
          unique = false;
          totals = null;
        }
        if (!unique || fetched) idHashes = null;
        const saved = { status: 'active' as const, cursor, page: pageNo, fetched, ...(fetched ? { unique } : {}) };
        const { rows: pageRows, usd } = taken;
        if (rows !== null) rows += pageRows;
        // The bytes go with the write, and are dropped once written: this function's frame and the
        // write's closure would otherwise keep every window's last page until its next one.
        const spooled: { data: Uint8Array | null } = { data: taken.data };
        taken = undefined;
        // Bytes waiting for the disk are bounded too: when the disk lags, windows wait here.
        const written = spec.takesPageSlot && ctx.spoolSlots ? await ctx.spoolSlots.take() : () => undefined;
        before = writing;
        writing = writing.then(async () => {
          try {
            if (failed.length > 0) return;
            await spool.writePage(dir, saved.page, spooled.data!);
            spooled.data = null;
            Object.assign(window, saved);
            unsaved += 1;
            if (saved.fetched || unsaved >= CURSOR_SAVE_PAGES || ctx.clock.now() - savedAt >= CURSOR_SAVE_MS) {
              unsaved = 0;
              await ctx.saveState();
              savedAt = ctx.clock.now();
            }
            stats.pages += 1;
            ctx.progress.page?.(spec.name, { rows: pageRows, window: label, ...(usd !== undefined ? { usd } : {}) });
          } catch (error) {
            failed.push(error);
          } finally {
            spooled.data = null;
            written();
          }
        });
      }
    } finally {
      // However the loop ends, the pages taken are written and their cursor saved before anything else happens.
      await writing;
      if (unsaved > 0) {
        unsaved = 0;
        await ctx.saveState();
      }
    }
    if (failed.length > 0) throw failed[0];
    if (ctx.reconcile === 'off') break;
    let mismatches;
    try {
      mismatches = await spec.check.run(ctx, window, dir, tableNames(spec.spec), unique && totals !== null ? totalsOf(totals) : undefined);
    } catch (error) {
      // The window's pages are spooled and its cursor saved: the next run checks and stores it.
      if (isDroppedRequest(error) && ctx.shouldStop()) return 'stopped';
      throw error;
    }
    if (mismatches.length === 0) break;
    const detail = describeMismatches(mismatches, spec.check.sides);
    if (attempt >= MAX_FETCH_ATTEMPTS) {
      disagreement = `${spec.name} ${label}: the ${spec.check.sides[0]} and the ${spec.check.sides[1]} still disagree after ${attempt} fetches (the source kept changing while costsync paged, or it drops rows); the last fetch was stored: ${detail}`;
      warn(ctx, spec.name, disagreement, { window: label, mismatches: mismatches.slice(0, 20) });
      break;
    }
    ctx.logger.info(
      `${spec.name} ${label}: the ${spec.check.sides[0]} and the ${spec.check.sides[1]} disagree (${detail}); fetching the window again`,
      {
        stream: spec.name,
        window: label,
        attempt,
      },
    );
    stats.refetches += 1;
    await ctx.clock.sleep(REFETCH_PAUSE_MS * attempt);
    if (ctx.shouldStop()) return 'stopped';
    await startOver();
  }
  return { rows, disagreement };
}

/**
 * Replaces the table's rows for a fetched window's dates with its spooled pages, in one transaction
 * (shared with the windows stored alongside), then marks the window done.
 */
async function storeWindow(
  spec: WindowedStreamSpec,
  ctx: SyncContext,
  window: PlannedWindow,
  { disagreement }: FetchedWindow,
): Promise<void> {
  const { warehouse } = ctx;
  const stats = ctx.stats[spec.name];
  const { label, dir, spool } = windowPlace(spec, ctx, window);
  const days = splitWindows(window.start, window.end, 1);
  const params = [pageGlob(dir), window.start, window.end, ctx.source];
  const names = tableNames(spec.spec);
  const insertSql = window.unique === true ? spec.sql.insertUnique : spec.sql.insertWindow;
  const diff = await warehouse.transaction(
    async () => {
      const [{ n: before }] = (await warehouse.query<{ n: number }>(
        'sync/window_count',
        [window.start, window.end, ctx.source],
        names,
      )) as [{ n: number }];
      // A window the table has no rows for (a first sync, a backfill) needs no comparison.
      const counts =
        before === 0
          ? { inserted: 0, updated: 0, deleted: 0 }
          : (await warehouse.query<{ inserted: number; updated: number; deleted: number }>(spec.sql.diff, params, names))[0]!;
      if (before > 0) await warehouse.run('sync/window_delete', [window.start, window.end, ctx.source], names);
      const inserted = await warehouse.run(insertSql, params, names);
      await warehouse.changed(
        spec.spec.table,
        ctx.source,
        days.map((d) => d.start),
      );
      await ctx.carryState?.({ stream: spec.name, start: window.start, end: window.end });
      if (before === 0) counts.inserted = inserted;
      // A window stored although its two views disagree is worth telling someone, with the commit.
      if (disagreement !== null) {
        const event = JSON.stringify({ kind: 'reconcile', source: ctx.source, stream: spec.name, window: label, reason: disagreement });
        const id = eventId(ctx.runId, ctx.source, spec.name, label);
        const now = new Date(ctx.clock.now()).toISOString();
        for (const webhook of ctx.notify?.webhooks ?? [])
          await warehouse.run('notify/run_event', [id, webhook, ctx.source, 'reconcile', event, now]);
      }
      return counts;
      // Windows finished together (other windows, other sources) share a commit: see `TransactionOptions.group`.
    },
    { group: true },
  );
  Object.assign(window, { status: 'done', cursor: null });
  delete window.unique;
  await ctx.saveState();
  await spool.clear(dir);
  stats.inserted += diff.inserted;
  stats.updated += diff.updated;
  stats.deleted += diff.deleted;
  await ctx.afterCommit?.();
  ctx.progress.windowDone?.(spec.name, { window: label, ...diff, days: days.length, pages: window.page });
  if (disagreement !== null && ctx.reconcile === 'strict') {
    throw new CostsyncError('CS_ERR_RECONCILE', disagreement, {
      hint: 'The window was stored as last fetched. Run again later (the source may have settled), or use --reconcile on to store such windows with a warning.',
    });
  }
}
