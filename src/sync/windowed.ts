/**
 * The engine for date-windowed streams. Each page is committed to a staging table tagged with its
 * window and page number, and only then is the cursor saved; a fully fetched window replaces the
 * table's rows for its dates in one transaction, and only then is it marked done. A crash at any
 * point therefore redoes a page or redoes an idempotent replace, never loses or doubles a row.
 */
import { ApiError, CostsyncError } from '../errors.js';
import { completePlan, planRun, remainingWindows, type WindowRequest } from '../plan/windows.js';
import { emptyWindowedState, type PlannedWindow } from '../state/store.js';
import { appendRecords } from './columns.js';
import { warn, type SyncContext } from './context.js';
import type { WindowedStreamSpec } from './streams.js';

/** How many times a window restarts after the server refuses its cursor (expired). */
export const MAX_WINDOW_RESTARTS = 3;

export type StreamOutcome = 'done' | 'stopped';

function isRejectedCursor(error: unknown): boolean {
  return error instanceof ApiError && error.statusCode === 400 && /cursor/i.test(error.message);
}

export async function syncWindowedStream(spec: WindowedStreamSpec, ctx: SyncContext, req: WindowRequest): Promise<StreamOutcome> {
  const { warehouse } = ctx;
  const stats = ctx.stats[spec.name];
  const streamState = (ctx.state.streams[spec.name] ??= emptyWindowedState());
  const { plan, resumed } = planRun(streamState, req);
  streamState.pending = plan;
  ctx.saveState();
  if (!resumed) {
    // Pages of an abandoned plan are of no use now.
    await warehouse.transaction(() => warehouse.run('sync/stage_clear_all', [], { stage: spec.stage }));
  }
  const todo = remainingWindows(plan);
  ctx.progress.planned?.(spec.name, { windows: todo.length, from: plan.from, to: plan.to, resumed });
  ctx.logger.debug(`${spec.name}: ${resumed ? 'resuming' : 'planned'} ${plan.from}..${plan.to}, ${todo.length} window(s) to sync`, { stream: spec.name });

  let failure: unknown = null;
  let stopped = false;
  const queue = [...todo];
  const worker = async () => {
    while (failure === null && !stopped) {
      const window = queue.shift();
      if (!window) return;
      try {
        if ((await syncWindow(spec, ctx, window)) === 'stopped') stopped = true;
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(ctx.concurrency, queue.length)) }, worker));
  if (failure !== null) throw failure;
  if (stopped || plan.windows.some((w) => w.status !== 'done')) return 'stopped';

  if (plan.fullRefresh) {
    // A full refresh leaves nothing outside the dates it synced.
    const deleted = await warehouse.transaction(async () => {
      const before = await warehouse.sql<{ n: number }>(`SELECT count(*) AS n FROM ${spec.table}`);
      await warehouse.sql(`DELETE FROM ${spec.table} WHERE ${spec.dateField} < $1::DATE OR ${spec.dateField} > $2::DATE`, [plan.from, plan.to]);
      const after = await warehouse.sql<{ n: number }>(`SELECT count(*) AS n FROM ${spec.table}`);
      return before[0]!.n - after[0]!.n;
    });
    stats.deleted += deleted;
  }
  ctx.state.streams[spec.name] = completePlan(streamState, plan, new Date(ctx.clock.now()).toISOString());
  ctx.saveState();
  return 'done';
}

async function syncWindow(spec: WindowedStreamSpec, ctx: SyncContext, window: PlannedWindow): Promise<StreamOutcome> {
  const { warehouse } = ctx;
  const stats = ctx.stats[spec.name];
  const label = `${window.start}..${window.end}`;
  const params = [window.start];

  if (window.status === 'todo') {
    await warehouse.transaction(() => warehouse.run('sync/stage_clear_window', params, { stage: spec.stage }));
  } else if (!window.fetched) {
    // Pages committed after the last saved cursor are fetched again: drop them first.
    await warehouse.transaction(() => warehouse.run('sync/stage_drop_pages_after', [window.start, window.page], { stage: spec.stage }));
  }

  let restarts = 0;
  const seenCursors = new Set<string>();
  while (!window.fetched) {
    if (ctx.shouldStop()) return 'stopped';
    let page;
    try {
      page = await spec.fetchPage(ctx.client, window, window.cursor);
    } catch (error) {
      if (spec.serverCursors && window.cursor !== null && isRejectedCursor(error) && restarts < MAX_WINDOW_RESTARTS) {
        restarts += 1;
        warn(ctx, spec.name, `${spec.name} ${label}: the server refused the saved cursor (${(error as Error).message.replace(/^.*?: /, '')}); restarting the window`, { window: label });
        await warehouse.transaction(() => warehouse.run('sync/stage_clear_window', params, { stage: spec.stage }));
        Object.assign(window, { status: 'active', cursor: null, page: 0, fetched: false });
        ctx.saveState();
        seenCursors.clear();
        continue;
      }
      throw error;
    }
    const inWindow = page.records.filter((r) => {
      const date = r[spec.dateField];
      return typeof date === 'string' && date >= window.start && date <= window.end;
    });
    if (inWindow.length < page.records.length) {
      warn(ctx, spec.name, `${spec.name} ${label}: the server sent ${page.records.length - inWindow.length} record(s) dated outside the requested dates; they were not stored`, { window: label });
    }
    if (page.nextCursor !== null && spec.serverCursors) {
      if (page.nextCursor === window.cursor || seenCursors.has(page.nextCursor)) {
        throw new CostsyncError('CS_ERR_CURSOR_LOOP', `${spec.name} ${label}: the server returned a cursor it had already returned, so paging would never end.`, {
          hint: 'This is a server fault; report it to the API provider. Progress up to the last good page is kept.',
        });
      }
      seenCursors.add(page.nextCursor);
    }
    const pageNo = window.page + 1;
    await ctx.pages.append(spec.stage, (appender) => appendRecords(appender, spec.columns, inWindow, (i) => [window.start, pageNo, i]));
    Object.assign(window, { status: 'active', cursor: page.nextCursor, page: pageNo, fetched: page.nextCursor === null });
    ctx.saveState();
    stats.pages += 1;
    ctx.progress.page?.(spec.name, { rows: inWindow.length, window: label });
  }

  const diff = await warehouse.transaction(async () => {
    const [counts] = await warehouse.query<{ inserted: number; updated: number; deleted: number }>(spec.sql.diff, [window.start, window.end]);
    await warehouse.run(spec.sql.deleteWindow, [window.start, window.end]);
    await warehouse.run(spec.sql.insertWindow, [window.start]);
    return counts!;
  });
  Object.assign(window, { status: 'done', cursor: null });
  ctx.saveState();
  await warehouse.transaction(() => warehouse.run('sync/stage_clear_window', params, { stage: spec.stage }));
  stats.inserted += diff.inserted;
  stats.updated += diff.updated;
  stats.deleted += diff.deleted;
  await ctx.afterWindow?.(spec.name, window);
  ctx.progress.windowDone?.(spec.name, { window: label, ...diff });
  return 'done';
}
