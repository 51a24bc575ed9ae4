/** `costsync query`: read-only SQL against the warehouse, printed as a table, CSV or JSON. */
import { readdirSync, rmSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import type { StatementType as StatementTypes } from '@duckdb/node-api';
import { duckdbApi } from './cjs-libraries.js';
import { tmpWriterPid } from './durable-file.js';
import { systemProbe } from './state/holder.js';
import { ConfigError, CostsyncError, ExitCode } from './errors.js';
import { sqlString, type ReadOnlyWarehouse, type ResultTable, type RowStream } from './storage/duckdb.js';
import { PARQUET_OPTIONS, boundedSettings } from './storage/duckdb-settings.js';
import { formatTable } from './table.js';

const StatementType = duckdbApi().StatementType;
type StatementType = StatementTypes;

export type OutputFormat = 'table' | 'csv' | 'json';

/** Most rows a table is printed with: it needs every row in memory to size its columns. */
export const MAX_TABLE_ROWS = 1000;

/** The extensions built into costsync's DuckDB (@duckdb/node-api's build); DuckDB downloads any other on first use. */
const BUILT_IN_EXTENSIONS = 'json, parquet and icu';

/** Ways DuckDB names an extension a query needs but cannot load. */
const EXTENSION_NAMES = [
  /required extension '(\w+)'/,
  /Failed to download extension "(\w+)"/,
  /Extension "(\w+)" is an existing extension/,
  /exists in the (\w+) extension/,
];

/** SQL DuckDB could not parse (its message names the place). */
const PARSER_ERROR = /Parser Error:/;

/** An unknown table, view or column: what `--list` answers. */
const UNKNOWN_NAME =
  /^(Catalog Error: (Table|View) with name .* does not exist|Binder Error: (Referenced (column|table) .* not found|Column .* does not exist|Table .* does not have a column|Values list .* does not have a column))/;

/**
 * A failed query's error: DuckDB's whole message (its suggestions, "Did you mean …" and the candidate
 * columns, and why an extension cannot load are on the lines after the first), and a hint where
 * costsync knows more: `--list` for an unknown name, what extensions there are for an extension.
 */
function queryError(cause: unknown): CostsyncError {
  const text = (cause instanceof Error ? cause.message : String(cause))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .join('\n')
    // The node API's wording around DuckDB's own message when the SQL is split into statements.
    .replace(/^Failed to extract statements: /, '');
  const first = text.split('\n')[0]!;
  if (/read-only mode/i.test(first)) {
    // DuckDB's words for a write it refused on the read-only warehouse, as costsync's rule: an EXPLAIN of a
    // write (which DuckDB plans by preparing the write) is refused as the write is.
    const type = /statement of type "(\w+)"/.exec(first)?.[1];
    const rule =
      type === 'EXPLAIN'
        ? 'EXPLAIN of a statement that changes the warehouse (INSERT, UPDATE, DELETE, CREATE, …) is refused as that statement is'
        : `${type ?? 'the statement'} changes the warehouse`;
    return refusal({ code: 'CS_ERR_QUERY_READ_ONLY', rule });
  }
  const extension = EXTENSION_NAMES.map((re) => re.exec(text)?.[1]).find((name) => name !== undefined);
  const hint =
    extension !== undefined
      ? `costsync's DuckDB has the ${BUILT_IN_EXTENSIONS} extensions built in, and costsync query installs no other (such as ${extension}): install it once with DuckDB itself (duckdb -c "INSTALL ${extension}") and costsync query loads it when a query needs it; or export the rows with --out rows.parquet and read them with a tool that has ${extension}.`
      : UNKNOWN_NAME.test(first)
        ? 'costsync query --list shows the tables and views with their columns.'
        : PARSER_ERROR.test(first)
          ? 'DuckDB could not read the SQL where the caret points: look there for a misspelt keyword, a missing comma or an unclosed quote; in a shell, quote the whole query in single quotes.'
          : undefined;
  return new CostsyncError('CS_ERR_QUERY', `The query failed: ${text}`, { exitCode: ExitCode.USAGE, hint, cause });
}

/** The statements a user's SQL may hold: they read (SELECT, with WITH, FROM-first, DESCRIBE, SHOW, SUMMARIZE, VALUES, PRAGMA show_tables) or explain. */
const ALLOWED_STATEMENTS: ReadonlySet<StatementType> = new Set([StatementType.SELECT, StatementType.EXPLAIN]);

/** Statements that would change the warehouse (refused as read-only, as DuckDB's read-only mode does). */
const WAREHOUSE_WRITES: ReadonlySet<StatementType> = new Set([
  StatementType.INSERT,
  StatementType.UPDATE,
  StatementType.DELETE,
  StatementType.MERGE_INTO,
  StatementType.CREATE,
  StatementType.CREATE_FUNC,
  StatementType.DROP,
  StatementType.ALTER,
]);

/** Why each other kind of statement is refused, named in the error. */
const REFUSAL_RULES: Partial<Record<StatementType, string>> = {
  [StatementType.COPY]:
    'COPY writes (or loads) files; export a result with --out FILE, read a file with read_parquet, read_csv or read_json',
  [StatementType.EXPORT]: 'EXPORT DATABASE writes files; export a result with --out FILE',
  [StatementType.COPY_DATABASE]: 'COPY FROM DATABASE writes another database',
  [StatementType.LOAD]:
    'INSTALL and LOAD add code to DuckDB; install an extension with DuckDB itself, and costsync query loads it when a query needs it',
  [StatementType.EXTENSION]: 'INSTALL and LOAD add code to DuckDB; install an extension with DuckDB itself',
  [StatementType.UPDATE_EXTENSIONS]: 'UPDATE EXTENSIONS writes extension files; update them with DuckDB itself',
  [StatementType.ATTACH]:
    'ATTACH opens another database, which can then be written; read other files with read_parquet, read_csv or read_json',
  [StatementType.DETACH]: 'DETACH changes the attached databases',
  [StatementType.SET]:
    'SET, RESET and USE change settings, some of which name files (extension_directory, temp_directory, secret_directory, profiling and log output)',
  [StatementType.PRAGMA]: 'PRAGMA changes settings, some of which write files; SELECT * FROM pragma_… reads the same',
  [StatementType.CALL]: 'CALL runs procedures (CHECKPOINT among them); SELECT * FROM the table function instead',
  // DuckDB parses ANALYZE as a VACUUM statement.
  [StatementType.VACUUM]: 'VACUUM and ANALYZE rewrite the warehouse or its statistics',
};

/**
 * Why costsync query refuses a statement of this type, or null when it runs: what the user types reads
 * the warehouse and files, and never writes a file, installs, loads, attaches or changes a setting
 * (`query --out` is costsync's own write, made around a checked SELECT). Pure.
 */
export function refusedStatement(type: StatementType): { code: 'CS_ERR_QUERY_READ_ONLY' | 'CS_ERR_QUERY_REFUSED'; rule: string } | null {
  if (ALLOWED_STATEMENTS.has(type)) return null;
  if (WAREHOUSE_WRITES.has(type))
    return {
      code: 'CS_ERR_QUERY_READ_ONLY',
      rule:
        type === StatementType.CREATE
          ? "CREATE changes the warehouse, or DuckDB's secrets"
          : `${StatementType[type]} changes the warehouse`,
    };
  return {
    code: 'CS_ERR_QUERY_REFUSED',
    rule: REFUSAL_RULES[type] ?? `a ${StatementType[type]} statement is not a query; only SELECT and EXPLAIN run`,
  };
}

/**
 * Readies the connection for the user's SQL and checks it. DuckDB's guards first: extensions are no
 * longer downloaded on first use and the configuration is locked, so nothing can change a setting
 * afterwards. Then DuckDB's parser: SQL of SELECTs alone runs (reading files included). Anything else
 * is prepared, never run, where it can touch no file, and refused by its type, naming the rule.
 * `single`: `--out`, whose SQL is written into costsync's COPY and must be one SELECT.
 */
export async function checkUserSql(warehouse: ReadOnlyWarehouse, text: string, single: boolean): Promise<void> {
  await warehouse.sql('SET autoinstall_known_extensions = false');
  await warehouse.sql('SET lock_configuration = true');
  let selects: boolean;
  let types: ({ type: StatementType } | { error: string })[] = [];
  try {
    selects = await warehouse.onlySelects(text);
    if (selects && !single) return;
    types = await warehouse.statementTypes(text);
  } catch (cause) {
    throw queryError(cause);
  }
  if (single && types.length !== 1) {
    throw new ConfigError(
      `--out writes the result of one SELECT, and the SQL holds ${types.length} statements.`,
      'Export each statement with its own costsync query --out, or leave --out off to print each result in turn.',
    );
  }
  // SQL of SELECTs alone: one that does not bind here fails when run, with DuckDB's own message.
  if (selects) return;
  for (const statement of types) {
    const refused =
      'error' in statement
        ? refusedUnbound(statement.error)
        : single && statement.type !== StatementType.SELECT
          ? (refusedStatement(statement.type) ?? { code: 'CS_ERR_QUERY_REFUSED' as const, rule: '--out writes the result of a SELECT' })
          : refusedStatement(statement.type);
    if (refused !== null) throw refusal(refused);
  }
}

/**
 * A statement other than SELECT that DuckDB could not prepare where no file can be touched: one that
 * names a file (COPY, EXPORT DATABASE, CREATE SECRET), or one it cannot tell (refused: it is not a
 * SELECT, and only SELECT and EXPLAIN run). Pure.
 */
export function refusedUnbound(error: string): { code: 'CS_ERR_QUERY_REFUSED'; rule: string } {
  if (/stored_secrets|secret_directory/.test(error))
    return { code: 'CS_ERR_QUERY_REFUSED', rule: 'CREATE SECRET stores a secret in a file; give DuckDB secrets to DuckDB itself' };
  if (/file system operations are disabled/.test(error))
    return {
      code: 'CS_ERR_QUERY_REFUSED',
      rule: `a statement other than SELECT reads or writes a file or directory (${error.replace(/ - file system.*$/, '')}); export a result with --out FILE, read a file with read_parquet, read_csv or read_json`,
    };
  return { code: 'CS_ERR_QUERY_REFUSED', rule: `only SELECT and EXPLAIN run, and DuckDB cannot tell what this statement is (${error})` };
}

function refusal(refused: { code: 'CS_ERR_QUERY_READ_ONLY' | 'CS_ERR_QUERY_REFUSED'; rule: string }): CostsyncError {
  return new CostsyncError(refused.code, `costsync query only reads: ${refused.rule}.`, {
    exitCode: ExitCode.USAGE,
    hint: 'costsync query runs SELECT (and EXPLAIN) statements and reads files with read_parquet, read_csv or read_json; change the warehouse with costsync sync, or open it with DuckDB itself.',
  });
}

/**
 * Runs `text` and writes its result as it arrives: CSV and JSON a chunk at a time, whatever the
 * size; a table with at most MAX_TABLE_ROWS rows, saying so when there were more. SQL of several
 * statements prints each one's table in turn; CSV and JSON hold one result, so they take one statement.
 */
export async function writeQuery(
  warehouse: ReadOnlyWarehouse,
  text: string,
  format: OutputFormat,
  write: (text: string) => void,
): Promise<void> {
  await checkUserSql(warehouse, text, false);
  let statements;
  try {
    statements = await warehouse.statements(text);
  } catch (cause) {
    throw queryError(cause);
  }
  if (statements.length === 0) {
    throw new ConfigError(
      'No SQL to run: the text holds no statement, only comments or semicolons.',
      'Pass a SELECT, for example costsync query "SELECT * FROM monthly_spend".',
    );
  }
  if (statements.length > 1 && format !== 'table') {
    throw new ConfigError(
      `--format ${format} writes the result of one statement, and the SQL holds ${statements.length}.`,
      `Run each statement with its own costsync query, or use --format table, which prints each result in turn.`,
    );
  }
  for (const [i, statement] of statements.entries()) {
    if (i > 0) write('\n');
    let stream;
    try {
      stream = await statement();
    } catch (cause) {
      throw queryError(cause);
    }
    await writeResult(stream, format, write);
  }
}

/**
 * A decimal's exact text as money prints: trailing zeros dropped down to two places (`60965.4200000000`
 * is `60965.42`, `10.0000000000` is `10.00`), never a digit of the amount lost (`0.0004000000` is `0.0004`). Pure.
 */
export function decimalText(text: string): string {
  const dot = text.indexOf('.');
  if (dot < 0) return text;
  const keep = Math.min(2, text.length - dot - 1);
  let end = text.length;
  while (end > dot + 1 + keep && text[end - 1] === '0') end -= 1;
  return text.slice(0, end === dot + 1 ? dot : end);
}

/** Sets `row`'s decimal columns (DuckDB's exact text) as numbers (JSON and the table) or as money text (CSV), in place: the row is the stream's own. */
function setDecimals(row: Record<string, unknown>, decimals: readonly string[], asText: boolean): Record<string, unknown> {
  for (const name of decimals) if (typeof row[name] === 'string') row[name] = asText ? decimalText(row[name]) : Number(row[name]);
  return row;
}

async function writeResult(stream: RowStream, format: OutputFormat, write: (text: string) => void): Promise<void> {
  const names = stream.columns.map((c) => c.name);
  const jsonColumns = stream.columns.filter((c) => c.type === 'JSON').map((c) => c.name);
  const decimals = stream.columns.filter((c) => c.type.startsWith('DECIMAL')).map((c) => c.name);
  const table: Record<string, unknown>[] = [];
  let rows = 0;
  let truncated = false;
  if (format === 'csv') write(`${names.map(csvField).join(',')}\n`);
  if (format === 'json') write('[');
  try {
    for await (const batch of stream.batches) {
      for (const exact of batch) {
        const row = setDecimals(exact, decimals, format === 'csv');
        if (format === 'csv') write(`${names.map((n) => csvField(row[n])).join(',')}\n`);
        else if (format === 'json') write(`${rows === 0 ? '\n' : ',\n'}  ${JSON.stringify(withJsonValues(row, jsonColumns))}`);
        else if (table.length < MAX_TABLE_ROWS) table.push(row);
        else truncated = true;
        rows += 1;
      }
      if (truncated) break;
    }
  } catch (cause) {
    throw queryError(cause);
  }
  if (format === 'json') write(rows === 0 ? ']\n' : '\n]\n');
  if (format === 'table') {
    write(`${formatResult({ columns: stream.columns, rows: table }, 'table')}\n`);
    if (truncated) write(`(the first ${MAX_TABLE_ROWS} rows; --format csv or json prints them all)\n`);
  }
}

/** `row` with its JSON columns' text as the values it holds, so JSON output nests them rather than quoting them. Pure. */
function withJsonValues(row: Record<string, unknown>, jsonColumns: readonly string[]): Record<string, unknown> {
  if (jsonColumns.length === 0) return row;
  const out = { ...row };
  for (const name of jsonColumns) if (typeof out[name] === 'string') out[name] = JSON.parse(out[name]);
  return out;
}

/** One CSV field: quoted when it holds a comma, quote or line break (RFC 4180). Pure. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A result as text in the chosen format. Pure. */
export function formatResult(result: ResultTable, format: OutputFormat): string {
  const names = result.columns.map((c) => c.name);
  if (format === 'json') return JSON.stringify(result.rows, null, 2);
  if (format === 'csv')
    return [names.map(csvField).join(','), ...result.rows.map((r) => names.map((n) => csvField(r[n])).join(','))].join('\n');
  return result.rows.length === 0 ? `(no rows; columns: ${names.join(', ')})` : formatTable(result.rows, names);
}

/**
 * `query --list` for a terminal: a block per table or view, its description, then its columns wrapped
 * to `width` and indented (a table of one line per object ran far past any terminal). Pure.
 */
export function listText(rows: readonly { name: string; kind: string; columns: string; about: string | null }[], width: number): string {
  const wrap = (text: string, indent: string): string[] => {
    const lines: string[] = [];
    let line = indent;
    for (const word of text.split(' ')) {
      if (line.length > indent.length && line.length + 1 + word.length > width) {
        lines.push(line);
        line = indent;
      }
      line += line.length > indent.length ? ` ${word}` : word;
    }
    if (line.length > indent.length) lines.push(line);
    return lines;
  };
  return rows
    .map((r) =>
      [
        `${r.name} (${r.kind === 'base table' ? 'table' : r.kind})`,
        ...(r.about ? wrap(r.about, '  ') : []),
        ...wrap(r.columns, '    '),
      ].join('\n'),
    )
    .join('\n\n');
}

/** What `query --out` writes, by the file's extension: DuckDB's own COPY formats. */
const EXPORT_FORMATS: Record<string, string> = {
  // Row groups bounded in bytes, as the lakes' (a fixed count of rows of a wide result did not fit the memory limit).
  '.parquet': PARQUET_OPTIONS,
  '.csv': 'FORMAT csv, HEADER true',
  '.jsonl': 'FORMAT json',
  '.ndjson': 'FORMAT json',
};

/** The COPY options for `file`, by its extension. Pure. */
export function exportFormat(file: string): string {
  const ext = extname(file).toLowerCase();
  const format = EXPORT_FORMATS[ext];
  if (format === undefined) {
    throw new ConfigError(
      `--out ${file}: costsync writes .parquet, .csv or .jsonl files (got ${ext === '' ? 'no extension' : ext}).`,
      'For example --out focus.parquet.',
    );
  }
  return format;
}

/**
 * Writes the result of `text` to `file` with DuckDB's COPY, which streams it (memory does not grow with
 * the result), into a temporary file beside it renamed into place, so a failed or killed export never
 * leaves a partial file at `file`. Returns the rows written.
 */
export async function exportQuery(warehouse: ReadOnlyWarehouse, text: string, file: string): Promise<number> {
  const { tmp, rows, release } = await copyBeside(warehouse, text, file, true);
  try {
    await rename(tmp, resolve(file));
  } finally {
    release();
  }
  return rows;
}

/**
 * Removes `path` when the process is stopped (Ctrl-C, SIGTERM) before the returned release is called,
 * then lets the signal end the process as it would have (exit 130, 143): a stopped export leaves no
 * temporary file behind.
 */
function removedOnStop(path: string): () => void {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const stop = (signal: NodeJS.Signals) => {
    release();
    rmSync(path, { force: true });
    process.kill(process.pid, signal);
  };
  const release = () => {
    for (const s of signals) process.removeListener(s, stop);
  };
  for (const s of signals) process.once(s, stop);
  return release;
}

/** Removes the temporary files of earlier exports to `target` whose process is gone (killed, or an older costsync's). */
function removeStaleTemporaries(target: string): void {
  const dir = dirname(target);
  const prefix = `.${basename(target)}.`;
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.startsWith(prefix) && n.endsWith('.tmp'));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = tmpWriterPid(name);
    if (pid !== null && pid !== process.pid && !systemProbe.isAlive(pid)) rmSync(join(dir, name), { force: true });
  }
}

/**
 * COPY of the result of `text` into a temporary file beside `file` (made with its folder), in `file`'s
 * format; the caller renames it into place. `userSql`: the text is a user's, checked as `query` checks it.
 */
export async function copyBeside(
  warehouse: ReadOnlyWarehouse,
  text: string,
  file: string,
  userSql: boolean,
  /** More COPY options (after the format's own): an export's time format. */
  extraOptions = '',
): Promise<{ tmp: string; rows: number; release: () => void }> {
  const options = exportFormat(file);
  const target = resolve(file);
  const tmp = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`);
  const select = text.trim().replace(/;\s*$/, '');
  // As `report --out` does: a folder that does not exist yet is made (DuckDB would name the temporary file).
  await mkdir(dirname(target), { recursive: true });
  removeStaleTemporaries(target);
  const release = removedOnStop(tmp);
  try {
    // As a sync does: one thread, DuckDB's memory bounded (it spills), no order kept across threads, so
    // memory stays flat whatever the size of the result (a Parquet writer buffers a row group per thread).
    for (const [name, value] of Object.entries(boundedSettings())) await warehouse.sql(`SET ${name} = ${sqlString(value)}`);
    // After costsync's own settings, which the check then locks.
    if (userSql) await checkUserSql(warehouse, select, true);
    const [row] = await warehouse.sql<{ Count: number }>(`COPY (${select}) TO ${sqlString(tmp)} (${options}${extraOptions})`);
    return { tmp, rows: Number(row?.Count ?? 0), release };
  } catch (cause) {
    release();
    await rm(tmp, { force: true });
    if (cause instanceof CostsyncError) throw cause;
    throw queryError(cause);
  }
}
