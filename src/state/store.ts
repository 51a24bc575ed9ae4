/**
 * Sync state: one versioned JSON file per source (base URL + key fingerprint, never the key),
 * written atomically (temp file, fsync, rename) and readable by the owner only.
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../durable-file.js';
import { ConfigError, CostsyncError } from '../errors.js';

export const STATE_VERSION = 1;

/** One date window of a plan, and how far it got. */
export interface PlannedWindow {
  start: string;
  end: string;
  status: 'todo' | 'active' | 'done';
  /** Cursor to send for the next page (null: the first page, or none left once `fetched`). */
  cursor: string | null;
  /** Number of the last page committed to staging (0: none yet). */
  page: number;
  /** Every page is staged; only the replace remains. */
  fetched: boolean;
  /** Whether two staged records may share an id (then the replace deduplicates). Absent: maybe. */
  unique?: boolean;
}

/** A plan of windows being worked through: a first run, a backfill, or an incremental run. */
export interface PendingPlan {
  from: string;
  to: string;
  fullRefresh: boolean;
  windows: PlannedWindow[];
}

export interface WindowedStreamState {
  /** Earliest and latest dates synced so far (the watermark). */
  syncedFrom: string | null;
  syncedThrough: string | null;
  lastSuccessAt: string | null;
  pending: PendingPlan | null;
}

export interface AnomalyStreamState {
  /** Latest `detected_date` stored. */
  watermark: string | null;
  lastSuccessAt: string | null;
}

export interface SyncState {
  version: number;
  source: { baseUrl: string; keyFingerprint: string };
  streams: {
    line_items?: WindowedStreamState;
    rollups?: WindowedStreamState;
    anomalies?: AnomalyStreamState;
  };
  updatedAt: string | null;
}

export function emptyWindowedState(): WindowedStreamState {
  return { syncedFrom: null, syncedThrough: null, lastSuccessAt: null, pending: null };
}

/** The state file name for a source: readable, and unique per base URL and key. */
export function stateFileName(baseUrl: string, keyFingerprint: string): string {
  const host = new URL(baseUrl).host.replace(/[^A-Za-z0-9.-]+/g, '_');
  return `costsync-state-${host}-${keyFingerprint}.json`;
}

/** Removes state files half-written by a killed run (their temp names); call under the run lock. */
export function removeStateLeftovers(dir: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) if (/^costsync-state-.*\.json\.\d+\.tmp$/.test(name)) rmSync(join(dir, name), { force: true });
}

export class StateStore {
  readonly path: string;

  constructor(
    readonly dir: string,
    private readonly source: SyncState['source'],
    /** How a state file is written; injected in tests to stand for a full or read-only disk. */
    private readonly write: (path: string, text: string) => Promise<void> = writeFileAtomic,
  ) {
    this.path = join(dir, stateFileName(source.baseUrl, source.keyFingerprint));
  }

  /** The saved state, or a fresh one. Refuses a file that is corrupt, newer, or of another source. */
  load(): SyncState {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        return { version: STATE_VERSION, source: this.source, streams: {}, updatedAt: null };
      }
      throw new CostsyncError('CS_ERR_STATE_IO', `Cannot read the state file ${this.path}: ${(error as Error).message}`, {
        hint: 'Check the permissions of --state-dir.', cause: error,
      });
    }
    let parsed: SyncState;
    try {
      parsed = JSON.parse(text) as SyncState;
    } catch (cause) {
      throw new ConfigError(
        `The state file ${this.path} is not valid JSON (it may have been edited or damaged).`,
        'Move it aside and run with --full-refresh to rebuild the state from the API; the DuckDB tables are kept.',
        cause,
      );
    }
    if (typeof parsed !== 'object' || parsed === null || typeof parsed.version !== 'number' || typeof parsed.streams !== 'object') {
      throw new ConfigError(`The state file ${this.path} is not a costsync state file.`, 'Move it aside and run with --full-refresh.');
    }
    if (parsed.version > STATE_VERSION) {
      throw new ConfigError(
        `The state file ${this.path} was written by a newer costsync (state version ${parsed.version}; this one reads ${STATE_VERSION}).`,
        'Upgrade costsync, or move the file aside and run with --full-refresh.',
      );
    }
    if (parsed.version < STATE_VERSION) {
      // No costsync wrote a version below 1; when version 2 comes, this is where 1 is migrated.
      throw new ConfigError(
        `The state file ${this.path} has state version ${parsed.version}, older than any this costsync can read (${STATE_VERSION}).`,
        'Move it aside and run with --full-refresh to rebuild the state from the API; the DuckDB tables are kept.',
      );
    }
    if (parsed.source?.keyFingerprint !== this.source.keyFingerprint || parsed.source?.baseUrl !== this.source.baseUrl) {
      throw new ConfigError(
        `The state file ${this.path} belongs to another source (${parsed.source?.baseUrl ?? 'unknown'}).`,
        'Use a --state-dir of its own for each source, or move the file aside.',
      );
    }
    return parsed;
  }

  private saving: Promise<void> | null = null;
  private again: Promise<void> | null = null;

  /**
   * Saves asynchronously; concurrent calls share saves. The returned promise resolves once a save
   * that started after the call (and so holds everything done before it) is on disk.
   */
  saveAsync(state: SyncState, now: () => Date): Promise<void> {
    if (this.again) return this.again;
    if (!this.saving) {
      this.saving = this.writeAsync(state, now()).finally(() => { this.saving = null; });
      return this.saving;
    }
    const next = this.saving.catch(() => undefined).then(() => {
      this.again = null;
      this.saving = this.writeAsync(state, now()).finally(() => { this.saving = null; });
      return this.saving;
    });
    this.again = next;
    return next;
  }

  /** Writes the state atomically: a crash leaves either the old file or the new one, never a mix. */
  private async writeAsync(state: SyncState, now: Date): Promise<void> {
    state.updatedAt = now.toISOString();
    try {
      // No fsync of the directory: a rename lost in a crash leaves the previous state, which is
      // behind the data, and a run from an older state only redoes work.
      await this.write(this.path, `${JSON.stringify(state, null, 2)}\n`);
    } catch (error) {
      throw new CostsyncError('CS_ERR_STATE_IO', `Cannot write the state file ${this.path}: ${(error as Error).message}`, {
        hint: 'Check that --state-dir is writable and the disk is not full; the data already stored is kept.', cause: error,
      });
    }
  }
}
