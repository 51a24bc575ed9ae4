/**
 * The part of a source's sync state that the warehouse carries (issue: nightly runs from a clean
 * container): per stream the dates synced, the plan's windows done, the anomaly watermark. Mid-window
 * cursors and page counts stay in the local state file: a run that adopts carried state fetches an
 * unfinished window from its first page. Small pure functions, and the text the warehouse holds
 * (`CarriedText`), kept without I/O.
 */
import { confirmDates, type Confirmation } from './recency.js';
import { encodeCarried } from './progress.js';
import type { SyncState, WindowedStreamState } from './store.js';

/** The streams of a state as the warehouse carries them. */
export type CarriedState = SyncState['streams'];

function carriedWindowed(stream: WindowedStreamState): WindowedStreamState {
  return {
    syncedFrom: stream.syncedFrom, syncedThrough: stream.syncedThrough,
    ...(stream.covered !== undefined && { covered: stream.covered.map((r) => ({ from: r.from, to: r.to })) }),
    ...(stream.coverageUnchecked === true && { coverageUnchecked: true }),
    ...(stream.rechecked !== undefined && { rechecked: structuredClone(stream.rechecked) }),
    ...(stream.confirmed !== undefined && { confirmed: stream.confirmed.map((r) => ({ ...r })) }),
    lastSuccessAt: stream.lastSuccessAt,
    pending: stream.pending === null ? null : {
      from: stream.pending.from, to: stream.pending.to, fullRefresh: stream.pending.fullRefresh,
      windows: stream.pending.windows.map((w) => ({
        start: w.start, end: w.end, status: w.status === 'done' ? ('done' as const) : ('todo' as const), cursor: null, page: 0, fetched: false,
        ...(w.recheck === true && { recheck: true }),
      })),
    },
  };
}

/**
 * A window of a windowed stream, named for the carried state; with `confirm`, its dates found equal to
 * the API by its commit (`state/recency.ts`).
 */
export interface CarriedWindow {
  stream: 'line_items' | 'rollups';
  start: string;
  end: string;
  confirm?: Pick<Confirmation, 'at' | 'lookbackDays'>;
}

/**
 * What the warehouse carries of `state`; with `done`, as if those windows were already done (for the
 * transaction that commits them: one, or several in a grouped commit). Pure.
 */
export function carriedState(state: SyncState, done: readonly CarriedWindow[] = []): CarriedState {
  const out: { -readonly [K in keyof CarriedState]: CarriedState[K] } = {};
  for (const name of ['line_items', 'rollups'] as const) {
    const stream = state.streams[name];
    if (stream === undefined) continue;
    const carried = carriedWindowed(stream);
    const committing = done.filter((d) => d.stream === name);
    const isCommitting = (w: { start: string; end: string }) => committing.some((d) => d.start === w.start && d.end === w.end);
    let confirmed = carried.confirmed;
    for (const d of committing) if (d.confirm !== undefined) confirmed = confirmDates(confirmed, { from: d.start, to: d.end, ...d.confirm });
    out[name] =
      carried.pending === null || committing.length === 0
        ? carried
        : {
            ...carried,
            ...(confirmed !== undefined && { confirmed }),
            pending: {
              ...carried.pending,
              windows: carried.pending.windows.map((w) => (isCommitting(w) ? { ...w, status: 'done' as const } : w)),
            },
          };
  }
  if (state.streams.anomalies !== undefined) out.anomalies = { ...state.streams.anomalies };
  return out;
}

/**
 * The state a run goes on from, given the state file (or a fresh state when there was none) and what
 * the warehouse carries: the file's when it agrees with the warehouse (its mid-window cursors are
 * kept), else the warehouse's, which matches its data; with a notice saying which and why. Pure.
 */
export function reconcileCarried(
  file: SyncState, fileExisted: boolean, carried: CarriedState | null, source: string,
): { state: SyncState; notice: string | null } {
  if (carried === null) return { state: file, notice: null };
  if (fileExisted && encodeCarried(carriedState(file)) === encodeCarried(carried)) return { state: file, notice: null };
  const state: SyncState = { ...file, streams: structuredClone(carried) };
  return {
    state,
    notice: fileExisted
      ? `the state file of ${source} disagrees with the warehouse (an older copy, or a run killed between a commit and its state save); going on from the warehouse's state, which matches its data`
      : `no state file for ${source} in --state-dir: going on from the state the warehouse carries`,
  };
}

/**
 * A source's carried state as the warehouse holds it: the text last committed, and the text the
 * transaction under way wrote. A written text becomes the warehouse's only once its transaction
 * commits, so after a rollback (a failed group commit stored again one by one) the same text is
 * written again rather than skipped as unchanged. No I/O: the caller writes and reports settles.
 */
export class CarriedText {
  /** What the transaction under way wrote, if it wrote anything. */
  private written: string | null = null;

  /** `last`: the text the warehouse holds when the run starts (null: none). */
  constructor(private last: string | null) {}

  /** The text last committed: what a check outside any transaction compares with. */
  get committed(): string | null {
    return this.last;
  }

  /** Whether `text` must be written in the transaction under way: the warehouse holds another, as that transaction sees it. */
  differs(text: string): boolean {
    return text !== (this.written ?? this.last);
  }

  /** `text` was written in the transaction under way. */
  wrote(text: string): void {
    this.written = text;
  }

  /** The transaction under way ended: what it wrote is the warehouse's if it committed. Told twice, the second does nothing. */
  settled(committed: boolean): void {
    if (committed && this.written !== null) this.last = this.written;
    this.written = null;
  }
}
