import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { preparedStatements } from '../../src/storage/prepared.js';

async function withConnection(fn: (connection: DuckDBConnection) => Promise<void>): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await fn(connection);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

describe('statements prepared once per connection', () => {
  it('prepares a statement with parameters once and binds it at each run; one without runs as text', async () => {
    await withConnection(async (connection) => {
      let prepares = 0;
      const extract = connection.extractStatements.bind(connection);
      connection.extractStatements = async (text) => {
        prepares += 1;
        return extract(text);
      };
      const statements = preparedStatements(connection);
      await statements.run('CREATE TABLE t (n INTEGER)');
      for (const n of [1, 2, 3]) await statements.run('INSERT INTO t VALUES ($1)', [n]);
      const read = await statements.read('SELECT sum(n)::INTEGER AS s FROM t WHERE n >= $1', [2]);
      expect(read.getRowObjectsJS()).toEqual([{ s: 5 }]);
      expect((await statements.read('SELECT sum(n)::INTEGER AS s FROM t WHERE n >= $1', [1])).getRowObjectsJS()).toEqual([{ s: 6 }]);
      expect(prepares).toBe(2);
      statements.close();
    });
  });

  it('runs each statement against the database in use: USE, ATTACH and DETACH forget what was prepared', async () => {
    await withConnection(async (connection) => {
      const statements = preparedStatements(connection);
      await statements.run('CREATE TABLE t (n INTEGER)');
      await statements.run("ATTACH ':memory:' AS other");
      await statements.run('CREATE TABLE other.t (n INTEGER)');
      await statements.run('INSERT INTO t VALUES ($1)', [1]);
      await statements.run('USE other');
      await statements.run('INSERT INTO t VALUES ($1)', [2]);
      await statements.run('USE memory');
      const rows = async (table: string) =>
        (await statements.read(`SELECT list(n ORDER BY n) AS n FROM ${table} WHERE n > $1`, [0])).getRowObjectsJS();
      expect(await rows('memory.t')).toEqual([{ n: [1] }]);
      expect(await rows('other.t')).toEqual([{ n: [2] }]);
      statements.close();
    });
  });

  it('runs a text of several statements as text, parameters and all', async () => {
    await withConnection(async (connection) => {
      const statements = preparedStatements(connection);
      await statements.run('CREATE TABLE t (n INTEGER)');
      await statements.run('INSERT INTO t VALUES (1); INSERT INTO t VALUES ($1)', [2]);
      expect((await statements.read('SELECT count(*)::INTEGER AS c FROM t')).getRowObjectsJS()).toEqual([{ c: 2 }]);
      statements.close();
    });
  });
});
