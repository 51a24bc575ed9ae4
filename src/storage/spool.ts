/**
 * The page spool: each fetched page is written to its own file
 * (`<dir>/<stream>/<window start>/<page>.json`), atomically and durably, before the cursor that
 * follows it is saved. A file holds one JSON line per record: its place in the page (`o`), the
 * spec's fields, and `extra` (every other field; absent when there are none). A finished window is
 * loaded from its files by DuckDB's JSON reader with typed columns in one transaction, which keeps
 * the pages out of memory.
 */
import { readdirSync, rmSync } from 'node:fs';
import { writeFileAtomic } from '../durable-file.js';
import { extraFields } from './columns.js';
import { join } from 'node:path';

export const PAGE_FILE_RE = /^(\d{6})\.json$/;

export interface SpoolColumn {
  name: string;
  /** DuckDB type the loader reads the field as. */
  type: 'VARCHAR' | 'DATE' | 'DOUBLE';
}

/** One JSON value, with non-finite numbers as null (JSON has no NaN). */
function jsonValue(v: unknown): string {
  if (v === undefined || v === null) return 'null';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  return JSON.stringify(v);
}

/**
 * A page's records as spool lines. A line is the record as the API sent it (one native
 * JSON.stringify, three times faster than building it field by field), its place `o` first and its
 * fields beyond the spec's copied into `extra`; the reader takes only `o`, the spec's fields and
 * `extra`, and a field a line lacks reads as NULL. A record with a field named `o` or `extra` of its
 * own is built field by field instead. Pure.
 */
export function spoolLines(records: readonly Record<string, unknown>[], columns: readonly SpoolColumn[]): string {
  const known = new Set(columns.map((c) => c.name));
  const keys = columns.map((c) => `,${JSON.stringify(c.name)}:`);
  const lines: string[] = new Array(records.length);
  for (let ord = 0; ord < records.length; ord++) {
    const record = records[ord]!;
    const extra = extraFields(record, known);
    if (extra === null) {
      const text = JSON.stringify(record);
      lines[ord] = text === '{}' ? `{"o":${ord}}` : `{"o":${ord},${text.slice(1)}`;
    } else if (!('o' in extra || 'extra' in extra)) {
      const text = JSON.stringify(record);
      lines[ord] = `{"o":${ord},${text.slice(1, -1)},"extra":${JSON.stringify(extra)}}`;
    } else {
      let line = `{"o":${ord}`;
      for (let i = 0; i < columns.length; i++) line += keys[i] + jsonValue(record[columns[i]!.name]);
      lines[ord] = `${line},"extra":${JSON.stringify(extra)}}`;
    }
  }
  return lines.join('\n');
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
 * the page exists). Asynchronous, so disk waits happen while other windows parse their pages.
 */
export async function writePage(dir: string, page: number, text: string | Uint8Array): Promise<void> {
  await writeFileAtomic(join(dir, `${String(page).padStart(6, '0')}.json`), text, { syncDir: true });
}

/** Removes pages numbered above `page` (written after the last saved cursor) and temp files. */
export function dropPagesAfter(dir: string, page: number): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = PAGE_FILE_RE.exec(name);
    if (name.endsWith('.tmp') || (m && Number(m[1]) > page)) rmSync(join(dir, name), { force: true });
  }
}

/** Removes a window's (or a whole stream's) spooled pages. */
export function clearSpool(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The spool's file operations, as the windowed engine uses them: passed in (`SyncContext.spool`)
 * so the engine's order of steps can be tested without a disk.
 */
export interface Spool {
  clear(dir: string): void;
  dropPagesAfter(dir: string, page: number): void;
  writePage(dir: string, page: number, text: string | Uint8Array): Promise<void>;
}

export const fileSpool: Spool = { clear: clearSpool, dropPagesAfter, writePage };
