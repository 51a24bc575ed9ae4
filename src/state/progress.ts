/**
 * A source's progress as text, and back: the one codec every home of it goes through (the state file,
 * the copy the warehouse carries in `_costsync_sync_state`, the lake's state object and a catalog's
 * table property). Each home's version and the migrations from older shapes live here; no other module
 * parses or builds a progress's JSON. Pure: no I/O.
 */
import { ConfigError } from '../errors.js';
import type { CarriedState } from './carried.js';
import type { SourceIdentity, SyncState } from './store.js';

/** The state file's version. 2: named by source (1 was named by base URL and key fingerprint; read as `default`'s). */
export const STATE_VERSION = 2;

/** The lake state object's version. */
export const LAKE_STATE_VERSION = 1;

/** The carried row's version. 1: `{version, streams}` (before it, the row was the streams alone, read as 1). */
export const CARRIED_VERSION = 1;

/**
 * What to do with a state file that cannot be used: moving it aside is enough, since the warehouse
 * carries the state that matches its data (a full refresh would spend hours of quota for nothing).
 */
export function unusableStateHint(path: string): string {
  return `Move it aside (mv ${path} ${path}.bad) and run again: costsync goes on from the state the warehouse carries (no --full-refresh needed; the DuckDB tables are kept).`;
}

/**
 * A state file's text as a state of this version: refuses text that is not JSON, not a state, or of a
 * version this costsync does not read (naming the file and the fix); a version 1 file names no source,
 * and was `default`'s. The identity is the one saved (the caller compares it with its own).
 */
export function decodeStateFile(text: string, path: string): SyncState {
  let parsed: SyncState;
  try {
    parsed = JSON.parse(text) as SyncState;
  } catch (cause) {
    throw new ConfigError(`The state file ${path} is not valid JSON (it may have been edited or damaged).`, unusableStateHint(path), cause);
  }
  if (typeof parsed !== 'object' || parsed === null || typeof parsed.version !== 'number' || typeof parsed.streams !== 'object' || parsed.streams === null)
    throw new ConfigError(`The state file ${path} is not a costsync state file.`, unusableStateHint(path));
  if (parsed.version > STATE_VERSION)
    throw new ConfigError(
      `The state file ${path} was written by a newer costsync (state version ${parsed.version}; this one reads ${STATE_VERSION}).`,
      'Upgrade costsync, or move the file aside and run with --full-refresh.',
    );
  if (parsed.version < 1)
    throw new ConfigError(
      `The state file ${path} has state version ${parsed.version}, older than any this costsync can read (1 to ${STATE_VERSION}).`,
      'Move it aside and run with --full-refresh to rebuild the state from the API; the DuckDB tables are kept.',
    );
  const source = { name: 'default', ...(parsed.source as Partial<SourceIdentity> | undefined) } as SourceIdentity;
  return { ...parsed, version: STATE_VERSION, source };
}

/** A state as its file's text. Pure. */
export function encodeStateFile(state: SyncState): string {
  return `${JSON.stringify({ ...state, version: STATE_VERSION }, null, 2)}\n`;
}

/**
 * The warehouse's carried copy from its text: the streams as they were carried. A row an older costsync
 * wrote is the streams alone; one a newer costsync wrote is refused (naming the fix). Pure.
 */
export function decodeCarried(text: string): CarriedState {
  const parsed = JSON.parse(text) as { version?: unknown; streams?: CarriedState } & CarriedState;
  if (typeof parsed.version !== 'number') return parsed;
  if (parsed.version > CARRIED_VERSION)
    throw new ConfigError(
      `The warehouse carries a sync state written by a newer costsync (carried version ${parsed.version}; this one reads ${CARRIED_VERSION}).`,
      'Upgrade costsync to the version that last synced this warehouse, or newer.',
    );
  return parsed.streams ?? {};
}

/** A carried copy as the text the warehouse holds (compared as text to tell whether it changed). Pure. */
export function encodeCarried(carried: CarriedState): string {
  return JSON.stringify({ version: CARRIED_VERSION, streams: carried });
}

/** What a lake's state object (or a catalog's table property) holds for one source. */
export interface LakeStateObject {
  version: typeof LAKE_STATE_VERSION;
  source: string;
  run_id: string;
  written_at: string;
  /** The sync state the warehouse carried when the lake held all its rows. */
  state: CarriedState;
  /** Per table the warehouse stores, the dates whose partitions the lake holds. */
  tables: Record<string, string[]>;
}

/** A lake state object's text. Pure. */
export function encodeLakeObject(object: Omit<LakeStateObject, 'version'>): string {
  return JSON.stringify({ version: LAKE_STATE_VERSION, ...object });
}

/** A lake state object from its text, or null when it is not one this costsync reads (another version, another source, damaged). Pure. */
export function decodeLakeObject(text: string, source: string): LakeStateObject | null {
  try {
    const object = JSON.parse(text) as LakeStateObject;
    if (
      object.version === LAKE_STATE_VERSION &&
      object.source === source &&
      typeof object.state === 'object' &&
      object.state !== null &&
      typeof object.tables === 'object'
    )
      return object;
  } catch {
    // Not JSON: not one this costsync reads.
  }
  return null;
}
