/**
 * A lock file so two runs never work on the same state or database at once. The lock is created
 * atomically (written to a temp file, then hard-linked into place), so a live lock is never empty
 * or half-written; a lock that is, or whose process is surely gone (see `holder.ts`), is recovered.
 */
import { basename, dirname, join, resolve } from 'node:path';
import { linkSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { namesIn } from '../durable-file.js';
import { CostsyncError, ExitCode } from '../errors.js';
import { liveness, selfIdentity, systemProbe, whyUnknown, type ProcessIdentity, type ProcessProbe } from './holder.js';

/** A lock file's content: the holder (the previous version wrote no boot id, namespace or start time). */
export interface LockHolder {
  pid: number;
  hostname: string;
  startedAt: string;
  command: string;
  bootId?: string;
  pidNs?: string;
  startTicks?: number;
}

function identityOf(holder: LockHolder): ProcessIdentity {
  return {
    host: holder.hostname, pid: holder.pid,
    ...(holder.bootId !== undefined ? { bootId: holder.bootId } : {}),
    ...(holder.pidNs !== undefined ? { pidNs: holder.pidNs } : {}),
    ...(holder.startTicks !== undefined ? { startTicks: holder.startTicks } : {}),
  };
}

export interface Lock {
  readonly path: string;
  release(): void;
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
 * Who holds the lock at `path`, for `status`: null when there is none, or its holder is surely gone
 * (the next run takes it over); `alive: 'unknown'` when another host's or namespace's.
 */
export function lockHeld(
  path: string,
  probe: ProcessProbe = systemProbe,
): { path: string; command: string; pid: number; host: string; startedAt: string; alive: 'yes' | 'unknown' } | null {
  const existing = readHolder(path);
  if (existing === null || existing.holder === null) return null;
  const { holder } = existing;
  const state = liveness(identityOf(holder), selfIdentity(), probe, { legacy: true });
  if (state === 'gone') return null;
  return { path, command: holder.command, pid: holder.pid, host: holder.hostname, startedAt: holder.startedAt, alive: state === 'alive' ? 'yes' : 'unknown' };
}

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
    if (m && Number(m[1]) !== process.pid && !systemProbe.isAlive(Number(m[1]))) rmSync(join(dirname(path), entry), { force: true });
  }
}

/**
 * Takes the lock at `path` or throws CS_ERR_LOCKED (exit code 5) naming the holder. A lock whose
 * file is unreadable as JSON, or whose process is surely gone (same host, boot and PID namespace, and
 * the pid no longer runs or belongs to a process started at another time), is stale and taken over.
 */
export function acquireLock(path: string, command: string, now: Date = new Date(), probe: ProcessProbe = systemProbe): Lock {
  removeDeadAttempts(path);
  const self = selfIdentity();
  const me: LockHolder = {
    pid: process.pid, hostname: self.host, startedAt: now.toISOString(), command,
    ...(self.bootId !== undefined ? { bootId: self.bootId } : {}),
    ...(self.pidNs !== undefined ? { pidNs: self.pidNs } : {}),
    ...(self.startTicks !== undefined ? { startTicks: self.startTicks } : {}),
  };
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
      const state = holder === null ? 'gone' : liveness(identityOf(holder), self, probe, { legacy: true });
      if (state !== 'gone') {
        const why = state === 'unknown' ? `; costsync cannot tell whether it still runs: ${whyUnknown(identityOf(holder!), self)}` : '';
        throw new CostsyncError(
          'CS_ERR_LOCKED',
          `Another costsync run holds the lock ${path}: pid ${holder!.pid} on ${holder!.hostname}, started ${holder!.startedAt} (${holder!.command})${why}.`,
          { exitCode: ExitCode.LOCKED, hint: `Wait for it to finish. If that process is gone for good, delete the lock file: rm ${path}` },
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
