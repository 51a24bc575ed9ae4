/**
 * The page spool: each fetched page is written to its own file
 * (`<dir>/<stream>/<window start>/<page>.json`), atomically and durably, before the cursor that
 * follows it is saved. A file holds the page's records as one JSON array of rows, each row an array:
 * the record's place in the page (`o`), the spec's fields in the table's order, and `extra` (every
 * field beyond the spec's, as an object; null when there are none). Earlier versions wrote each record
 * as an object (one JSON line a record, then one array of objects): a window they spooled is brought
 * to this form when a run resumes it (`upgradePages`), so it loads whole. A finished window is loaded
 * from its files by DuckDB's JSON reader, each row read as text values cast to the columns' types
 * (`spoolColumnsSelect` in storage/tables.ts), in one transaction, which keeps the pages out of memory.
 */
import { rmSync } from 'node:fs';
import { open, readFile, rm } from 'node:fs/promises';
import { namesIn, writeFileAtomic, writeFileDurably } from '../durable-file.js';
import { extraFields } from './columns.js';
import type { ApiColumnType } from '../api/fields.js';
import { join } from 'node:path';

export const PAGE_FILE_RE = /^(\d{6})\.json$/;

export interface SpoolColumn {
  name: string;
  /** DuckDB type the loader reads the field as (the anomalies' detection time is staged by the Appender, not spooled). */
  type: ApiColumnType;
}

/**
 * A page's records as its spool file: one JSON array of rows `[o, ...the spec's fields, extra]`, `o`
 * the record's place in the page, a field the record lacks as null, `extra` its fields beyond the
 * spec's (null when none; a field of its own named `o` or `extra` is one of them). One native
 * JSON.stringify for the page: a call per record took longer and made more than twice the garbage a
 * page (the collector was the largest cost with hundreds of sources). Rows as arrays rather than the
 * records as objects: the stringify of a 1,000-record page took about a third less (no keys, one
 * shape, the extra fields written once), and DuckDB reads them faster too (docs/benchmarks.md).
 * Leaves the records as they are.
 */
export function spoolPage(records: readonly Record<string, unknown>[], columns: readonly SpoolColumn[]): Uint8Array {
  const names = columns.map((c) => c.name);
  const known = new Set(names);
  const rows = new Array<unknown[]>(records.length);
  for (let ord = 0; ord < records.length; ord++) {
    const record = records[ord]!;
    const row = new Array<unknown>(names.length + 2);
    row[0] = ord;
    for (let i = 0; i < names.length; i++) row[i + 1] = record[names[i]!] ?? null;
    row[names.length + 1] = extraFields(record, known);
    rows[ord] = row;
  }
  return Buffer.from(JSON.stringify(rows));
}

/**
 * A record as an earlier version spooled it (its place `o`, the spec's fields, `extra`; any other
 * field a copy of one in `extra`) as this version's row. Pure.
 */
export function recordAsRow(record: Record<string, unknown>, columns: readonly SpoolColumn[]): unknown[] {
  return [record.o ?? null, ...columns.map((c) => record[c.name] ?? null), record.extra ?? null];
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
 * A page file the version before last wrote (one JSON object a line, or nothing for an empty page) as
 * the last one wrote it (one JSON array of those objects). JSON.stringify escapes every newline within
 * a value, so the lines are the records. Pure.
 */
export function linesAsArray(text: string): string {
  return `[${text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .join(',')}]`;
}

/**
 * A page file an earlier version wrote (JSON lines, or one array of objects) as this version writes
 * it (one array of rows, `spoolPage`). Pure.
 */
export function pageAsRows(text: string, columns: readonly SpoolColumn[]): string {
  const objects = text.startsWith('[') ? text : linesAsArray(text);
  return JSON.stringify((JSON.parse(objects) as Record<string, unknown>[]).map((r) => recordAsRow(r, columns)));
}

/** Whether a page file is in the form this version writes (an array of rows, or an empty array), from its first two bytes. */
async function isRowsPage(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x5b && (buffer[1] === 0x5b || buffer[1] === 0x5d);
  } finally {
    await handle.close();
  }
}

/**
 * Rewrites, atomically, a window's page files an earlier version wrote (records as objects: JSON
 * lines, or one array) into arrays of rows (`pageAsRows`), so that a window spooled across an upgrade
 * loads whole.
 */
export async function upgradePages(dir: string, columns: readonly SpoolColumn[]): Promise<void> {
  for (const name of namesIn(dir)) {
    if (!PAGE_FILE_RE.test(name)) continue;
    const path = join(dir, name);
    if (await isRowsPage(path)) continue;
    await writeFileAtomic(path, pageAsRows(await readFile(path, 'utf8'), columns), { syncDir: true });
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
  upgradePages(dir: string, columns: readonly SpoolColumn[]): Promise<void>;
}

export const fileSpool: Spool = { clear: clearSpool, dropPagesAfter, writePage, upgradePages };
