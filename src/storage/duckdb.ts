/**
 * The DuckDB warehouse: open, migrate from `sql/schema/`, and run SQL loaded by name from `sql/`.
 * Statements and transactions go through one serial queue (`write-queue.ts`), because a DuckDB
 * connection runs one transaction at a time and concurrent windows must not interleave their
 * BEGIN/COMMIT; the tuning variables are checked in `duckdb-settings.ts`.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBAppender, DuckDBConnection, DuckDBInstance, DuckDBValue, StatementType } from '@duckdb/node-api';
import { duckdbApi } from '../cjs-libraries.js';
import { CostsyncError, ExitCode, InternalError, diskFullError } from '../errors.js';
import { asMemoryError, boundedSettings, checkpointDue, sizeInBytes } from './duckdb-settings.js';
import { writeQueue, type BodyMayRunTwice, type TransactionOptions } from './write-queue.js';
import { shortHash } from '../fingerprint.js';
import { SQL_DIR } from '../paths.js';
import { encode, markMany, type OutboxItem } from './outbox.js';
import { SUBSTITUTABLE, changesWith } from './tables.js';

const duckdb = duckdbApi();

const sqlCache = new Map<string, string>();

/** A SQL string literal for `text` (statements that take no parameters: ATTACH, COPY … TO, generated SQL). Pure. */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Names substituted into SQL templates: tables, a date column, the columns of spooled rows (see storage/tables.ts). */
export interface SqlNames {
  stage?: string;
  table?: string;
  date?: string;
  columns?: string;
  fields?: string;
  changed?: string;
}

/** What each name may be: it is written into SQL as it is, so only these shapes pass (tables: the registry's, `tables.ts`). */
const NAME_CHECKS: Record<keyof SqlNames, (value: string) => boolean> = {
  stage: (v) => SUBSTITUTABLE.has(v),
  table: (v) => SUBSTITUTABLE.has(v),
  date: (v) => /^[a-z_]+$/.test(v),
  columns: (v) => /^CAST\(r\[\d+\] AS [A-Z]+(\(\d+,\d+\))?\) AS [a-z_]+(, CAST\(r\[\d+\] AS [A-Z]+(\(\d+,\d+\))?\) AS [a-z_]+)*$/.test(v),
  fields: (v) => /^[a-z_]+(, [a-z_]+)*$/.test(v),
  changed: (v) =>
    /^\(old\.[a-z_]+(::VARCHAR)?(, old\.[a-z_]+(::VARCHAR)?)*\) IS DISTINCT FROM \(staged\.[a-z_]+(::VARCHAR)?(, staged\.[a-z_]+(::VARCHAR)?)*\)$/.test(
      v,
    ),
};

/**
 * The text of `sql/<name>.sql`, with `{{other/name}}` replaced by that file's text (shared
 * fragments) and `$stage`, `$table`, `$date`, `$columns`, `$fields` and `$changed` by the names given, each checked.
 */
export function loadSql(name: string, names: SqlNames = {}): string {
  let text = sqlCache.get(name);
  if (text === undefined) {
    text = readFileSync(join(SQL_DIR, `${name}.sql`), 'utf8').replace(/\{\{([\w/]+)\}\}/g, (_m, fragment: string) =>
      loadSql(fragment)
        .replace(/^--.*\n/gm, '')
        .trim(),
    );
    sqlCache.set(name, text);
  }
  for (const [token, value] of Object.entries(names) as [keyof SqlNames, string][]) {
    // A name outside the checked shapes would be written into SQL as it is.
    if (!NAME_CHECKS[token](value)) throw new InternalError(`sql/${name}.sql: not a substitutable ${token}: ${value}`);
    text = text.replaceAll(`$${token}`, value);
  }
  return text;
}

export interface Warehouse {
  readonly path: string;
  readonly connection: DuckDBConnection;
  /** Runs a named SQL file with positional parameters; resolves to the rows it inserted, updated or deleted. */
  run(name: string, params?: DuckDBValue[], names?: SqlNames): Promise<number>;
  /** Runs a named SQL file and returns its rows as objects (BigInts as numbers). */
  query<T = Record<string, unknown>>(name: string, params?: DuckDBValue[], names?: SqlNames): Promise<T[]>;
  /** Runs ad-hoc SQL (for `query`, `status` and tests); rows as objects. */
  sql<T = Record<string, unknown>>(text: string, params?: DuckDBValue[]): Promise<T[]>;
  /**
   * Runs `fn` inside BEGIN/COMMIT on the write queue; rolls back on error. Every write goes through
   * here, and each one records in the same transaction that the published file is now behind
   * (`publish: false` for bookkeeping that readers need not see at once).
   */
  transaction<T>(fn: () => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * As `transaction`, sharing one commit with other such transactions waiting at the same time; the body
   * runs again on its own should the shared commit fail (`BodyMayRunTwice`).
   */
  transactionMayRepeat<T>(body: BodyMayRunTwice<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Inside a transaction: runs `fn` once that transaction has committed (`true`) or rolled back
   * (`false`), for what a caller keeps about work in flight: the windows a grouped commit is storing,
   * the carried state a transaction wrote (the warehouse's only once it commits).
   */
  onSettle(fn: (committed: boolean) => void): void;
  /**
   * Runs `fn` on the write queue with no transaction open: what it reads (a COPY, the file itself) is
   * committed data only, and no commit happens while it runs. Statements in it commit one by one.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Runs `fn` once every statement queued before the call has run (a transaction may be open: for
   * reads of rows no open transaction of the caller's can touch).
   */
  afterQueued<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Tells the warehouse that `dates` of `source` in `table` changed, inside the transaction that
   * changes them: the change is numbered (for lakes that catch up later, `outputs/lake-catch-up.ts`),
   * and with a lake, their partitions (and a Parquet lake's manifest) are recorded as pending.
   */
  changed(table: string, source: string, dates: readonly string[]): Promise<void>;
  /** The lake whose pending partitions changes are recorded for, or null. */
  readonly lake: LakeFormat | null;
  /** Appends rows to a table with the Appender, inside whatever transaction is open. */
  append(table: string, write: (appender: DuckDBAppender) => void): Promise<void>;
  close(): void;
}

function toPlain(row: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(row)) if (typeof v === 'bigint') row[k] = Number(v);
  return row;
}

/**
 * Settings of every DuckDB instance costsync opens. DuckDB's external file cache (on by default since
 * 1.3) served the rows of a file costsync had just replaced at the same path (a scratch file, a spooled
 * page) when the new file's modification time matched the old one's: filters then matched nothing.
 */
export const DUCKDB_INSTANCE_OPTIONS: Readonly<Record<string, string>> = { enable_external_file_cache: 'false' };

export type LakeFormat = 'parquet' | 'iceberg';

export interface OpenOptions {
  /** Record changed partitions as pending for a lake of this format (`--out`); a Parquet lake's manifests too. */
  lake?: LakeFormat;
  /** What a lock error says: the file is costsync's private working copy, published as this file. */
  workingCopyOf?: string;
}

/** Opens (creating if needed) the DuckDB file and applies pending migrations. */
export async function openWarehouse(path: string, options: OpenOptions = {}): Promise<Warehouse> {
  // Read first: a bad value is refused before any file is opened.
  const bounded = boundedSettings();
  const limit = bounded.memory_limit;
  // boundedSettings() checked the limit: a size sizeInBytes reads.
  const limitBytes = sizeInBytes(limit)!;
  let instance: DuckDBInstance;
  let connection: DuckDBConnection;
  try {
    instance = await duckdb.DuckDBInstance.create(path, {
      ...DUCKDB_INSTANCE_OPTIONS,
      // Staging churns (pages in, window replaced, pages out); checkpointing at every 16 MB of WAL
      // rewrote the file over and over. Checkpoint rarely during a run, and once at close.
      checkpoint_threshold: '1GB',
      // Memory flat however large a window is.
      ...bounded,
    });
    connection = await instance.connect();
  } catch (cause) {
    // A full disk is not a bad --db: say what to free.
    const full = diskFullError(cause);
    if (full !== null) throw full;
    const message = (cause as Error).message;
    const locked = /lock/i.test(message);
    throw new CostsyncError(
      locked ? 'CS_ERR_DB_LOCKED' : 'CS_ERR_DB_OPEN',
      `Cannot open the DuckDB file ${path}: ${message.split('\n')[0]}`,
      {
        exitCode: locked ? ExitCode.LOCKED : ExitCode.USAGE,
        hint: locked
          ? options.workingCopyOf === undefined
            ? 'Another program has this file open; close it and run again.'
            : `This is costsync's private working copy of ${options.workingCopyOf}, and another program has it open. Close that program (open ${options.workingCopyOf} instead: it is the published copy, which never blocks a sync) and run again.`
          : 'Check that --db names a DuckDB database (or a new file) in a writable directory.',
        cause,
      },
    );
  }
  const due = encode({ kind: 'publish' });
  const writes = writeQueue(connection, {
    // DuckDB's own errors with costsync's codes and fixes: a full disk, memory at its limit.
    asError: (error) => diskFullError(error) ?? asMemoryError(error, limit),
    // Every transaction records that the published file is now behind (unless `publish: false`).
    publishMark: { text: loadSql('outbox/mark'), params: [due.kind, due.key] },
    afterGroupCommit: async () => {
      const [held] = await sql<{ bytes: number }>(loadSql('storage/in_memory_table_bytes'));
      if (checkpointDue(held?.bytes ?? 0, limitBytes)) await exec('CHECKPOINT');
    },
  });
  const exec = (text: string, params?: DuckDBValue[]) => writes.statement(() => connection.run(text, params));
  const sql = async <T>(text: string, params?: DuckDBValue[]): Promise<T[]> => {
    const reader = await writes.statement(() => connection.runAndReadAll(text, params));
    return reader.getRowObjectsJS().map((r) => toPlain(r as Record<string, unknown>)) as T[];
  };
  // A setting of the ICU extension, which loads only once the instance is open.
  await sql("SET TimeZone = 'UTC'");
  await migrate(sql);
  await refreshViews(sql);
  for (const file of readdirSync(join(SQL_DIR, 'temp'))
    .filter((f) => f.endsWith('.sql'))
    .sort()) {
    await sql(readFileSync(join(SQL_DIR, 'temp', file), 'utf8'));
  }
  const lake = options.lake ?? null;

  return {
    path,
    connection,
    run: async (name, params, names) => (await exec(loadSql(name, names), params)).rowsChanged,
    query: (name, params, names) => sql(loadSql(name, names), params),
    sql,
    lake,
    transaction: writes.transaction,
    transactionMayRepeat: writes.transactionMayRepeat,
    onSettle: writes.onSettle,
    exclusive: writes.exclusive,
    afterQueued: writes.afterQueued,
    changed: async (table, source, dates) => {
      if (dates.length === 0) return;
      // A view over the table (focus over line_items) changes with it.
      const tables = changesWith(table);
      // Recorded with or without a lake: a lake this run does not write catches up from it later.
      await exec(loadSql('lake/change_clear'), [tables.join(','), source, dates.join(',')]);
      await exec(loadSql('lake/change_record'), [tables.join(','), source, dates.join(',')]);
      if (lake === null) return;
      // One statement for the window's partitions (a statement a date was 60 for a month of line items and focus).
      const outbox = {
        run: async (name: string, params?: DuckDBValue[]) => (await exec(loadSql(name), params)).rowsChanged,
        query: <T>(name: string, params?: DuckDBValue[]) => sql<T>(loadSql(name), params),
      };
      await markMany(outbox, [
        ...tables.flatMap((t) => dates.map((date): OutboxItem => ({ kind: 'partition', table: t, source, date }))),
        // An Iceberg lake has no manifests: its commits say what it holds.
        ...(lake === 'parquet' ? [{ kind: 'manifest', source } as const] : []),
      ]);
    },
    append: (table, write) =>
      writes.statement(async () => {
        const appender = await connection.createAppender(table);
        try {
          write(appender);
          appender.flushSync();
        } finally {
          appender.closeSync();
        }
      }),
    close: () => {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

/** The migrations in `sql/schema/`, in order. */
function schemaFiles(): { file: string; version: number }[] {
  return readdirSync(join(SQL_DIR, 'schema'))
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort()
    .map((file) => ({ file, version: Number(file.split('_')[0]) }));
}

/**
 * When `cause` is DuckDB missing a table or column of a warehouse older than this costsync's schema
 * (a read command opens it read-only, so it is not migrated until the next sync): the error saying so,
 * with its fix. Otherwise `cause` as it is.
 */
export async function olderSchemaError(warehouse: ReadOnlyWarehouse, path: string, cause: unknown): Promise<unknown> {
  if (!/^(Binder|Catalog) Error/.test((cause as Error)?.message ?? '')) return cause;
  let applied: number[];
  try {
    applied = (await warehouse.sql<{ version: number }>('SELECT version FROM _costsync_migrations')).map((r) => r.version);
  } catch {
    applied = [];
  }
  const missing = schemaFiles().filter((m) => !applied.includes(m.version));
  if (missing.length === 0) return cause;
  return new CostsyncError(
    'CS_ERR_DB_OLD',
    `${path} was written by an older costsync (its schema lacks ${missing.length} migration(s), ${missing[0]!.file} the first), and this command opens it read-only, so it is not brought up to date: ${(cause as Error).message.split('\n')[0]}`,
    {
      exitCode: ExitCode.USAGE,
      hint: 'Run costsync sync once with this --db (it migrates the warehouse, keeping every row), then this command again.',
      cause,
    },
  );
}

/** Applies `sql/schema/NNN_*.sql` files not yet recorded in `_costsync_migrations`, in order. */
async function migrate(sql: <T>(text: string, params?: DuckDBValue[]) => Promise<T[]>): Promise<void> {
  await sql(`CREATE TABLE IF NOT EXISTS _costsync_migrations (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMPTZ)`);
  const applied = new Set((await sql<{ version: number }>('SELECT version FROM _costsync_migrations')).map((r) => r.version));
  const due = schemaFiles().filter(({ version }) => !applied.has(version));
  if (due.length === 0) return;
  // Every pending migration in one transaction: a new warehouse is made in one commit, not one a
  // migration, and a failed migration leaves the schema as it was.
  await sql('BEGIN TRANSACTION');
  let current = due[0]!.file;
  try {
    for (const { file } of due) {
      current = file;
      await sql(readFileSync(join(SQL_DIR, 'schema', file), 'utf8'));
    }
    await sql('INSERT INTO _costsync_migrations SELECT unnest($1::INTEGER[]), unnest($2::VARCHAR[]), now()', [
      duckdb.listValue(due.map((m) => m.version)),
      duckdb.listValue(due.map((m) => m.file)),
    ]);
    await sql('COMMIT');
  } catch (error) {
    await sql('ROLLBACK');
    throw new CostsyncError('CS_ERR_MIGRATION', `Migration ${current} failed: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Creates the analyst views of `sql/views/*.sql`, in file order (later views build on earlier ones),
 * unless the warehouse holds each of them as this costsync made them: creating them at every open was a
 * fifth of a small run's DuckDB work. `_costsync_views` keeps the digest of their SQL files, and from the
 * first open after they were made, of the views as DuckDB then holds them (DuckDB renders a view's SQL
 * differently once the file is opened again): a view missing, changed by hand or made again by another
 * version of costsync is made again.
 */
async function refreshViews(sql: <T>(text: string, params?: DuckDBValue[]) => Promise<T[]>): Promise<void> {
  const views = viewDefinitions();
  const files = shortHash(views.map((v) => v.text).join('\n;\n'), 64);
  const [held] = await sql<{ present: number; text: string | null }>(
    `SELECT count(*)::INTEGER AS present, string_agg(view_name || chr(10) || sql || chr(10) || coalesce(comment, ''), chr(10) ORDER BY view_name) AS text
     FROM duckdb_views() WHERE NOT internal AND database_name = current_database() AND schema_name = 'main' AND list_contains($1::VARCHAR[], view_name)`,
    [duckdb.listValue(views.map((v) => v.name))],
  );
  const seen = `${files} ${shortHash(held?.text ?? '', 64)}`;
  const stored = (await sql<{ digest: string }>('SELECT digest FROM _costsync_views')).map((r) => r.digest);
  if (stored.length === 1 && stored[0] === seen) return;
  if (stored.length === 1 && stored[0] === files && held?.present === views.length) {
    await sql('UPDATE _costsync_views SET digest = $1', [seen]);
    return;
  }
  await sql('BEGIN TRANSACTION');
  try {
    for (const view of views) {
      try {
        await sql(view.text);
      } catch (error) {
        throw new CostsyncError('CS_ERR_MIGRATION', `View ${view.file} failed: ${(error as Error).message}`, { cause: error });
      }
    }
    await sql('DELETE FROM _costsync_views');
    await sql('INSERT INTO _costsync_views VALUES ($1)', [files]);
    await sql('COMMIT');
  } catch (error) {
    await sql('ROLLBACK');
    throw error;
  }
}

/** Each file of `sql/views/`: the view it creates, and its SQL through loadSql (a view can share a fragment: `{{verify/covered}}`). */
function viewDefinitions(): { file: string; name: string; text: string }[] {
  return readdirSync(join(SQL_DIR, 'views'))
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((file) => {
      const text = loadSql(`views/${file.slice(0, -'.sql'.length)}`);
      const name = /CREATE OR REPLACE VIEW (\w+)/i.exec(text)?.[1];
      if (name === undefined) throw new InternalError(`sql/views/${file} creates no view (CREATE OR REPLACE VIEW name AS …).`);
      return { file, name, text };
    });
}

/** A query's result for people and files: column names and types, values as JSON (numbers as numbers). */
export interface ResultTable {
  columns: { name: string; type: string }[];
  rows: Record<string, unknown>[];
}

const NUMERIC_TEXT = /^(BIGINT|HUGEINT|UBIGINT|UHUGEINT|DECIMAL)/;

/** DuckDB's JSON form writes 64-bit integers and decimals as text (to keep precision); people want numbers. */
function numbersAsNumbers(
  columns: ResultTable['columns'],
  rows: Record<string, unknown>[],
  keep: RegExp | null = null,
): Record<string, unknown>[] {
  const numeric = columns.filter((c) => NUMERIC_TEXT.test(c.type) && !(keep?.test(c.type) ?? false)).map((c) => c.name);
  for (const row of rows) for (const name of numeric) if (typeof row[name] === 'string') row[name] = Number(row[name]);
  return rows;
}

/** A result's columns and its rows, a chunk at a time. */
export interface RowStream {
  columns: ResultTable['columns'];
  batches: AsyncIterable<Record<string, unknown>[]>;
}

export interface ReadOnlyWarehouse {
  sql<T = Record<string, unknown>>(text: string, params?: DuckDBValue[]): Promise<T[]>;
  /** Runs any read-only SQL; dates and times as text, large integers and decimals as numbers. */
  table(text: string, params?: DuckDBValue[]): Promise<ResultTable>;
  /**
   * Each statement of `text`, to run in turn: its result a chunk of rows at a time (decimals as their exact
   * text, other large numbers as numbers), so a large result never sits in memory whole. DuckDB's parser splits the text; nothing runs until a statement's result is asked for.
   */
  statements(text: string): Promise<(() => Promise<RowStream>)[]>;
  query<T = Record<string, unknown>>(name: string, params?: DuckDBValue[], names?: Record<string, string>): Promise<T[]>;
  /** Whether every statement of `text` is a SELECT, by DuckDB's parser alone (nothing bound or run); a syntax error counts as one, to fail when run. */
  onlySelects(text: string): Promise<boolean>;
  /**
   * Each statement of `text` as DuckDB's binder sees it, prepared (never run) in a separate in-memory
   * DuckDB that has this file attached read-only and file access and extension installs switched off,
   * since binding can itself touch files (EXPORT DATABASE makes its directory): its type, or the error.
   */
  statementTypes(text: string): Promise<({ type: StatementType } | { error: string })[]>;
  close(): void;
}

/** Opens the DuckDB file read-only (for status and queries); it must exist. */
export async function openReadOnly(path: string): Promise<ReadOnlyWarehouse> {
  let instance: DuckDBInstance;
  let connection: DuckDBConnection;
  try {
    instance = await duckdb.DuckDBInstance.create(path, { ...DUCKDB_INSTANCE_OPTIONS, access_mode: 'READ_ONLY' });
    connection = await instance.connect();
  } catch (cause) {
    const message = (cause as Error).message.split('\n')[0]!;
    const busy = /lock/i.test(message);
    throw new CostsyncError(busy ? 'CS_ERR_DB_LOCKED' : 'CS_ERR_DB_OPEN', `Cannot open the DuckDB file ${path} to read: ${message}`, {
      exitCode: busy ? ExitCode.LOCKED : ExitCode.USAGE,
      hint: busy
        ? 'A program other than costsync has it open for writing (costsync itself writes only its working copy under --state-dir and publishes over this file, which never blocks a reader); close that program.'
        : 'Check --db: it must name an existing DuckDB file.',
      cause,
    });
  }
  const sql = async <T>(text: string, params?: DuckDBValue[]): Promise<T[]> => {
    const reader = await connection.runAndReadAll(text, params);
    return reader.getRowObjectsJS().map((r) => toPlain(r as Record<string, unknown>)) as T[];
  };
  await sql("SET TimeZone = 'UTC'");
  return {
    sql,
    async table(text, params) {
      const reader = await connection.runAndReadAll(text, params);
      const columns = reader.columnNames().map((name, i) => ({ name, type: reader.columnTypes()[i]!.toString() }));
      return { columns, rows: numbersAsNumbers(columns, reader.getRowObjectsJson()) };
    },
    async statements(text) {
      let extracted;
      try {
        extracted = await connection.extractStatements(text);
      } catch (cause) {
        // DuckDB's extraction fails without a message on text of no statement (";", a comment alone).
        const [row] = await sql<{ json: string }>('SELECT json_serialize_sql($1::VARCHAR) AS json', [text]);
        if ((JSON.parse(row!.json) as { statements?: unknown[] }).statements?.length === 0) return [];
        throw cause;
      }
      return Array.from({ length: extracted.count }, (_, i) => async () => {
        const result = await (await extracted.prepare(i)).stream();
        // A JSON column is VARCHAR with the alias JSON: named by its alias, so a reader can tell it.
        const columns = result.columnNames().map((name, c) => {
          const type = result.columnTypes()[c]!;
          return { name, type: type.alias ?? type.toString() };
        });
        async function* batches() {
          // Decimals stay DuckDB's exact text: the reader prints them as its format wants (query.ts).
          for await (const rows of result.yieldRowObjectJson()) yield numbersAsNumbers(columns, rows, /^DECIMAL/);
        }
        return { columns, batches: batches() };
      });
    },
    query: (name, params, names) => sql(loadSql(name, names), params),
    async onlySelects(text) {
      const [row] = await sql<{ json: string }>('SELECT json_serialize_sql($1::VARCHAR) AS json', [text]);
      const parsed = JSON.parse(row!.json) as { error?: boolean; error_type?: string };
      return parsed.error !== true || parsed.error_type !== 'not implemented';
    },
    async statementTypes(text) {
      const sandbox = await duckdb.DuckDBInstance.create(':memory:', {
        autoinstall_known_extensions: 'false',
        autoload_known_extensions: 'false',
      });
      const box = await sandbox.connect();
      try {
        await box.run(`ATTACH ${sqlString(path)} AS warehouse (READ_ONLY)`);
        await box.run('USE warehouse');
        await box.run('SET enable_external_access = false');
        await box.run('SET lock_configuration = true');
        const extracted = await box.extractStatements(text);
        const types: ({ type: StatementType } | { error: string })[] = [];
        for (let i = 0; i < extracted.count; i++) {
          try {
            types.push({ type: (await extracted.prepare(i)).statementType });
          } catch (error) {
            types.push({ error: (error as Error).message.split('\n')[0]! });
          }
        }
        return types;
      } finally {
        box.closeSync();
        sandbox.closeSync();
      }
    },
    close: () => {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

/** Opens a warehouse, runs `fn`, and always closes it (as @duckdb/node-api's tests do). */
export async function withWarehouse<T>(path: string, fn: (warehouse: Warehouse) => Promise<T>): Promise<T> {
  const warehouse = await openWarehouse(path);
  try {
    return await fn(warehouse);
  } finally {
    warehouse.close();
  }
}
