import { StatementType } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { refusedStatement, refusedUnbound } from '../../src/query.js';

describe("costsync query's rules for the user's SQL", () => {
  it('runs SELECT and EXPLAIN only', () => {
    expect(refusedStatement(StatementType.SELECT)).toBeNull();
    expect(refusedStatement(StatementType.EXPLAIN)).toBeNull();
  });

  it('refuses writes to the warehouse as read-only, and files, extensions, databases and settings each with its rule', () => {
    for (const type of [StatementType.INSERT, StatementType.DELETE, StatementType.CREATE, StatementType.DROP, StatementType.MERGE_INTO])
      expect(refusedStatement(type)?.code).toBe('CS_ERR_QUERY_READ_ONLY');
    // Each names its own statement; only CREATE mentions secrets (CREATE SECRET is a CREATE).
    expect(refusedStatement(StatementType.DELETE)?.rule).toBe('DELETE changes the warehouse');
    expect(refusedStatement(StatementType.CREATE)?.rule).toBe("CREATE changes the warehouse, or DuckDB's secrets");
    const rules: [StatementType, RegExp][] = [
      [StatementType.COPY, /^COPY writes/],
      [StatementType.EXPORT, /^EXPORT DATABASE writes files/],
      [StatementType.LOAD, /^INSTALL and LOAD add code/],
      [StatementType.UPDATE_EXTENSIONS, /^UPDATE EXTENSIONS/],
      [StatementType.ATTACH, /^ATTACH opens another database/],
      [StatementType.DETACH, /^DETACH/],
      [StatementType.SET, /^SET, RESET and USE change settings/],
      [StatementType.PRAGMA, /^PRAGMA changes settings/],
      [StatementType.CALL, /^CALL runs procedures/],
      [StatementType.VACUUM, /^VACUUM and ANALYZE rewrite/],
      [StatementType.TRANSACTION, /a TRANSACTION statement is not a query/],
    ];
    for (const [type, rule] of rules) {
      const refused = refusedStatement(type);
      expect(refused?.code, StatementType[type]).toBe('CS_ERR_QUERY_REFUSED');
      expect(refused?.rule, StatementType[type]).toMatch(rule);
    }
  });

  it('refuses a statement that could be prepared only by touching a file, naming the file', () => {
    expect(
      refusedUnbound('Permission Error: Cannot access file "/tmp/x.csv" - file system operations are disabled by configuration').rule,
    ).toBe(
      'a statement other than SELECT reads or writes a file or directory (Permission Error: Cannot access file "/tmp/x.csv"); export a result with --out FILE, read a file with read_parquet, read_csv or read_json',
    );
    expect(refusedUnbound('Permission Error: Cannot access directory "/root/.duckdb/stored_secrets"').rule).toMatch(
      /^CREATE SECRET stores a secret in a file/,
    );
    expect(refusedUnbound('Catalog Error: Table with name "d.t" does not exist').rule).toMatch(
      /^only SELECT and EXPLAIN run, and DuckDB cannot tell/,
    );
  });
});
