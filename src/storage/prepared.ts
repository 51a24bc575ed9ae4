/**
 * Statements with parameters, prepared once per connection and bound again at each run: a sync runs
 * the same few dozen statements hundreds of times, and DuckDB parsed and planned each one anew (about a
 * third of a small statement's CPU, docs/benchmarks.md). A text of several statements runs as text.
 */
import type {
  DuckDBConnection,
  DuckDBMaterializedResult,
  DuckDBPreparedStatement,
  DuckDBResultReader,
  DuckDBValue,
} from '@duckdb/node-api';

export interface PreparedStatements {
  /** Runs `text`; with parameters, through its prepared statement. */
  run(text: string, params?: DuckDBValue[]): Promise<DuckDBMaterializedResult>;
  /** Runs `text` and reads all its rows; with parameters, through its prepared statement. */
  read(text: string, params?: DuckDBValue[]): Promise<DuckDBResultReader>;
  /** Destroys the prepared statements (before the connection closes). */
  close(): void;
}

/**
 * A statement is planned against the database in use, and DuckDB plans it again when a table it reads
 * changes, but not when another database comes into use: these forget every prepared statement.
 */
const CHANGES_DATABASE = /^\s*(USE|ATTACH|DETACH)\b/i;

export function preparedStatements(connection: DuckDBConnection): PreparedStatements {
  /** null: the text holds several statements. */
  const cache = new Map<string, DuckDBPreparedStatement | null>();
  const forget = () => {
    for (const statement of cache.values()) statement?.destroySync();
    cache.clear();
  };
  const prepared = async (text: string): Promise<DuckDBPreparedStatement | null> => {
    const known = cache.get(text);
    if (known !== undefined) return known;
    const extracted = await connection.extractStatements(text);
    const statement = extracted.count === 1 ? await extracted.prepare(0) : null;
    cache.set(text, statement);
    return statement;
  };
  return {
    async run(text, params) {
      if (CHANGES_DATABASE.test(text)) forget();
      const statement = params === undefined ? null : await prepared(text);
      if (statement === null) return connection.run(text, params);
      statement.bind(params!);
      return statement.run();
    },
    async read(text, params) {
      if (CHANGES_DATABASE.test(text)) forget();
      const statement = params === undefined ? null : await prepared(text);
      if (statement === null) return connection.runAndReadAll(text, params);
      statement.bind(params!);
      return statement.runAndReadAll();
    },
    close: forget,
  };
}
