/** Writing a file so that a crash leaves the old content or the new, never a mix. */
import { readdirSync } from 'node:fs';
import { constants } from 'node:fs';
import { copyFile, link, mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

/** The names in a directory, or none when it cannot be read (not there yet): for clean-ups of leftovers. */
export function namesIn(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * A temporary name beside `path`: the process id (so a clean-up can tell a dead writer's) and a
 * random part (so two writes of one process never share it), ending in `.tmp`.
 */
export function tmpName(path: string): string {
  return `${path}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`;
}

/** The writer's process id in a `tmpName` (or an earlier version's `<name>.<pid>.tmp`), or null. */
export function tmpWriterPid(name: string): number | null {
  const m = /\.(\d+)(?:\.[a-z0-9]+)?\.tmp$/.exec(name);
  return m ? Number(m[1]) : null;
}

/** Flushes a file, or a directory (so a rename in it survives a crash), to disk. */
export async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Renames `tmp` over `path` and fsyncs the directory, so the rename itself survives a crash. */
export async function renameDurably(tmp: string, path: string): Promise<void> {
  await rename(tmp, path);
  await fsyncPath(dirname(path));
}

/**
 * Copies `from` to `tmp` (a reflink where the file system has them), fsyncs it, runs `beforeRename`,
 * and renames it over `to` durably: a crash leaves the old `to` or the whole copy.
 */
export async function copyFileDurably(
  from: string,
  to: string,
  tmp: string,
  beforeRename: () => Promise<void> = async () => undefined,
): Promise<void> {
  await copyFile(from, tmp, constants.COPYFILE_FICLONE);
  await fsyncPath(tmp);
  await beforeRename();
  await renameDurably(tmp, to);
}

/**
 * Writes `text` to a temp file beside `path`, fsyncs it, and renames it over `path`. With
 * `syncDir`, the directory is fsynced too, so the rename itself survives a crash.
 */
export async function writeFileAtomic(
  path: string,
  text: string | Uint8Array,
  options: { mode?: number; syncDir?: boolean } = {},
): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = tmpName(path);
  try {
    await writeSynced(tmp, text, options.mode ?? 0o600);
    await rename(tmp, path);
  } catch (error) {
    // A failed write (a full disk) or rename (a directory at `path`) leaves no temporary file behind.
    await rm(tmp, { force: true }).catch(() => undefined);
    throw error;
  }
  if (options.syncDir) await fsyncPath(dir);
}

/**
 * Writes `data` at `path` itself (no temporary name), fsyncs it, then its directory, creating the
 * directory on first use. Not atomic: for files that are trusted only once something written after
 * this call returns says they are there (a spool page, named in the saved state), so a crash mid-write
 * leaves a file nothing trusts. One file created, no rename, no mkdir on the common path: at hundreds
 * of sources the per-page file operations showed in the profiles.
 */
export async function writeFileDurably(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  try {
    await writeSynced(path, data, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeSynced(path, data, mode);
  }
  await fsyncPath(dir);
}

async function writeSynced(path: string, data: string | Uint8Array, mode: number): Promise<void> {
  const file = await open(path, 'w', mode);
  try {
    await file.writeFile(data);
    await file.sync();
  } finally {
    await file.close();
  }
}

/**
 * Creates `path` with `text` only when no file has that name, atomically and durably: the whole file
 * is written beside it, then hard-linked to its name (a link never replaces a file). False when the
 * name was taken (by another writer that got there first).
 */
export async function createFileExclusive(path: string, text: string, mode = 0o644): Promise<boolean> {
  const tmp = tmpName(path);
  await writeSynced(tmp, text, mode);
  try {
    await link(tmp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await rm(tmp, { force: true });
  }
  await fsyncPath(dirname(path));
  return true;
}
