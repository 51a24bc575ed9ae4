/** The state files of a state directory, by the warehouse they belong to, and what they record of the API. */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { workingCopyPath } from '../storage/working-copy.js';
import { decodeStateFile } from './progress.js';

/**
 * The state files of `stateDir` that belong to the warehouse `db` (by its working copy's name), by source;
 * the files of other warehouses sharing the directory; and version 1 files (an older costsync's, which name
 * no warehouse: the next sync of their source takes them).
 */
export function stateFilesOf(names: readonly string[], stateDir: string, db: string): { own: Map<string, string>; others: string[] } {
  const prefix = `costsync-state-${basename(workingCopyPath(stateDir, db), '.duckdb')}--`;
  const own = new Map<string, string>();
  const legacy: string[] = [];
  const others: string[] = [];
  for (const name of [...names].sort()) {
    if (!/^costsync-state-.*\.json$/.test(name)) continue;
    if (name.startsWith(prefix)) own.set(name.slice(prefix.length, -'.json'.length), name);
    else if (name.includes('--')) others.push(name);
    else legacy.push(name);
  }
  // Version 1 files name no warehouse: the next sync of the `default` source takes one, unless it has a file of its own.
  if (!own.has('default') && legacy.length > 0) own.set('default', legacy[0]!);
  return { own, others };
}

/**
 * The API the state directory's file of `db`'s `default` source records (its base URL), or null when there is
 * none or it cannot be read: what `verify --api` asks when no --base-url is given.
 */
export function recordedBaseUrl(stateDir: string, db: string): string | null {
  const file = stateFilesOf(existsSync(stateDir) ? readdirSync(stateDir) : [], stateDir, db).own.get('default');
  if (file === undefined) return null;
  try {
    const url = decodeStateFile(readFileSync(join(stateDir, file), 'utf8'), file).source.baseUrl;
    return url === '' ? null : url;
  } catch {
    return null;
  }
}
