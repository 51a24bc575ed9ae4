/**
 * Date-window planning for the windowed streams (line items, rollups): pure functions of the saved
 * state and the run's request, in the manner of dlt's incremental cursors.
 */
import { addDays, toDayNumber } from '../dates.js';
import { addRange, coverageOf, coversRange, dropRangesAfter, dropRangesBefore } from './coverage.js';
import type { PendingPlan, PlannedWindow, WindowedStreamState } from '../state/store.js';
import { confirmedFrom, confirmedThrough } from '../state/recency.js';

export interface WindowRequest {
  /** `--since`: re-sync from this date (a backfill). */
  since?: string | undefined;
  /** `--until`: the last date, inclusive. */
  until: string;
  /** `--start-date`: where a first run starts. */
  startDate: string;
  /** Days re-synced on every incremental run, because cost data is restated. */
  lookbackDays: number;
  windowDays: number;
  fullRefresh: boolean;
  /** `--drop-before`: nothing before this date is synced (the run deletes what is stored before it). */
  dropBefore?: string | undefined;
  /** The first date the warehouse holds for this stream and source (null: none); asked only for a full refresh. */
  storedFrom?: string | null | undefined;
  /** Today (UTC): a watermark or plan past it, written by an older costsync, is mended. Absent: no check. */
  today?: string | undefined;
  /** Older dates the recheck found changed (`plan/horizon.ts`), newest first: synced again after the plan's own windows. */
  recheck?: readonly DateWindow[] | undefined;
  /** The recheck horizon's first date (null or absent: no recheck). */
  horizon?: string | null | undefined;
}

export interface DateWindow {
  start: string;
  end: string;
}

/**
 * Splits [from, to] into consecutive windows of `days` days; the last one may be shorter.
 * Empty when `to` is before `from`.
 */
export function splitWindows(from: string, to: string, days: number): DateWindow[] {
  const out: DateWindow[] = [];
  const last = toDayNumber(to);
  for (let start = toDayNumber(from); start <= last; start += days) {
    const s = addDays(from, start - toDayNumber(from));
    const endDay = Math.min(start + days - 1, last);
    out.push({ start: s, end: addDays(s, endDay - start) });
  }
  return out;
}

function newWindows(from: string, to: string, days: number): PlannedWindow[] {
  return splitWindows(from, to, days).map((w) => ({ ...w, status: 'todo', cursor: null, page: 0, fetched: false }));
}

/** The recheck's windows that no window still to fetch overlaps, as planned windows. Pure. */
function recheckWindows(req: WindowRequest, windows: readonly PlannedWindow[]): PlannedWindow[] {
  return (req.recheck ?? [])
    .filter((r) => !windows.some((w) => w.status !== 'done' && w.start <= r.end && w.end >= r.start))
    .map((r) => ({ start: r.start, end: r.end, status: 'todo', cursor: null, page: 0, fetched: false, recheck: true }));
}

/**
 * The first date this run must sync when it starts a new plan:
 * - a full refresh: `since`, else the earliest date synced or stored (it re-syncs what is stored),
 *   else `startDate`;
 * - a first run (no state): `since`, else `startDate`;
 * - `since` given: `since` (a backfill re-syncs from there);
 * - otherwise: `lookbackDays` days before the last synced date, so restated days are re-read.
 * Never before `dropBefore`, and never after `until`, so at least the last day is synced.
 */
export function planStart(state: WindowedStreamState, req: WindowRequest): string {
  let from: string;
  if (req.fullRefresh) from = req.since ?? earliest(state.syncedFrom, req.storedFrom ?? null) ?? req.startDate;
  else if (state.syncedThrough === null) from = req.since ?? req.startDate;
  else if (req.since !== undefined) from = req.since;
  else from = addDays(state.syncedThrough, 1 - req.lookbackDays);
  if (req.dropBefore !== undefined && from < req.dropBefore) from = req.dropBefore;
  return from > req.until ? req.until : from;
}

/** The earlier of two dates, either of which may be missing. Pure. */
function earliest(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  return b === null || a < b ? a : b;
}

/**
 * The plan for this run, and whether it resumes an unfinished one. An unfinished plan is resumed
 * when the run asks for nothing else (no other `--since`, no new full refresh); its windows keep
 * their boundaries (staged pages and cursors belong to them), and days up to `until` are added.
 */
export function planRun(state: WindowedStreamState, req: WindowRequest): { plan: PendingPlan; resumed: boolean } {
  const pending = state.pending;
  const sameRequest =
    pending !== null &&
    (req.since === undefined || req.since === pending.from) &&
    (!req.fullRefresh || pending.fullRefresh) &&
    (req.dropBefore === undefined || pending.from >= req.dropBefore);
  if (pending && sameRequest) {
    const windows = [...pending.windows];
    let to = pending.to;
    if (req.until > pending.to) {
      windows.push(...newWindows(addDays(pending.to, 1), req.until, req.windowDays));
      to = req.until;
    }
    windows.push(...recheckWindows(req, windows));
    return { plan: { ...pending, to, windows }, resumed: true };
  }
  const from = planStart(state, req);
  const windows = newWindows(from, req.until, req.windowDays);
  windows.push(...recheckWindows(req, windows));
  return { plan: { from, to: req.until, fullRefresh: req.fullRefresh, windows }, resumed: false };
}

/**
 * A stream state whose watermark or pending plan reaches past `today` (an older costsync took a future
 * `--until`): the watermark is pulled back to `today`, so later runs re-read their lookback again, and a
 * plan's windows that start after `today` are dropped (a window that straddles it keeps its bounds: its
 * cursor belongs to them, and the days past today simply hold nothing). Null when nothing needed mending. Pure.
 */
export function mendFutureState(state: WindowedStreamState, today: string): { state: WindowedStreamState; notice: string } | null {
  const through = state.syncedThrough;
  const pendingTo = state.pending?.to ?? null;
  if ((through === null || through <= today) && (pendingTo === null || pendingTo <= today)) return null;
  let mended: WindowedStreamState = state;
  const parts: string[] = [];
  if (through !== null && through > today) {
    mended = {
      ...mended,
      syncedThrough: today,
      syncedFrom: mended.syncedFrom !== null && mended.syncedFrom > today ? today : mended.syncedFrom,
      ...(mended.covered !== undefined && { covered: dropRangesAfter(mended.covered, today) }),
      ...(mended.confirmed !== undefined && { confirmed: confirmedThrough(mended.confirmed, today) }),
    };
    parts.push(`the watermark ${through} is after today (${today}); it is now ${today}, so this run re-reads its lookback`);
  }
  if (state.pending !== null && pendingTo !== null && pendingTo > today) {
    const windows = state.pending.windows.filter((w) => w.start <= today);
    mended = { ...mended, pending: windows.length === 0 ? null : { ...state.pending, to: today, windows } };
    parts.push(`the unfinished plan reached ${pendingTo}; it now ends today`);
  }
  return { state: mended, notice: `${parts.join('; ')} (an earlier run was given a future --until)` };
}

/**
 * A stream's plan from its saved state, as a run makes it and `--dry-run` shows it: the state mended
 * first when it reaches past `req.today` (with the notice to log), then `planRun`. Pure.
 */
export function planStream(
  saved: WindowedStreamState,
  req: WindowRequest,
): { state: WindowedStreamState; notice: string | null; plan: PendingPlan; resumed: boolean } {
  const mended = req.today === undefined ? null : mendFutureState(saved, req.today);
  const state = mended?.state ?? saved;
  return { state, notice: mended?.notice ?? null, ...planRun(state, req) };
}

/** Windows still to replace: the plan's own in date order, then the recheck's newest first. Pure. */
export function remainingWindows(plan: PendingPlan): PlannedWindow[] {
  const todo = plan.windows.filter((w) => w.status !== 'done');
  return [
    ...todo.filter((w) => w.recheck !== true).sort((a, b) => a.start.localeCompare(b.start)),
    ...todo.filter((w) => w.recheck === true).sort((a, b) => b.start.localeCompare(a.start)),
  ];
}

/** How far a window's fetch got, once its last page is spooled. */
export interface WindowProgress {
  readonly status: 'active';
  readonly cursor: string | null;
  readonly page: number;
  readonly fetched: boolean;
  readonly unique?: boolean;
}

/** `window` once a page is spooled: its cursor goes on from `progress`. Pure. */
export function windowAdvanced(window: PlannedWindow, progress: WindowProgress): PlannedWindow {
  return { ...window, ...progress };
}

/** `window` to be fetched again from its first page, asked for at `askedAt` (absent: when it is asked, `windowAsked`). Pure. */
export function windowRestarted(window: PlannedWindow, askedAt?: string): PlannedWindow {
  const { unique: _unique, askedAt: _asked, ...rest } = window;
  return { ...rest, status: 'active', cursor: null, page: 0, fetched: false, ...(askedAt !== undefined && { askedAt }) };
}

/** `window` about to be fetched: a window yet to ask its first page takes `now` as when it was asked. Pure. */
export function windowAsked(window: PlannedWindow, now: string): PlannedWindow {
  return window.page === 0 && !window.fetched ? { ...window, askedAt: now } : window;
}

/** `window` once its rows are committed. Pure. */
export function windowDone(window: PlannedWindow): PlannedWindow {
  const { unique: _unique, ...rest } = window;
  return { ...rest, status: 'done', cursor: null };
}

/** Whether two windows are the same dates of a plan (a window's identity: its progress changes, its dates never). Pure. */
export function sameWindow(a: DateWindow, b: DateWindow): boolean {
  return a.start === b.start && a.end === b.end;
}

/**
 * The stream state once every window of `plan` is replaced: the watermarks widen to cover the plan
 * (a full refresh deletes nothing outside its plan, so what was synced before stays synced).
 */
export function completePlan(state: WindowedStreamState, plan: PendingPlan, nowIso: string): WindowedStreamState {
  const before = coverageOf(state);
  const covered = addRange(before.ranges, { from: plan.from, to: plan.to });
  // An older state's min..max is taken on trust until a full refresh has synced all of it again.
  const unchecked =
    !before.checked && !(plan.fullRefresh && before.ranges.every((r) => coversRange([{ from: plan.from, to: plan.to }], r)));
  return {
    syncedFrom: state.syncedFrom === null || plan.from < state.syncedFrom ? plan.from : state.syncedFrom,
    syncedThrough: state.syncedThrough === null || plan.to > state.syncedThrough ? plan.to : state.syncedThrough,
    covered,
    ...(unchecked && { coverageUnchecked: true }),
    ...(state.rechecked !== undefined && { rechecked: state.rechecked }),
    ...(state.confirmed !== undefined && { confirmed: state.confirmed }),
    lastSuccessAt: nowIso,
    pending: null,
  };
}

/** The stream state once everything before `date` is dropped (`--drop-before`). Pure. */
export function dropBefore(state: WindowedStreamState, date: string): WindowedStreamState {
  if (state.syncedFrom === null || state.syncedFrom >= date) return state;
  const emptied = state.syncedThrough === null || state.syncedThrough < date;
  const covered = state.covered === undefined ? {} : { covered: dropRangesBefore(state.covered, date) };
  return {
    ...state,
    ...(state.confirmed !== undefined && { confirmed: confirmedFrom(state.confirmed, date) }),
    syncedFrom: emptied ? null : (covered.covered?.[0]?.from ?? date),
    ...(emptied && { syncedThrough: null }),
    ...covered,
  };
}
