/**
 * Sync state: one versioned JSON file per source and warehouse, named by the source's name (not
 * its key, so a rotated key goes on where the last run stopped), written atomically (temp file,
 * fsync, rename) and readable by the owner only.
 */
import { failpoint } from '../failpoints.js';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { coalesce } from '../coalesce.js';
import { namesIn, tmpWriterPid, writeFileAtomic } from '../durable-file.js';
import { ConfigError, CostsyncError } from '../errors.js';

import { STATE_VERSION, decodeStateFile, encodeStateFile, unusableStateHint } from './progress.js';

// The file's version and the hint for an unusable file belong to the progress codec; named here too for the store's users.
export { STATE_VERSION, unusableStateHint };

/** One date window of a plan, and how far it got: a value, replaced (never changed) as the window goes on. */
export interface PlannedWindow {
  readonly start: string;
  readonly end: string;
  readonly status: 'todo' | 'active' | 'done';
  /** Cursor to send for the next page (null: the first page, or none left once `fetched`). */
  readonly cursor: string | null;
  /** Number of the last page committed to staging (0: none yet). */
  readonly page: number;
  /** Every page is staged; only the replace remains. */
  readonly fetched: boolean;
  /** Whether two staged records may share an id (then the replace deduplicates). Absent: maybe. */
  readonly unique?: boolean;
  /** An older date the recheck found changed (`sync/recheck.ts`), synced again after the plan's own dates. */
  readonly recheck?: boolean;
  /**
   * When its first page was asked for: its dates hold the API's rows as of then or later, the time its
   * commit confirms them at (`state/recency.ts`). Absent: pages an older costsync spooled, not confirmed.
   */
  readonly askedAt?: string;
}

/** A plan of windows being worked through: a first run, a backfill, or an incremental run. Data: a new plan replaces it. */
export interface PendingPlan {
  readonly from: string;
  readonly to: string;
  readonly fullRefresh: boolean;
  readonly windows: readonly PlannedWindow[];
}

/** Dates from `from` to `to`, both included (`YYYY-MM-DD`). */
export interface DateRange {
  readonly from: string;
  readonly to: string;
}

export interface WindowedStreamState {
  /** Earliest and latest dates synced so far (the watermark). */
  readonly syncedFrom: string | null;
  readonly syncedThrough: string | null;
  /**
   * The dates synced, as ranges with their gaps (`plan/coverage.ts`). Absent in a state an older
   * costsync wrote: then `syncedFrom..syncedThrough`, unchecked.
   */
  readonly covered?: readonly DateRange[];
  /** The ranges began as an older state's min..max, which may hide gaps: until a full refresh covers them. */
  readonly coverageUnchecked?: boolean;
  /**
   * Dates the recheck found disagreeing with the API's provider rollups (line items only): the
   * rollups' digest they were found with, whether the date was synced again since, and the stored
   * sums' digest once it still disagreed after that. Such a date is not fetched again until either changes.
   */
  readonly rechecked?: Readonly<Record<string, RecheckedDate>>;
  /**
   * When each stored date was last found equal to the API (`state/recency.ts`; line items only): its
   * window's commit, or a recheck that found its sums equal. Absent in a state an older costsync wrote.
   */
  readonly confirmed?: readonly ConfirmedRange[];
  readonly lastSuccessAt: string | null;
  readonly pending: PendingPlan | null;
}

/** Dates last found equal to the API at `at` (an ISO time); `complete`: the API had had the lookback to fill them by then. */
export interface ConfirmedRange extends DateRange {
  readonly at: string;
  readonly complete: boolean;
}

export interface RecheckedDate {
  readonly api: string;
  readonly synced?: boolean;
  readonly lines?: string;
}

export interface AnomalyStreamState {
  /** Latest `detected_date` stored. */
  readonly watermark: string | null;
  readonly lastSuccessAt: string | null;
  /**
   * The last collection's alerts filled one response: this one asks by severity from the start, rather
   * than learn it again from a full first response (a request saved each run). Absent: ask unfiltered first.
   */
  readonly splitBySeverity?: true;
}

/** Which source a state file belongs to; the key appears only as a fingerprint. */
export interface SourceIdentity {
  readonly name: string;
  readonly baseUrl: string;
  readonly keyFingerprint: string;
}

export interface SyncState {
  readonly version: number;
  readonly source: SourceIdentity;
  readonly streams: {
    readonly line_items?: WindowedStreamState;
    readonly rollups?: WindowedStreamState;
    readonly anomalies?: AnomalyStreamState;
  };
  readonly updatedAt: string | null;
}

export function emptyWindowedState(): WindowedStreamState {
  return { syncedFrom: null, syncedThrough: null, lastSuccessAt: null, pending: null };
}

/** The state file of a source of a warehouse (`warehouse` names the working copy, without `.duckdb`). */
export function stateFileName(source: string, warehouse: string): string {
  return `costsync-state-${warehouse}--${source}.json`;
}

/** The name state version 1 used: the base URL's host and the key's fingerprint. */
export function legacyStateFileName(baseUrl: string, keyFingerprint: string): string {
  const host = new URL(baseUrl).host.replace(/[^A-Za-z0-9.-]+/g, '_');
  return `costsync-state-${host}-${keyFingerprint}.json`;
}

/** Removes state files half-written by a killed run (their temp names); call under the run lock. */
export function removeStateLeftovers(dir: string): void {
  for (const name of namesIn(dir)) if (/^costsync-state-.*\.json\./.test(name) && tmpWriterPid(name) !== null) rmSync(join(dir, name), { force: true });
}

export class StateStore {
  readonly path: string;
  /** What changed since the last run (a rotated key, another base URL), for the log. */
  readonly notices: string[] = [];
  /** A version 1 file this state was read from, removed once the state is saved under its new name. */
  private legacy: string | null = null;

  constructor(
    readonly dir: string,
    private readonly source: SourceIdentity,
    /** The warehouse the state belongs to (its working copy's name). */
    warehouse: string,
    /** How a state file is written; injected in tests to stand for a full or read-only disk. */
    private readonly write: (path: string, text: string) => Promise<void> = writeFileAtomic,
  ) {
    this.path = join(dir, stateFileName(source.name, warehouse));
  }

  /** Where the source's windows spool their pages. */
  get spoolDir(): string {
    return join(this.dir, 'spool', this.path.split('/').at(-1)!.replace(/\.json$/, ''));
  }

  /**
   * A version 1 state file of this source (the `default` source of an older costsync): the one
   * named by this base URL and key, else the only one for this base URL (the key was rotated).
   */
  private findLegacy(): string | null {
    if (this.source.name !== 'default') return null;
    const exact = join(this.dir, legacyStateFileName(this.source.baseUrl, this.source.keyFingerprint));
    if (existsSync(exact)) return exact;
    const prefix = legacyStateFileName(this.source.baseUrl, 'x').slice(0, -'x.json'.length);
    let names: string[] = [];
    try {
      names = readdirSync(this.dir).filter((n) => n.startsWith(prefix) && /^[0-9a-f]+\.json$/.test(n.slice(prefix.length)));
    } catch {
      return null;
    }
    return names.length === 1 ? join(this.dir, names[0]!) : null;
  }

  /**
   * The saved state, or a fresh one. Refuses a file that is corrupt, newer, or of another source;
   * a rotated key or a changed base URL is a notice, and the run goes on where the last one stopped.
   */
  load(): SyncState {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        const legacy = this.findLegacy();
        // No identity until the API answers (confirmIdentity): a first run with a wrong key or URL records none.
        if (legacy === null) return { version: STATE_VERSION, source: { name: this.source.name, baseUrl: '', keyFingerprint: '' }, streams: {}, updatedAt: null };
        return this.adoptLegacy(legacy);
      }
      throw new CostsyncError('CS_ERR_STATE_IO', `Cannot read the state file ${this.path}: ${(error as Error).message}`, {
        hint: 'Check the permissions of --state-dir.', cause: error,
      });
    }
    return this.check(this.path, text);
  }

  /** Reads a version 1 file of this source; it is removed once the state is saved under the new name, with its spooled pages moved along. */
  private adoptLegacy(legacy: string): SyncState {
    const state = this.check(legacy, readFileSync(legacy, 'utf8'));
    const oldSpool = join(this.dir, 'spool', legacy.split('/').at(-1)!.replace(/\.json$/, ''));
    if (existsSync(oldSpool) && !existsSync(this.spoolDir)) renameSync(oldSpool, this.spoolDir);
    this.legacy = legacy;
    return state;
  }

  /** Parses and checks a state file's text, migrating version 1 and noting what changed. */
  private check(path: string, text: string): SyncState {
    const parsed = decodeStateFile(text, path);
    const saved = parsed.source;
    if (saved.name !== this.source.name) {
      throw new ConfigError(
        `The state file ${path} belongs to another source ("${saved.name}", not "${this.source.name}").`,
        'Move the file aside, or give the source its old name back.',
      );
    }
    // An empty identity was never confirmed by an answer: nothing to compare with.
    if (saved.keyFingerprint && saved.keyFingerprint !== this.source.keyFingerprint) {
      this.notices.push(`the key for ${this.source.name} changed since the last run (fingerprint ${saved.keyFingerprint} is now ${this.source.keyFingerprint}); going on where the last run stopped`);
    }
    if (saved.baseUrl && saved.baseUrl !== this.source.baseUrl) {
      this.notices.push(`the base URL of ${this.source.name} changed since the last run (${saved.baseUrl} is now ${this.source.baseUrl}); going on where the last run stopped. If it is another workspace, run with --full-refresh to start over`);
    }
    // The identity stays the one last confirmed until this run gets an answer (see confirmIdentity):
    // a run with a wrong key or URL that fails must not make the next, right one look changed.
    return { ...parsed, source: { ...saved, name: this.source.name } };
  }

  /** The state and clock of the latest save asked for: a save in its turn writes the latest. */
  private latest: { state: SyncState; now: () => Date } | null = null;
  private readonly saveLatest = coalesce(() => this.writeAsync(this.latest!.state, this.latest!.now()));

  /**
   * Saves asynchronously; concurrent calls share saves. The returned promise resolves once a save
   * that started after the call (and so holds everything done before it) is on disk.
   */
  saveAsync(state: SyncState, now: () => Date): Promise<void> {
    this.latest = { state, now };
    return this.saveLatest();
  }

  /** Writes the state atomically: a crash leaves either the old file or the new one, never a mix. */
  private async writeAsync(state: SyncState, now: Date): Promise<void> {
    const saved: SyncState = { ...state, updatedAt: now.toISOString() };
    try {
      // No fsync of the directory: a rename lost in a crash leaves the previous state, which is
      // behind the data, and a run from an older state only redoes work.
      await this.write(this.path, encodeStateFile(saved));
      failpoint('state-save');
      if (this.legacy !== null) {
        rmSync(this.legacy, { force: true });
        this.legacy = null;
      }
    } catch (error) {
      throw new CostsyncError('CS_ERR_STATE_IO', `Cannot write the state file ${this.path}: ${(error as Error).message}`, {
        hint: 'Check that --state-dir is writable and the disk is not full; the data already stored is kept.', cause: error,
      });
    }
  }
}
