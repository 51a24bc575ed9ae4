/**
 * A lock file so two runs never work on the same state or database at once. The lock is created
 * atomically (written to a temp file, then hard-linked into place), so a live lock is never empty
 * or half-written; a lock that is, or whose process is gone, is recovered.
 */
import { basename, dirname, join, resolve } from 'node:path';
import { hostname } from 'node:os';
import { linkSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { namesIn } from '../durable-file.js';
import { CostsyncError, ExitCode } from '../errors.js';

export interface LockHolder {
  pid: number;
  hostname: string;
  startedAt: string;
  command: string;
}

export interface Lock {
  readonly path: string;
  release(): void;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readHolder(path: string): { text: string; holder: LockHolder | null } | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const holder = JSON.parse(text) as LockHolder;
    return { text, holder: typeof holder.pid === 'number' ? holder : null };
  } catch {
    return { text, holder: null };
  }
}

/**
 * Takes the lock at `path` or throws CS_ERR_LOCKED (exit code 5) naming the holder. A lock whose
 * file is unreadable as JSON, or whose process on this host is gone, is stale and taken over.
 */
/** The lock beside a DuckDB file: every writer of it (sync, push, push-otel) takes this one. */
export function dbLockPath(db: string): string {
  return `${resolve(db)}.lock`;
}

const WHY: Record<string, string> = {
  EACCES: 'permission denied', EPERM: 'permission denied', EROFS: 'the file system is read-only',
  ENOENT: 'the directory does not exist or takes no files', ENOTDIR: 'a part of the path is not a directory', ENOSPC: 'the disk is full',
};

/** A lock that cannot be written: which directory, why, and which setting puts it there. */
function lockPlaceError(path: string, cause: unknown): CostsyncError {
  const code = (cause as NodeJS.ErrnoException).code ?? '';
  const dir = dirname(path);
  return new CostsyncError('CS_ERR_STATE_IO', `Cannot write the lock file ${basename(path)} in ${dir}: ${WHY[code] ?? (cause as Error).message}${code ? ` (${code})` : ''}.`, {
    cause,
    hint: `costsync writes its lock beside --db and in --state-dir: give them a directory you can write (for example --db ./costs.duckdb --state-dir ./state), or make ${dir} writable.`,
  });
}

/** Removes the temp and stale-aside files of lock attempts by processes that are gone (killed mid-attempt). */
function removeDeadAttempts(path: string): void {
  const name = basename(path);
  for (const entry of namesIn(dirname(path))) {
    if (!entry.startsWith(`${name}.`)) continue;
    const m = /^\.(?:stale\.)?(\d+)(?:\..*\.tmp)?$/.exec(entry.slice(name.length));
    if (m && Number(m[1]) !== process.pid && !isAlive(Number(m[1]))) rmSync(join(dirname(path), entry), { force: true });
  }
}

export function acquireLock(path: string, command: string, now: Date = new Date()): Lock {
  removeDeadAttempts(path);
  const me: LockHolder = { pid: process.pid, hostname: hostname(), startedAt: now.toISOString(), command };
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify(me), { mode: 0o600 });
  } catch (error) {
    throw lockPlaceError(path, error);
  }
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        linkSync(tmp, path);
        return {
          path,
          release: () => {
            const current = readHolder(path);
            if (current?.holder?.pid === process.pid) unlinkSync(path);
          },
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const existing = readHolder(path);
      if (existing === null) continue;
      const { holder } = existing;
      const stale = holder === null || (holder.hostname === me.hostname && !isAlive(holder.pid));
      if (!stale) {
        throw new CostsyncError(
          'CS_ERR_LOCKED',
          `Another costsync run holds the lock ${path}: pid ${holder.pid} on ${holder.hostname}, started ${holder.startedAt} (${holder.command}).`,
          { exitCode: ExitCode.LOCKED, hint: 'Wait for it to finish. If that process is gone for good (another host, say), delete the lock file.' },
        );
      }
      // Move the stale lock aside; only one contender's rename succeeds. If what was moved is not
      // the stale lock we judged (someone took it over meanwhile), put it back and look again.
      const aside = `${path}.stale.${process.pid}`;
      try {
        renameSync(path, aside);
      } catch {
        continue;
      }
      const moved = readFileSync(aside, 'utf8');
      if (moved !== existing.text) {
        try {
          linkSync(aside, path);
        } catch {
          /* another run holds it now; the next attempt reports it */
        }
      }
      unlinkSync(aside);
    }
    throw new CostsyncError('CS_ERR_LOCKED', `Could not take the lock ${path}: it kept changing hands.`, { exitCode: ExitCode.LOCKED });
  } finally {
    unlinkSync(tmp);
  }
}
