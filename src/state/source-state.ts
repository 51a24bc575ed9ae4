/**
 * A source's sync state, owned by one object: loaded from its file and reconciled with the copy the
 * warehouse carries (`loadSourceState`), changed only through its methods (`SourceState`), and saved
 * to the file with the warehouse's copy following (`CarriedCopy`).
 */
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { coalesce } from '../coalesce.js';
import { InternalError } from '../errors.js';
import { keyFingerprint } from '../fingerprint.js';
import { confirmDates, type Confirmation } from './recency.js';
import { sameWindow } from '../plan/windows.js';
import type { SourceConfig } from '../sources.js';
import { sqlString, type Warehouse } from '../storage/duckdb.js';
import { CarriedText, carriedState, reconcileCarried, type CarriedState, type CarriedWindow } from './carried.js';
import { decodeCarried, encodeCarried } from './progress.js';
import { StateStore, emptyWindowedState, type AnomalyStreamState, type PlannedWindow, type SourceIdentity, type SyncState, type WindowedStreamState } from './store.js';

/** A source's state as loaded, and what loading found worth telling (`info`: the clean-container case, a line rather than a warning). */
export interface LoadedState {
  state: SyncState;
  warnings: string[];
  info: string[];
}

/**
 * The state a source goes on from: its file (or a fresh state), reconciled with the JSON the warehouse
 * carries for it (null: none). The runner and the dry run both load through this.
 */
export function loadSourceState(store: StateStore, carried: string | null, source: string): LoadedState {
  const fileExisted = existsSync(store.path);
  const loaded = store.load();
  const { state, notice } = reconcileCarried(loaded, fileExisted, carried === null ? null : decodeCarried(carried), source);
  const warnings = [...store.notices];
  const info: string[] = [];
  if (notice !== null) (fileExisted ? warnings : info).push(notice);
  return { state, warnings, info };
}

/** A source's state as loaded, with the store it came from and the identity (name, URL, key) it is kept under. */
export interface OpenedSourceStore extends LoadedState {
  store: StateStore;
  identity: SourceIdentity;
}

/**
 * Opens a source's state: its store under `stateDir`, kept apart per working copy (`workingCopy`, its path)
 * and per source identity, loaded through `loadSourceState`. The runner and the dry run both open it here,
 * so a dry run plans from the very state file the run would go on from.
 */
export function openSourceStore(
  stateDir: string,
  workingCopy: string,
  source: Pick<SourceConfig, 'name' | 'baseUrl' | 'apiKey'>,
  carried: string | null,
): OpenedSourceStore {
  const identity = { name: source.name, baseUrl: source.baseUrl, keyFingerprint: keyFingerprint(source.apiKey) };
  const store = new StateStore(stateDir, identity, basename(workingCopy, '.duckdb'));
  return { ...loadSourceState(store, carried, source.name), store, identity };
}

type Windowed = 'line_items' | 'rollups';

/** Where a source's state is kept: its file, and the warehouse's carried copy. */
export interface StateHome {
  /** Saves the state file; `carriedChanged`: what the warehouse carries may have changed since the last save. */
  save(state: SyncState, carriedChanged: boolean): Promise<void>;
  /** Writes the carried state as if window `done` were finished: inside the transaction that commits it. */
  carry(state: SyncState, done: CarriedWindow): Promise<void>;
}

/**
 * A change to a source's progress, as `SourceState.checkpoint` records it: new values (see
 * `windowAdvanced`, `windowRestarted`, `windowDone`, `completePlan` in plan/windows.ts), never edits.
 */
export type ProgressChange =
  /** A window's new value, in place of the plan's window of the same dates. */
  | { readonly stream: Windowed; readonly window: PlannedWindow }
  /** A windowed stream's new state: its plan, its completion, what the recheck found. */
  | { readonly stream: Windowed; readonly state: WindowedStreamState }
  /** The recheck's `synced` dates of the stream are synced again: a disagreement they keep is the API's own from now on. */
  | { readonly stream: Windowed; readonly synced: readonly string[] }
  /** Dates found equal to the API (a window's commit): when, for FOCUS's Recency (`state/recency.ts`). */
  | { readonly stream: Windowed; readonly confirm: Confirmation }
  | { readonly stream: 'anomalies'; readonly state: AnomalyStreamState };

/**
 * A source's progress, with one owner: read it here, change it only through `checkpoint`, which records
 * the change in the state file and has the warehouse's copy follow (only when something it carries changed).
 */
export class SourceState {
  /** Something carried (a plan, a window done, a watermark) changed since the last save. */
  private carriedChanged = true;

  /** The progress as it stands: a value, replaced by a new one at each change (never changed in place). */
  private state: SyncState;

  constructor(
    state: SyncState,
    private readonly home: StateHome,
  ) {
    this.state = state;
  }

  /** The state as it stands: read it here, change it through `checkpoint`. */
  get current(): SyncState {
    return this.state;
  }

  windowed(stream: Windowed): WindowedStreamState | undefined {
    return this.state.streams[stream];
  }

  anomalies(): AnomalyStreamState | undefined {
    return this.state.streams.anomalies;
  }

  /**
   * Applies `changes`, in order, and records them in every home they must reach: the state file at once,
   * the warehouse's copy following in the background. Call only once the data they describe is durable:
   * a page spooled, a window's rows committed.
   */
  async checkpoint(...changes: readonly ProgressChange[]): Promise<void> {
    for (const change of changes) this.apply(change);
    const changed = this.carriedChanged;
    this.carriedChanged = false;
    await this.home.save(this.state, changed);
  }

  private apply(change: ProgressChange): void {
    if (change.stream === 'anomalies') {
      this.setStream('anomalies', change.state);
      this.carriedChanged = true;
    } else if ('window' in change) {
      this.replaceWindow(change.stream, change.window);
      // Mid-window progress (a cursor, a restart) is not carried; a window done is.
      if (change.window.status === 'done') this.carriedChanged = true;
    } else if ('state' in change) {
      this.setStream(change.stream, change.state);
      this.carriedChanged = true;
    } else if ('confirm' in change) {
      const current = this.state.streams[change.stream] ?? emptyWindowedState();
      this.setStream(change.stream, { ...current, confirmed: confirmDates(current.confirmed, change.confirm) });
      this.carriedChanged = true;
    } else this.synced(change.stream, change.synced);
  }

  /** The progress with one stream's state replaced: a new value. */
  private setStream<S extends keyof SyncState['streams']>(stream: S, value: SyncState['streams'][S]): void {
    this.state = { ...this.state, streams: { ...this.state.streams, [stream]: value } };
  }

  private synced(stream: Windowed, dates: readonly string[]): void {
    const current = this.state.streams[stream];
    const memory = current?.rechecked;
    if (memory === undefined || dates.length === 0) return;
    const synced = Object.fromEntries(
      Object.entries(memory).map(([date, entry]) => [date, dates.includes(date) ? { ...entry, synced: true } : entry]),
    );
    this.setStream(stream, { ...current!, rechecked: synced });
    this.carriedChanged = true;
  }

  /** Puts `window` in place of the plan's window of the same dates: the plan is replaced, never changed. */
  private replaceWindow(stream: Windowed, window: PlannedWindow): void {
    const current = this.state.streams[stream];
    const plan = current?.pending;
    if (plan == null || !plan.windows.some((w) => sameWindow(w, window)))
      throw new InternalError(`${stream} has no planned window ${window.start}..${window.end}`);
    this.setStream(stream, { ...current!, pending: { ...plan, windows: plan.windows.map((w) => (sameWindow(w, window) ? window : w)) } });
  }

  /** The API answered with this run's key and base URL: they are the source's identity from now on (saved with the next checkpoint). */
  confirmIdentity(identity: SourceIdentity): void {
    this.state = { ...this.state, source: identity };
  }

  /**
   * Writes the carried state as if `done` were finished: call inside the transaction that commits it, whose
   * body may run twice (`BodyMayRunTwice`): `CarriedCopy` forgets what a rolled-back run of it wrote.
   */
  carry(done: CarriedWindow): Promise<void> {
    return this.home.carry(this.state, done);
  }
}

/** The warehouse as the carried copy needs it: a narrow view, so this module opens nothing (the runner opens it). */
export interface CarriedStore {
  /** Replaces the source's carried text, inside the transaction under way. */
  write(text: string): Promise<void>;
  /** Calls back once the transaction under way commits or rolls back. */
  onSettle(fn: (committed: boolean) => void): void;
  /** Runs `fn` in a transaction of its own. */
  transaction(fn: () => Promise<void>): Promise<void>;
}

/** The warehouse's table of carried states (`sql/state/`) as `source`'s carried copy writes it. */
export function carriedIn(
  warehouse: Pick<Warehouse, 'run' | 'onSettle' | 'transaction'>,
  source: string,
  now: () => Date,
): CarriedStore {
  return {
    async write(text) {
      const params = [source, text, now().toISOString()];
      if ((await warehouse.run('state/carry_update', params)) === 0) await warehouse.run('state/carry_insert', params);
    },
    onSettle: (fn) => warehouse.onSettle(fn),
    transaction: (fn) => warehouse.transaction(fn),
  };
}

/**
 * The state the warehouse carries for a source, kept up to the present. A window's commit carries it
 * as if that window were done (`carry`); other changes follow one transaction at a time in the
 * background (`follow`), so that pages never wait in the warehouse's queue behind hundreds of sources'
 * commits. It never claims more than the warehouse holds: a window is marked done in the state only
 * after the transaction that committed it. While it lags, the state file is ahead; a crash then makes
 * the next run go on from the warehouse's state, which only redoes work.
 */
export class CarriedCopy {
  private readonly text: CarriedText;
  /** This source's windows in the transaction under way: a grouped commit may store several. */
  private readonly committing = new Map<string, CarriedWindow>();
  private carrying: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | null = null;
  private readonly carryLatest = coalesce(async () => {
    if (encodeCarried(carriedState(this.state)) === this.text.committed) return;
    // Taken in its turn: a window's commit queued ahead of it may have carried a newer state.
    await this.store.transaction(() => this.write(encodeCarried(carriedState(this.state))));
  });

  /** `held`: the warehouse carries a state for the source (then the one `state` was reconciled with). */
  /** The latest progress it was told of (`follow`, `carry`): the owner replaces its value at each change. */
  private state: SyncState;

  constructor(
    private readonly store: CarriedStore,
    state: SyncState,
    held: boolean,
  ) {
    this.state = state;
    this.text = new CarriedText(held ? encodeCarried(carriedState(state)) : null);
  }

  /** Writes `state` as if window `done` were finished, with the other windows of the transaction under way. */
  async carry(state: SyncState, done: CarriedWindow): Promise<void> {
    this.state = state;
    // Each carry says every window of the transaction is done; a window leaves the list once it settles.
    const key = `${done.stream} ${done.start} ${done.end}`;
    this.committing.set(key, done);
    this.store.onSettle(() => this.committing.delete(key));
    await this.write(encodeCarried(carriedState(this.state, [...this.committing.values()])));
  }

  /** Brings the warehouse's copy up to `state` (the latest told, when none is given) in the background; a failure is kept for `settle`. */
  follow(state: SyncState = this.state): void {
    this.state = state;
    this.carrying = this.carryLatest().catch((error: unknown) => {
      this.failure ??= { error };
    });
  }

  /** Brings the warehouse's copy up to the state and waits for it: the source ends with its final state carried. */
  async settle(): Promise<void> {
    this.follow();
    await this.carrying;
    if (this.failure !== null) throw this.failure.error;
  }

  /** Replaces the carried text (inside whatever transaction is open), unless the warehouse holds it already. */
  private async write(text: string): Promise<void> {
    if (!this.text.differs(text)) return;
    await this.store.write(text);
    this.text.wrote(text);
    // The text is the warehouse's once the transaction commits; after a rollback the next carry writes it again.
    this.store.onSettle((committed) => this.text.settled(committed));
  }
}

/**
 * The lake seed's writes of a source's carried copy (`seedFromLake`, outputs/lake-seed.ts), inside the
 * transaction that reads the source's rows back at a run's start, before the source's state is opened:
 * the copy goes with the rows it described, and a lake's state object is adopted once its rows are back.
 */
export const carriedFromLake = {
  async drop(warehouse: Pick<Warehouse, 'sql'>, source: string): Promise<void> {
    await warehouse.sql(`DELETE FROM _costsync_sync_state WHERE source = ${sqlString(source)}`);
  },
  async adopt(warehouse: Pick<Warehouse, 'run'>, source: string, state: CarriedState, writtenAt: string): Promise<void> {
    await warehouse.run('state/carry_insert', [source, encodeCarried(state), writtenAt]);
  },
};

/** A source's state kept in its file, with the warehouse's copy following (see `CarriedCopy`). */
export function fileAndWarehouse(store: StateStore, copy: CarriedCopy, now: () => Date): StateHome {
  return {
    async save(state, carriedChanged) {
      // The file at once; the warehouse's copy follows in the background, and only when it may differ.
      if (carriedChanged) copy.follow(state);
      await store.saveAsync(state, now);
    },
    carry: (state, done) => copy.carry(state, done),
  };
}
