/**
 * The page spool: each fetched page is written to its own file
 * (`<dir>/<stream>/<window start>/<page>.json`), atomically and durably, before the cursor that
 * follows it is saved. A file holds the page's records as one JSON array, each with its place in the
 * page (`o`) and `extra` (every field beyond the spec's; absent when there are none). Earlier
 * versions wrote one JSON line per record: a window they spooled is brought to this form when a run
 * resumes it (`upgradePages`), so it loads whole. A finished window is loaded from its files by DuckDB's JSON
 * reader with typed columns in one transaction, which keeps the pages out of memory.
 */
import { rmSync } from 'node:fs';
import { open, readFile, rm } from 'node:fs/promises';
import { namesIn, writeFileAtomic, writeFileDurably } from '../durable-file.js';
import { extraFields } from './columns.js';
import { join } from 'node:path';

export const PAGE_FILE_RE = /^(\d{6})\.json$/;

export interface SpoolColumn {
  name: string;
  /** DuckDB type the loader reads the field as (the anomalies' detection time is staged by the Appender, not spooled). */
  type: 'VARCHAR' | 'DATE' | 'DOUBLE' | 'TIMESTAMPTZ';
}

/**
 * A page's records as its spool file: one JSON array, each record as the API sent it with its place
 * `o` and its fields beyond the spec's copied into `extra`. The reader takes only `o`, the spec's
 * fields and `extra`; a field a record lacks reads as NULL. One native JSON.stringify for the page:
 * a call per record took longer and made more than twice the garbage a page
 * (the collector was the largest cost with hundreds of sources). Takes the records over (it adds
 * `o` and `extra` to them: the page is garbage once spooled). A record with a field named `o` or
 * `extra` of its own is written as a new object of the spec's fields, its own fields in `extra`.
 */
export function spoolPage(records: Record<string, unknown>[], columns: readonly SpoolColumn[]): Uint8Array {
  const known = new Set(columns.map((c) => c.name));
  for (let ord = 0; ord < records.length; ord++) {
    const record = records[ord]!;
    const extra = extraFields(record, known);
    if (extra !== null && ('o' in extra || 'extra' in extra)) {
      const line: Record<string, unknown> = { o: ord };
      for (const { name } of columns) line[name] = record[name] ?? null;
      line.extra = extra;
      records[ord] = line;
      continue;
    }
    record.o = ord;
    if (extra !== null) record.extra = extra;
  }
  return Buffer.from(JSON.stringify(records));
}

export function windowSpoolDir(spoolDir: string, stream: string, windowStart: string): string {
  return join(spoolDir, stream, windowStart);
}

/** The glob DuckDB reads a window's pages from. */
export function pageGlob(dir: string): string {
  return join(dir, '*.json');
}

/**
 * Writes page `page` of a window durably, the directory entry included (the saved state will say
 * the page exists). In place, not through a temporary name: a page is trusted only once the state
 * saved after this write says it exists, and a resumed window first drops every page past the saved
 * one (`dropPagesAfter`), so a page cut off by a crash is never read. Asynchronous, so disk waits
 * happen while other windows parse their pages.
 */
export async function writePage(dir: string, page: number, text: string | Uint8Array): Promise<void> {
  await writeFileDurably(join(dir, `${String(page).padStart(6, '0')}.json`), text);
}

/** Removes pages numbered above `page` (written after the last saved cursor) and temp files. */
export function dropPagesAfter(dir: string, page: number): void {
  for (const name of namesIn(dir)) {
    const m = PAGE_FILE_RE.exec(name);
    if (name.endsWith('.tmp') || (m && Number(m[1]) > page)) rmSync(join(dir, name), { force: true });
  }
}

/**
 * A page file an earlier version wrote (one JSON object a line, or nothing for an empty page) as
 * this version writes it (one JSON array). JSON.stringify escapes every newline within a value, so
 * the lines are the records. Pure.
 */
export function linesAsArray(text: string): string {
  return `[${text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .join(',')}]`;
}

/** Whether a page file is in the form this version writes (a JSON array), from its first byte. */
async function isArrayPage(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(1), 0, 1, 0);
    return bytesRead === 1 && buffer[0] === 0x5b;
  } finally {
    await handle.close();
  }
}

/**
 * Rewrites, atomically, a window's page files an earlier version wrote as JSON lines into JSON
 * arrays (`linesAsArray`), so that a window spooled across an upgrade loads whole.
 */
export async function upgradePages(dir: string): Promise<void> {
  for (const name of namesIn(dir)) {
    if (!PAGE_FILE_RE.test(name)) continue;
    const path = join(dir, name);
    if (await isArrayPage(path)) continue;
    await writeFileAtomic(path, linesAsArray(await readFile(path, 'utf8')), { syncDir: true });
  }
}

/**
 * Removes a window's (or a whole stream's) spooled pages. Asynchronously: removing a window's files on
 * the main thread held every other source's pages while it ran.
 */
export async function clearSpool(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/**
 * The spool's file operations, as the windowed engine uses them: passed in (`SyncContext.spool`)
 * so the engine's order of steps can be tested without a disk.
 */
export interface Spool {
  clear(dir: string): Promise<void>;
  dropPagesAfter(dir: string, page: number): void;
  writePage(dir: string, page: number, text: string | Uint8Array): Promise<void>;
  upgradePages(dir: string): Promise<void>;
}

export const fileSpool: Spool = { clear: clearSpool, dropPagesAfter, writePage, upgradePages };
