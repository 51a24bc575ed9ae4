import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { withWarehouse } from '../../src/storage/duckdb.js';
import { writeFileAtomic } from '../../src/durable-file.js';
import { run, tableDigest, withEmulator, withTempDir, SPAN, syncCommand } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const env = { COSTSYNC_API_KEY: 'demo-key' };
const syncArgs = (url: string, dir: string, extra: string[] = []) =>
  syncCommand(url, dir, ['--start-date', '2025-06-25', '--until', SPAN.endDate, '--rate-limit', '100000', '--quiet', ...extra]);

/** A loopback port nothing listens on (one the system just handed out, closed again). */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

describe('bad input: a message naming the problem and the fix, exit code 2 (1 for I/O), nothing stored lost', () => {
  it('refuses bad flags and config values before doing anything', async () => {
    await withTempDir(async (dir) => {
      const cases: [string[], RegExp][] = [
        [['--since', '2025-13-01'], /--since must be a real calendar date as YYYY-MM-DD; got "2025-13-01"/],
        [['--since', '2025-06-10', '--until', '2025-06-01'], /--since \(2025-06-10\) is after the last date 2025-06-01/],
        [['--lookback-days', '-1'], /--lookback-days must be a whole number from 0 to 365; got -1/],
        [['--window-days', '0'], /--window-days must be a whole number from 1 to 3660/],
        // A number option's value as written, not as yargs' NaN.
        [['--window-days', '7d'], /--window-days must be a whole number from 1 to 3660; got "7d"/],
        [['--concurrency=x'], /--concurrency must be a whole number from 1 to 64; got "x"/],
        // Not taken for 0 and 16, as yargs' number parsing would.
        [['--lookback-days', ''], /--lookback-days must be a whole number from 0 to 365; got ""/],
        [['--anomaly-refresh-days', '0x10'], /--anomaly-refresh-days must be a whole number from 0 to 3660; got "0x10"/],
        [['--rate-limit', '-5'], /--rate-limit must be a whole number/],
        // A number flag with no value is refused, not run at its default (60 a minute).
        [['--rate-limit'], /--rate-limit must be a whole number from 1 to 1000000; got ""/],
        // A value that starts with a dash reaches the option's check, not yargs' "Unknown arguments: 5, m".
        [['--max-runtime', '-5m'], /--max-runtime must be a duration such as 90s, 30m or 2h \(more than 0\); got "-5m"/],
        [
          ['--streams', 'line_items,costs'],
          /--streams names unknown stream\(s\): costs.*\n.*hint: Use a comma list of line_items,rollups,anomalies/,
        ],
        [['--max-runtime', 'soon'], /--max-runtime must be a duration such as 90s, 30m or 2h/],
        [
          ['--format', 'csv'],
          /--format csv is not one of its values: use duckdb, parquet or iceberg\.\n.*hint: Run costsync sync --help for its options/,
        ],
        // --out alone would write no lake and say nothing: --format duckdb is the default.
        [
          ['--out', join(dir, 'lake2')],
          /--out \(.*lake2\) names a lake, but --format is duckdb \(the default\), which writes none\.\n.*hint: Add --format parquet or --format iceberg/,
        ],
        [
          ['--api-key', 'sk-1234'],
          /--api-key is not an option: a key on the command line is visible[\s\S]*hint: Set COSTSYNC_API_KEY[\s\S]*--api-key-file/,
        ],
      ];
      for (const [flags, message] of cases) {
        const result = await run(syncCommand('http://127.0.0.1:9', dir, flags), env);
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

  it('a --db whose directory does not exist (a typo): sync, its dry run and push refused with exit 2 naming it, nothing created', async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'nonexistent', 'c.duckdb');
      const state = ['--db', db, '--state-dir', join(dir, 'state')];
      for (const args of [
        ['sync', '--base-url', 'http://127.0.0.1:9', ...state],
        ['sync', '--base-url', 'http://127.0.0.1:9', '--dry-run', ...state],
        ['push', '--base-url', 'http://127.0.0.1:9', '--connection', 'demo-connection', ...state, join(dir, 'costs.csv')],
      ]) {
        const result = await run(args, env);
        expect(result.code, args.join(' ')).toBe(ExitCode.USAGE);
        expect(result.stderr, args.join(' ')).toContain(`--db ${db}: its directory ${join(dir, 'nonexistent')} does not exist.`);
        expect(result.stderr, args.join(' ')).toContain(
          `hint: Create the directory first (mkdir -p ${join(dir, 'nonexistent')}), or fix the path in --db`,
        );
      }
      expect(readdirSync(dir)).toEqual([]);
    });
  });

  it('a --state-dir that is a file, and a --db that is a directory: exit 2 naming the flag and the fix (sync, status); a state directory that cannot be created: exit 1', async () => {
    await withTempDir(async (dir) => {
      writeFileSync(join(dir, 'state'), 'a file where the directory should be');
      for (const args of [
        syncCommand('http://127.0.0.1:9', dir),
        ['status', '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state')],
      ]) {
        const result = await run(args, env);
        expect(result.code, args[0]).toBe(ExitCode.USAGE);
        expect(result.stderr, args[0]).toContain(`--state-dir ${join(dir, 'state')} is a file, not a directory.`);
        expect(result.stderr, args[0]).toMatch(/hint: Name a directory \(costsync creates it if it is missing\), or move the file aside/);
      }
      const directory = await run(syncCommand('http://127.0.0.1:9', join(dir, 'ok'), ['--db', dir]), env);
      expect(directory.code).toBe(ExitCode.USAGE);
      expect(directory.stderr).toContain(`--db ${dir} is a directory; it names the warehouse file.`);
      expect(directory.stderr).toContain(`hint: Name a file in it, such as --db ${join(dir, 'costs.duckdb')}`);
      // Under a file, the directory cannot be made: an I/O failure, named with the fix.
      const under = await run(syncCommand('http://127.0.0.1:9', dir, ['--state-dir', join(dir, 'state', 'sub')]), env);
      expect(under.code).toBe(ExitCode.FAILED);
      expect(under.stderr).toMatch(/Cannot create the state directory .*sub: ENOTDIR/);
      expect(under.stderr).toMatch(/hint: Check that --state-dir points at a writable place/);
      expect(readFileSync(join(dir, 'state'), 'utf8')).toBe('a file where the directory should be');
    });
  });

  it('an --out that is a directory or empty (report, query) and a push of a directory: exit 2 naming it, no file left behind', async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'c.duckdb');
      await withWarehouse(db, async () => undefined);
      const folder = join(dir, 'out.csv');
      mkdirSync(folder);
      const cases: [string[], RegExp][] = [
        [
          ['report', '--db', db, '--out', folder],
          /--out .*out\.csv is a directory; it names the file to write\.\n.*hint: Name a file in it, such as --out .*out\.csv\/costsync-report\.html/,
        ],
        [['report', '--db', db, '--out', ''], /--out needs a file name\.\n.*hint: For example --out costsync-report\.html/],
        [['query', '--db', db, 'SELECT 1', '--out', folder], /--out .*out\.csv is a directory; it names the file to write/],
        [['push', '--dry-run', folder], /out\.csv is a directory, not a file\./],
        // The examples are flags as typed, with a value the flag takes.
        [
          ['query', '--db', db, '--format', 'xml', 'SELECT 1'],
          /--format must be one of table, csv, json; got "xml"\.\n.*hint: For example --format table\./,
        ],
        [
          ['push', '--dry-run', '--batch-size', '0', join(dir, 'c.csv')],
          /--batch-size must be a whole number from 1 to 100000; got 0[\s\S]*For example --batch-size 500\./,
        ],
        // A choice with no value is refused as empty, not as "true".
        [['status', '--db', db, '--format'], /--format "" is not one of its values: use table or json\./],
      ];
      for (const [args, message] of cases) {
        const result = await run(args, env);
        expect(result.code, args.join(' ')).toBe(ExitCode.USAGE);
        expect(result.stderr, args.join(' ')).toMatch(message);
      }
      expect(readdirSync(dir).sort()).toEqual(['c.duckdb', 'out.csv']);
      expect(readdirSync(folder)).toEqual([]);
      // Should a write fail at its rename all the same, its temporary file goes with it.
      await expect(writeFileAtomic(folder, 'x')).rejects.toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
      expect(readdirSync(dir).sort()).toEqual(['c.duckdb', 'out.csv']);
    });
  });

  it("verify's --from after its --to is refused (exit 2), not a check of no dates that says all is equal", async () => {
    await withTempDir(async (dir) => {
      const result = await run(['verify', '--db', join(dir, 'c.duckdb'), '--from', '2025-06-20', '--to', '2025-06-10']);
      expect(result.code).toBe(ExitCode.USAGE);
      expect(result.stderr).toContain('--from (2025-06-20) is after the last date 2025-06-10.');
      expect(result.stderr).toContain('hint: Pass a --from on or before --to, for example --from 2025-06-10 --to 2025-06-20.');
    });
  });
});

describe('sync --dry-run that cannot ask the API: the exit code, error and hint of the run it plans', () => {
  it('a wrong key exits 3, an unreachable URL 2, several sources the worst of them with the others planned; nothing written, no "run without --dry-run"', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const closed = `http://127.0.0.1:${await closedPort()}`;
        const wrongKey = await run(syncArgs(url, dir, ['--dry-run']), { COSTSYNC_API_KEY: 'wrong-key' });
        expect(wrongKey.code).toBe(ExitCode.AUTH);
        expect(wrongKey.stderr).toMatch(/UNAUTHORIZED \(401\)[^\n]*\n {2}hint: Check the key in COSTSYNC_API_KEY/);
        const unreachable = await run(syncArgs(closed, dir, ['--dry-run']), env);
        expect(unreachable.code).toBe(ExitCode.USAGE);
        expect(unreachable.stderr).toContain(`Cannot reach the API at ${closed}: nothing accepts connections`);
        expect(unreachable.stderr).toMatch(/\n {2}hint: Check --base-url/);
        for (const result of [wrongKey, unreachable]) {
          expect(result.stdout).not.toMatch(/without --dry-run/);
          expect(result.stdout).toBe(
            'Dry run: nothing was written. It could not be planned; the run would fail the same way: fix what the error names, then try the dry run again.\n',
          );
        }
        const json = await run(syncArgs(url, dir, ['--dry-run', '--log-format', 'json']), { COSTSYNC_API_KEY: 'wrong-key' });
        expect(json.code).toBe(ExitCode.AUTH);
        expect(JSON.parse(json.stdout)).toMatchObject({
          dryRun: true,
          sources: [],
          failed: [{ source: 'default', code: 'CS_ERR_UNAUTHORIZED', exitCode: 3, hint: expect.stringMatching(/COSTSYNC_API_KEY/) }],
        });
        expect(readdirSync(dir)).toEqual([]);

        // Several sources: each planned on its own, the exit code the worst (3 over 2), as for a run.
        const config = join(dir, 'costsync.config.json');
        writeFileSync(
          config,
          JSON.stringify({
            db: join(dir, 'c.duckdb'),
            'state-dir': join(dir, 'state'),
            sources: [
              { name: 'good', 'base-url': url, 'api-key-env': 'GOOD_KEY' },
              { name: 'eu', 'base-url': url, 'api-key-env': 'WRONG_KEY' },
              { name: 'gone', 'base-url': closed, 'api-key-env': 'GOOD_KEY' },
            ],
          }),
        );
        const keys = { GOOD_KEY: 'demo-key', WRONG_KEY: 'wrong-key' };
        const several = ['sync', '--config', config, '--start-date', '2025-06-25', '--until', SPAN.endDate, '--rate-limit', '100000'];
        const dry = await run([...several, '--dry-run'], keys);
        expect(dry.code).toBe(ExitCode.AUTH);
        // The phases around the sources first (nothing left undone, in an empty directory), then the planned source.
        expect(dry.stdout).toMatch(
          /^First, what an earlier run left undone: nothing\.\nSource good:\n {2}line_items: 2025-06-25\.\.2025-06-30/,
        );
        expect(dry.stdout).not.toMatch(/Source (eu|gone):/);
        expect(dry.stdout).toMatch(/\nDry run: nothing was written\. Not planned: eu, gone; their runs would fail the same way/);
        expect(dry.stdout).not.toMatch(/without --dry-run/);
        expect(dry.stderr).toMatch(/eu: [^\n]*UNAUTHORIZED \(401\)/);
        expect(dry.stderr).toMatch(/gone: Cannot reach the API/);
        expect(readdirSync(dir)).toEqual(['costsync.config.json']);

        // The real runs exit with the same codes.
        expect((await run(syncArgs(url, dir), { COSTSYNC_API_KEY: 'wrong-key' })).code).toBe(wrongKey.code);
        expect((await run(syncArgs(closed, dir), env)).code).toBe(unreachable.code);
        expect((await run(several, keys)).code).toBe(dry.code);
        expect(existsSync(join(dir, 'c.duckdb'))).toBe(true);
      });
    });
  });
});
