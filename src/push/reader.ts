/**
 * Reads a FOCUS file through DuckDB's own readers (CSV, Parquet, JSON Lines) and checks it in SQL,
 * streaming: rows come back in file order, a chunk at a time, so a file larger than memory works.
 * The checks are the per-kind expressions in `sql/push/kind_*.sql`, composed per column here.
 */
import { renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { DuckDBConnection, DuckDBResult } from '@duckdb/node-api';
import { duckdbApi } from '../cjs-libraries.js';
import { CHARGE_CATEGORIES, CHARGE_CATEGORY_ALIASES } from '../api/types.js';
import { ConfigError, CostsyncError, ExitCode, InternalError } from '../errors.js';
import { DUCKDB_INSTANCE_OPTIONS, loadSql, sqlString } from '../storage/duckdb.js';
import type { TargetColumn, ValueKind } from './columns.js';

export type FileFormat = 'csv' | 'parquet' | 'jsonl';

/** The reader for a file, by its extension. */
export function fileFormatOf(path: string): FileFormat {
  const ext = extname(path.replace(/\.(gz|zst)$/i, '')).toLowerCase();
  if (['.csv', '.tsv', '.txt'].includes(ext)) return 'csv';
  if (ext === '.parquet') return 'parquet';
  if (['.jsonl', '.ndjson', '.json'].includes(ext)) return 'jsonl';
  throw new ConfigError(
    `${path}: costsync cannot tell the format from the extension "${ext || '(none)'}".`,
    'Name the file .csv (or .tsv), .parquet, or .jsonl (JSON Lines).',
  );
}

interface KindSql {
  parse: string;
  problem: string;
  json: string;
  /** The value as the row's content id hashes it (see push.ts contentId); the json unless the file says otherwise. */
  id: string;
  /** The value as identity and the ledger compare it (the same value in any spelling); the json unless the file says otherwise. */
  canon: string;
}

/** Kinds that read and check values as another kind does, and only send them differently: the sections they lack are its. */
const KIND_BASE: Partial<Record<ValueKind, ValueKind>> = { date: 'time', date_end: 'time' };

const kindCache = new Map<ValueKind, KindSql>();

/** The kinds whose values are quantities (costs, prices, counts): compared as numbers when rows are ordered. */
const NUMBER_KINDS: ReadonlySet<ValueKind> = new Set(['number', 'count']);

/** The expressions of a value kind, from its `sql/push/kind_<kind>.sql` sections. */
function kindSql(kind: ValueKind): KindSql {
  let cached = kindCache.get(kind);
  if (!cached) {
    const text = loadSql(`push/kind_${kind}`);
    const base = KIND_BASE[kind];
    const section = (name: string, fallback?: () => string) => {
      const m = new RegExp(`^-- ${name}:\\n([\\s\\S]*?)(?=^-- \\w+:|$(?![\\s\\S]))`, 'm').exec(text);
      if (m) return m[1]!.trim();
      if (fallback) return fallback();
      throw new InternalError(
        `sql/push/kind_${kind}.sql has no "-- ${name}:" section.`,
        'The sql/ files costsync was installed with are damaged or from another version: install costsync again.',
      );
    };
    const inherited = base === undefined ? undefined : (name: 'parse' | 'problem') => () => kindSql(base)[name];
    const json = section('json');
    cached = {
      parse: section('parse', inherited?.('parse')),
      problem: section('problem', inherited?.('problem')),
      json,
      id: section('id', () => json),
      canon: section('canon', () => json),
    };
    kindCache.set(kind, cached);
  }
  return cached;
}

const withoutComments = (sql: string) => sql.replace(/^--.*\n/gm, '').trim();

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** `WHEN 'usage' THEN 'Usage' …` for every canonical value and alias. */
function categoryCases(): string {
  const pairs: [string, string][] = [
    ...CHARGE_CATEGORIES.map((c) => [c.toLowerCase(), c] as [string, string]),
    ...Object.entries(CHARGE_CATEGORY_ALIASES),
  ];
  return pairs.map(([k, v]) => `WHEN ${sqlString(k)} THEN ${sqlString(v)}`).join(' ');
}

function fill(template: string, tokens: Record<string, string>): string {
  return template.replace(/\{(v|p|name|categories)\}/g, (_m, t: string) => tokens[t]!);
}

/** A source column's value as trimmed text, NULL when empty; nested values as JSON text. */
function sourceValue(format: FileFormat, column: string, type: string): string {
  if (format === 'jsonl') return `NULLIF(trim(json_extract_string(_object, ${sqlString(`$."${column.replaceAll('"', '\\"')}"`)})), '')`;
  const nested = /STRUCT|MAP|\[\]|JSON|UNION/.test(type);
  return `NULLIF(trim(${nested ? `to_json(${quoteIdent(column)})::VARCHAR` : `CAST(${quoteIdent(column)} AS VARCHAR)`}), '')`;
}

function constantValue(value: string | number | boolean | null): string {
  return value === null ? 'NULL::VARCHAR' : sqlString(String(value));
}

export interface SourceFile {
  path: string;
  format: FileFormat;
  /** Column names, and their DuckDB types. */
  columns: { name: string; type: string }[];
}

/** How `validationSql` gives each row its `_row_id`: the file's id column, and the key columns of a key rule (null: none). */
export interface RowIdentity {
  ownIdColumn: string | null;
  keyColumns: readonly string[] | null;
}

/**
 * A key rule's text of a row: the key columns' names and values, each value as read and checked
 * (instants in UTC, categories canonical, numbers as numbers), NULL for a column the file lacks or
 * leaves empty. Its MD5 is the row's id, so the same charge gets the same id from any export of it.
 */
function keyTextSql(keyColumns: readonly string[], targets: readonly TargetColumn[], idx: ReadonlyMap<string, number>): string {
  const values = keyColumns.map((name) => {
    const i = idx.get(name);
    if (i === undefined) return 'NULL::VARCHAR';
    const kind = targets[i]!.kind;
    // The instant, not the date sent: two charges of one day at different hours stay two.
    return fill(kindSql(KIND_BASE[kind] ?? kind).canon, { p: `p${i}` });
  });
  return `(${sqlString(`${keyColumns.join(',')}\u001e`)} || to_json([${values.join(', ')}]::VARCHAR[])::VARCHAR)`;
}

/**
 * Builds the query that checks (and, with `withJson`, serializes) every row. Output columns:
 * `_problems` (VARCHAR, problems joined by chr(31), NULL for a valid row), `_off_midnight` (the
 * charge period bounds with a time of day other than midnight UTC, as read, or NULL), `_row_hash` (a
 * hash of what `_row_id` is made of, the own id or the key, NULL where it is NULL), `_keyed` (the id
 * is the key's), `_row_id` (the row's own line-item id, else its key's id under a key rule, else NULL),
 * `_values` (the MD5 of the values sent, by column name, so order and formatting do not change it);
 * without `withJson`: `_order` (a JSON array: the canonical values that are not numbers as one text,
 * then the numbers by column name; how rows that share a key are ordered); with `withJson`: `_json` (what is sent, without the id) and `_id_json` (what the content id hashes,
 * where `_row_id` is NULL).
 */
export function validationSql(
  source: SourceFile,
  targets: readonly TargetColumn[],
  required: readonly string[],
  withJson: boolean,
  identity: RowIdentity = { ownIdColumn: null, keyColumns: null },
): string {
  const typeOf = new Map(source.columns.map((c) => [c.name, c.type]));
  const valueOf = (t: TargetColumn) =>
    'column' in t.from ? sourceValue(source.format, t.from.column, typeOf.get(t.from.column) ?? 'VARCHAR') : constantValue(t.from.constant);
  const idx = new Map(targets.map((t, i) => [t.name, i]));
  const billed = idx.get('BilledCost');
  const effective = idx.get('EffectiveCost');
  // EffectiveCost defaults to BilledCost row by row, in what is sent (below). It is checked on its own
  // value only, so a bad BilledCost is reported once, on BilledCost; without an EffectiveCost column
  // (runPush adds one copying BilledCost's source) it has no value of its own.
  const copiesBilled =
    billed !== undefined && effective !== undefined && JSON.stringify(targets[effective]!.from) === JSON.stringify(targets[billed]!.from);
  const values = targets.map((t, i) => `${i === effective && copiesBilled ? 'NULL::VARCHAR' : valueOf(t)} AS v${i}`);
  const categories = categoryCases();
  const parsed = targets.map((t, i) => `v${i}, ${fill(kindSql(t.kind).parse, { v: `v${i}`, categories })} AS p${i}`);
  const problems: string[] = [];
  targets.forEach((t, i) => {
    const name = sqlString(t.name);
    if (required.includes(t.name)) problems.push(`CASE WHEN v${i} IS NULL THEN ${sqlString(`${t.name}: required, but empty`)} END`);
    const problem = kindSql(t.kind).problem;
    if (problem !== 'NULL') problems.push(fill(problem, { v: `v${i}`, p: `p${i}`, name }));
  });
  if (idx.has('ChargePeriodStart') && idx.has('ChargePeriodEnd')) {
    const s = `p${idx.get('ChargePeriodStart')}`;
    const e = `p${idx.get('ChargePeriodEnd')}`;
    problems.push(`CASE WHEN ${e} <= ${s} THEN ${sqlString('ChargePeriodEnd: must be after ChargePeriodStart')} END`);
  }
  // The charge period bounds whose time of day (UTC) is lost in the date sent, with the value as read.
  const offMidnight = ['ChargePeriodStart', 'ChargePeriodEnd']
    .filter((name) => idx.has(name))
    .map((name) => {
      const i = idx.get(name)!;
      return `CASE WHEN epoch_us(p${i}) % 86400000000 <> 0 THEN ${sqlString(`${name} "`)} || left(v${i}, 40) || '"' END`;
    });
  const ownId = identity.ownIdColumn !== null && idx.has(identity.ownIdColumn) ? `p${idx.get(identity.ownIdColumn)}` : null;
  const keyText = identity.keyColumns === null ? null : keyTextSql(identity.keyColumns, targets, idx);
  const keyId = keyText === null ? 'NULL::VARCHAR' : `'costsync-' || md5(${keyText})`;
  const rowId = ownId === null ? keyId : `coalesce(${ownId}, ${keyId})`;
  // The checks compare ids by a hash of what they are made of: no MD5 a row until rows are sent.
  const keyHash = keyText === null ? 'NULL::UBIGINT' : `hash(${keyText})`;
  const rowHash = ownId === null ? keyHash : `CASE WHEN ${ownId} IS NOT NULL THEN hash(${ownId}) ELSE ${keyHash} END`;
  const sent = (i: number) => (i === effective && billed !== undefined ? `coalesce(p${i}, p${billed})` : `p${i}`);
  const sentValue = (t: TargetColumn, i: number, form: 'json' | 'id' | 'canon') => fill(kindSql(t.kind)[form], { p: sent(i) });
  const member = (t: TargetColumn, i: number, form: 'json' | 'id' | 'canon') =>
    `CASE WHEN ${sent(i)} IS NOT NULL THEN ${sqlString(`"${t.name}":`)} || ${sentValue(t, i, form)} END`;
  // The id is added to what is sent by push (the row's own, or the one its identity gives).
  const sentTargets = targets.map((t, i) => [t, i] as const).filter(([t]) => t.name !== identity.ownIdColumn);
  const object = (form: 'json' | 'id' | 'canon', members: (readonly [TargetColumn, number])[]) =>
    `'{' || concat_ws(',', ${members.map(([t, i]) => member(t, i, form)).join(', ')}) || '}'`;
  const byName = [...sentTargets].sort(([a], [b]) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // The outputs a query that only counts leaves out are not computed (DuckDB drops unused columns).
  const outputs = [
    `NULLIF(concat_ws(chr(31), ${problems.join(', ')}), '') AS _problems`,
    `${offMidnight.length === 0 ? 'NULL::VARCHAR' : `NULLIF(concat_ws(', ', ${offMidnight.join(', ')}), '')`} AS _off_midnight`,
    // A cheap hash of the id, for finding rows that share one (compared within one query only).
    `${rowHash} AS _row_hash`,
    // Whether the id is the key's (rows that share it are told apart) rather than the row's own (they are refused).
    `${ownId === null ? 'true' : `${ownId} IS NULL`} AND ${keyText === null ? 'false' : 'true'} AS _keyed`,
    `${rowId} AS _row_id`,
    `md5(${object('canon', byName)}) AS _values`,
  ];
  if (!withJson) {
    // A row's order among rows that share its key: what is not a number as one text, then the numbers.
    // Read only when the file has such rows, so it is left out of what is sent.
    outputs.push(
      `json_array(${[
        object(
          'canon',
          byName.filter(([t]) => !NUMBER_KINDS.has(t.kind)),
        ),
        ...byName.filter(([t]) => NUMBER_KINDS.has(t.kind)).map(([, i]) => sent(i)),
      ].join(', ')})::VARCHAR AS _order`,
    );
  } else {
    outputs.push(`${object('json', sentTargets)} AS _json`);
    // The content id hashes the row as costsync sent it before the charge period went as dates, so a
    // row keeps its id across that change (a re-push is skipped, not stored twice). Only rows without their own id need it.
    outputs.push(`CASE WHEN ${ownId ?? 'NULL'} IS NULL THEN ${object('id', sentTargets)} END AS _id_json`);
  }
  const parts: Record<string, string> = {
    outputs: outputs.join(',\n       '),
    parsed: parsed.join(',\n         '),
    values: values.join(', '),
    source: withoutComments(loadSql(`push/source_${source.format}`)),
  };
  return withoutComments(loadSql('push/validate')).replace(/\{(outputs|parsed|values|source)\}/g, (_m, part: string) => parts[part]!);
}

/** The parallel count of rows and invalid rows over a validation query. */
export function validationCountsSql(validation: string): string {
  return withoutComments(loadSql('push/validate_counts')).replace('{validation}', () => validation);
}

/** A DuckDB instance for reading push files: in memory, UTC, order kept. */
export interface FileReader {
  describe(path: string): Promise<SourceFile>;
  /** Runs a query to the end (in parallel, no order kept) and returns its rows. */
  all<T = Record<string, unknown>>(sql: string, path: string): Promise<T[]>;
  /** Streams a query's rows in order; `onChunk` gets each chunk's columns as arrays, and stops the scan by returning false. */
  scan(sql: string, path: string, onChunk: (columns: unknown[][], rows: number) => Promise<boolean | void> | boolean | void): Promise<void>;
  /**
   * Writes the given rows of a file (1-based, in file order) to `path` in the file's format, as read,
   * with `costsync_row` and `costsync_reason` added; through a temporary file renamed into place.
   */
  writeRows(source: SourceFile, rows: readonly { row: number; reason: string }[], path: string): Promise<void>;
  close(): void;
}

/** A file with no column names: empty, or (CSV) a first line of blank names; `rows` is the CSV's rows after that line. Pure. */
export function noHeader(path: string, format: FileFormat, rows: number): ConfigError {
  const example = 'ChargePeriodStart,BilledCost,ServiceName,ChargeCategory';
  if (format === 'jsonl') {
    return new ConfigError(
      `${path} is empty: it holds no JSON object with a member, so it names no column.`,
      `Check that this is the file you meant (a failed export can leave an empty file); JSON Lines has one object a line, such as {"ChargePeriodStart": "2025-06-01", "BilledCost": 1.5, "ServiceName": "…", "ChargeCategory": "Usage"}.`,
    );
  }
  const problem =
    rows === 0
      ? `${path} is empty: it has no header line naming the columns, and no rows.`
      : `${path} has no header line: its first line names no columns.`;
  return new ConfigError(
    problem,
    `Check that this is the file you meant (a failed export can leave an empty file); a CSV file's first line names its columns, for example ${example}.`,
  );
}

/** DuckDB's memory limit while push reads and checks files, unless COSTSYNC_PUSH_MEMORY_LIMIT says otherwise. */
export const PUSH_MEMORY_LIMIT = '256MB';

export async function openFileReader(env: NodeJS.ProcessEnv = process.env): Promise<FileReader> {
  const instance = await duckdbApi().DuckDBInstance.create(':memory:', {
    ...DUCKDB_INSTANCE_OPTIONS,
    memory_limit: env.COSTSYNC_PUSH_MEMORY_LIMIT ?? PUSH_MEMORY_LIMIT,
    preserve_insertion_order: 'true',
  });
  const connection: DuckDBConnection = await instance.connect();
  await connection.run("SET TimeZone = 'UTC'");
  const readError = (path: string, cause: unknown) => {
    const first = (cause as Error).message.split('\n')[0]!;
    const memory = /out of memory/i.test(first);
    return new CostsyncError(
      'CS_ERR_PUSH_READ',
      `${path}: ${memory ? 'DuckDB ran out of memory reading the file' : 'DuckDB cannot read the file'}: ${first}`,
      {
        exitCode: memory ? ExitCode.FAILED : ExitCode.USAGE,
        hint: memory
          ? `Raise the reader's memory limit with COSTSYNC_PUSH_MEMORY_LIMIT (default ${PUSH_MEMORY_LIMIT}), for example 1GB.`
          : 'Check that the file is CSV with a header row, Parquet, or JSON Lines, and that its extension says which.',
        cause,
      },
    );
  };
  return {
    async describe(path) {
      let isFile: boolean;
      try {
        isFile = statSync(path).isFile();
      } catch (cause) {
        throw new ConfigError(
          `${path}: cannot read the file (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`,
          'Check the path and its permissions.',
          cause,
        );
      }
      if (!isFile) throw new ConfigError(`${path} is a directory, not a file.`, `Name the files in it, for example ${path}/*.csv.`);
      const format = fileFormatOf(path);
      let columns: SourceFile['columns'];
      let rows = 0;
      try {
        if (format === 'jsonl') {
          const reader = await connection.runAndReadAll(loadSql('push/jsonl_keys'), [path]);
          columns = reader.getRowObjectsJS().map((r) => ({ name: String(r.key), type: 'JSON' }));
        } else {
          const reader = await connection.runAndReadAll(`DESCRIBE ${withoutComments(loadSql(`push/source_${format}`))}`, [path]);
          columns = reader.getRowObjectsJS().map((r) => ({ name: String(r.column_name), type: String(r.column_type) }));
        }
        // DuckDB names the columns of a CSV without a header line column0, column1, …: an empty file
        // gets one such column. Counted only then, to tell an empty file from a header of blank names.
        if (format === 'csv' && columns.every((c, i) => c.name === `column${i}`)) {
          const [count] = (
            await connection.runAndReadAll(`SELECT count(*) AS n FROM (${withoutComments(loadSql('push/source_csv'))})`, [path])
          ).getRowObjectsJS();
          rows = Number(count!.n);
          columns = [];
        }
      } catch (cause) {
        throw readError(path, cause);
      }
      if (columns.length === 0) throw noHeader(path, format, rows);
      return { path, format, columns };
    },
    async all<T>(sql: string, path: string) {
      try {
        const reader = await connection.runAndReadAll(sql, [path]);
        return reader.getRowObjectsJS() as T[];
      } catch (cause) {
        throw readError(path, cause);
      }
    },
    async scan(sql, path, onChunk) {
      let result: DuckDBResult;
      try {
        result = await connection.stream(sql, [path]);
      } catch (cause) {
        throw readError(path, cause);
      }
      const width = result.columnCount;
      for (;;) {
        let chunk;
        try {
          chunk = await result.fetchChunk();
        } catch (cause) {
          throw readError(path, cause);
        }
        if (!chunk || chunk.rowCount === 0) break;
        const columns: unknown[][] = [];
        for (let c = 0; c < width; c++) columns.push(chunk.getColumnValues(c));
        if ((await onChunk(columns, chunk.rowCount)) === false) break;
      }
    },
    async writeRows(source, rows, path) {
      const temporary = `${path}.tmp-${process.pid}`;
      // A list pushed again (its own costsync_row and costsync_reason) gets them anew.
      const own = source.columns.map((c) => c.name).filter((n) => n === 'costsync_row' || n === 'costsync_reason');
      const from = withoutComments(loadSql(`push/source_${source.format}`)).replace('$1', sqlString(source.path));
      const numbered = `SELECT row_number() OVER () AS costsync_row, * ${own.length > 0 ? `EXCLUDE (${own.map(quoteIdent).join(', ')})` : ''} FROM (${from})`;
      const [setting] = (await connection.runAndReadAll("SELECT current_setting('threads') AS threads")).getRowObjectsJS();
      try {
        await connection.run('CREATE OR REPLACE TEMP TABLE costsync_undelivered (row BIGINT, reason VARCHAR)');
        for (let at = 0; at < rows.length; at += 10_000) {
          const part = rows.slice(at, at + 10_000);
          await connection.run(
            `INSERT INTO costsync_undelivered SELECT unnest(from_json($1::VARCHAR, '["BIGINT"]')), unnest(from_json($2::VARCHAR, '["VARCHAR"]'))`,
            [JSON.stringify(part.map((r) => r.row)), JSON.stringify(part.map((r) => r.reason))],
          );
        }
        // One thread numbers the rows in file order.
        await connection.run('SET threads = 1');
        const joined = `FROM (${numbered}) s JOIN costsync_undelivered u ON u.row = s.costsync_row ORDER BY s.costsync_row`;
        if (source.format === 'jsonl') {
          const lines = (
            await connection.runAndReadAll(
              `SELECT json_merge_patch(s._object, json_object('costsync_row', s.costsync_row, 'costsync_reason', u.reason))::VARCHAR AS line ${joined}`,
            )
          ).getRowObjectsJS();
          writeFileSync(temporary, lines.map((l) => `${String(l.line)}\n`).join(''));
        } else {
          const format = source.format === 'csv' ? 'FORMAT csv, HEADER true' : 'FORMAT parquet';
          await connection.run(
            `COPY (SELECT s.* EXCLUDE (costsync_row), s.costsync_row, u.reason AS costsync_reason ${joined}) TO ${sqlString(temporary)} (${format})`,
          );
        }
        renameSync(temporary, path);
      } catch (cause) {
        rmSync(temporary, { force: true });
        throw new CostsyncError(
          'CS_ERR_PUSH_WRITE',
          `${path}: cannot write the rows not delivered: ${(cause as Error).message.split('\n')[0]}`,
          {
            exitCode: ExitCode.FAILED,
            hint: 'Check that the directory exists and is writable, or name another with --undelivered-dir.',
            cause,
          },
        );
      } finally {
        await connection.run(`SET threads = ${Number(setting!.threads)}`);
        await connection.run('DROP TABLE IF EXISTS costsync_undelivered');
      }
    },
    close() {
      connection.closeSync();
      instance.closeSync();
    },
  };
}
