import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { run, tableDigest, withEmulator, withTempDir, SPAN, syncCommand } from '../helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const env = { COSTSYNC_API_KEY: 'demo-key' };
const syncArgs = (url: string, dir: string, extra: string[] = []) =>
  syncCommand(url, dir, ['--start-date', '2025-06-25', '--until', SPAN.endDate, '--rate-limit', '100000', '--quiet', ...extra]);

describe('bad input: a message naming the problem and the fix, exit code 2 (1 for I/O), nothing stored lost', () => {
  it('refuses bad flags and config values before doing anything', async () => {
    await withTempDir(async (dir) => {
      const cases: [string[], RegExp][] = [
        [['--since', '2025-13-01'], /--since must be a real calendar date as YYYY-MM-DD; got "2025-13-01"/],
        [['--since', '2025-06-10', '--until', '2025-06-01'], /--since \(2025-06-10\) is after the last date 2025-06-01/],
        [['--lookback-days', '-1'], /--lookback-days must be a whole number from 0 to 365; got -1/],
        [['--window-days', '0'], /--window-days must be a whole number from 1 to 3660/],
        [['--rate-limit', '-5'], /--rate-limit must be a whole number/],
        [
          ['--streams', 'line_items,costs'],
          /--streams names unknown stream\(s\): costs.*\n.*hint: Use a comma list of line_items,rollups,anomalies/,
        ],
        [['--max-runtime', 'soon'], /--max-runtime must be a duration such as 90s, 30m or 2h/],
        [['--format', 'csv'], /Invalid values:[\s\S]*format[\s\S]*"duckdb", "parquet"/],
        [
          ['--api-key', 'sk-1234'],
          /--api-key is not an option: a key on the command line is visible[\s\S]*hint: Set COSTSYNC_API_KEY[\s\S]*--api-key-file/,
        ],
      ];
      for (const [flags, message] of cases) {
        const result = await run(
          ['sync', '--base-url', 'http://127.0.0.1:9', '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state'), ...flags],
          env,
        );
        expect(result.code, flags.join(' ')).toBe(ExitCode.USAGE);
        expect(result.stderr, flags.join(' ')).toMatch(message);
      }
      // Nothing was created by a refused run.
      expect(readdirSync(dir)).toEqual([]);
      writeFileSync(join(dir, 'costsync.config.json'), JSON.stringify({ 'lookback-days': 'three' }));
      const fromFile = await run(['sync', '--config', join(dir, 'costsync.config.json'), '--base-url', 'http://127.0.0.1:9'], env);
      expect(fromFile.code).toBe(ExitCode.USAGE);
      expect(fromFile.stderr).toMatch(/"lookback-days" in the config file must be a whole number/);
    });
  });

  it("refuses DuckDB's tuning variables when they are not usable, before anything is created", async () => {
    await withTempDir(async (dir) => {
      const cases: [Record<string, string>, RegExp][] = [
        [
          { COSTSYNC_DUCKDB_MEMORY_LIMIT: '32MB' },
          /COSTSYNC_DUCKDB_MEMORY_LIMIT=32MB is below 64MB, the least costsync runs DuckDB with[\s\S]*hint: Set it to 64MB or more/,
        ],
        [{ COSTSYNC_DUCKDB_MEMORY_LIMIT: 'big' }, /COSTSYNC_DUCKDB_MEMORY_LIMIT=big is not a size[\s\S]*hint: Give a number and a unit/],
        [{ COSTSYNC_DUCKDB_THREADS: 'all' }, /COSTSYNC_DUCKDB_THREADS=all is not a whole number from 1 to 64/],
      ];
      for (const [tuning, message] of cases) {
        const result = await run(syncArgs('http://127.0.0.1:9', dir), { ...env, ...tuning });
        expect(result.code, JSON.stringify(tuning)).toBe(ExitCode.USAGE);
        expect(result.stderr, JSON.stringify(tuning)).toMatch(message);
      }
      expect(readdirSync(dir)).toEqual([]);
    });
  });

  it('a corrupt, older or foreign state file: exit 2 with the fix, tables and state file untouched', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect((await run(syncArgs(url, dir), env)).code).toBe(ExitCode.OK);
        const before = await tableDigest(join(dir, 'c.duckdb'));
        const stateFile = join(
          dir,
          'state',
          readdirSync(join(dir, 'state')).find((f) => f.startsWith('costsync-state-'))!,
        );
        const good = JSON.parse(readFileSync(stateFile, 'utf8'));
        for (const [text, message] of [
          ['{"version": 1, "streams": {', /is not valid JSON[\s\S]*Move it aside \(mv [\s\S]*no --full-refresh needed/],
          [JSON.stringify({ ...good, version: 0 }), /state version 0, older than any/],
          [
            JSON.stringify({ ...good, source: { ...good.source, name: 'acme-eu' } }),
            /belongs to another source \("acme-eu", not "default"\)/,
          ],
        ] as const) {
          writeFileSync(stateFile, text);
          const result = await run(syncArgs(url, dir), env);
          expect(result.code).toBe(ExitCode.USAGE);
          expect(result.stderr).toMatch(message);
          expect(readFileSync(stateFile, 'utf8')).toBe(text);
        }
        expect(await tableDigest(join(dir, 'c.duckdb'))).toEqual(before);
      });
    });
  });

  it('a file that is not a DuckDB database: exit 2, the file untouched', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const text = 'name,amount\nnot,a database\n';
        writeFileSync(join(dir, 'c.duckdb'), text);
        const result = await run(syncArgs(url, dir), env);
        expect(result.code).toBe(ExitCode.USAGE);
        expect(result.stderr).toMatch(/Cannot open the DuckDB file .*c\.duckdb: .*not a valid DuckDB database file/);
        expect(result.stderr).toMatch(/hint: Check that --db names a DuckDB database/);
        expect(readFileSync(join(dir, 'c.duckdb'), 'utf8')).toBe(text);
      });
    });
  });

  it("a program holding costsync's working copy open: exit 5 naming the file and the fix; the next run after it closes works", async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect((await run(syncArgs(url, dir), env)).code).toBe(ExitCode.OK);
        const before = await tableDigest(join(dir, 'c.duckdb'));
        // Another program (a notebook, the DuckDB CLI) that opened the working copy instead of --db.
        const work = workingCopyPath(join(dir, 'state'), join(dir, 'c.duckdb'));
        const holder = spawn(
          process.execPath,
          [
            '--input-type=module',
            '-e',
            `
          import { DuckDBInstance } from '@duckdb/node-api';
          const db = await DuckDBInstance.create(${JSON.stringify(work)});
          await db.connect();
          console.log('open');
          process.stdin.resume();
          process.stdin.on('end', () => process.exit(0));
        `,
          ],
          { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] },
        );
        await once(createInterface({ input: holder.stdout }), 'line');
        const result = await run(syncArgs(url, dir), env);
        holder.stdin.end();
        await once(holder, 'exit');
        expect(result.code).toBe(ExitCode.LOCKED);
        expect(result.code).toBe(ExitCode.LOCKED);
        expect(result.stderr).toContain(`Cannot open the DuckDB file ${work}`);
        expect(result.stderr).toMatch(
          /hint: This is costsync's private working copy of .*c\.duckdb, and another program has it open\. Close that program \(open .*c\.duckdb instead/,
        );
        expect(await tableDigest(join(dir, 'c.duckdb'))).toEqual(before);
        expect((await run(syncArgs(url, dir), env)).code).toBe(ExitCode.OK);
      });
    });
  });

  it('a state directory that cannot be created: exit 1 naming it and the fix', async () => {
    await withTempDir(async (dir) => {
      writeFileSync(join(dir, 'state'), 'a file where the directory should be');
      const result = await run(
        ['sync', '--base-url', 'http://127.0.0.1:9', '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state')],
        env,
      );
      expect(result.code).toBe(ExitCode.FAILED);
      expect(result.stderr).toMatch(/Cannot create .*state or the database directory: EEXIST/);
      expect(result.stderr).toMatch(/hint: Check that --state-dir and --db point at writable places/);
    });
  });
});
