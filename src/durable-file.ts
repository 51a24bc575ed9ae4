/** Writing a file so that a crash leaves the old content or the new, never a mix. */
import { readdirSync } from 'node:fs';
import { constants } from 'node:fs';
import { copyFile, mkdir, open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/** The names in a directory, or none when it cannot be read (not there yet): for clean-ups of leftovers. */
export function namesIn(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
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
export async function copyFileDurably(from: string, to: string, tmp: string, beforeRename: () => Promise<void> = async () => undefined): Promise<void> {
  await copyFile(from, tmp, constants.COPYFILE_FICLONE);
  await fsyncPath(tmp);
  await beforeRename();
  await renameDurably(tmp, to);
}

/**
 * Writes `text` to a temp file beside `path`, fsyncs it, and renames it over `path`. With
 * `syncDir`, the directory is fsynced too, so the rename itself survives a crash.
 */
export async function writeFileAtomic(path: string, text: string, options: { mode?: number; syncDir?: boolean } = {}): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  const file = await open(tmp, 'w', options.mode ?? 0o600);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, path);
  if (options.syncDir) await fsyncPath(dir);
}
