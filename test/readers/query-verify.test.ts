import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { withWarehouse } from '../../src/storage/duckdb.js';
import { cli, inDirectory, withEmulator, withTempDir, SPAN, run, syncCommand, spanFlags } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

/** A CLI-synced warehouse of the emulator's June 2025. */
async function withDb<T>(fn: (db: string) => Promise<T>): Promise<T> {
  return withEmulator({ ...SPAN, rowsPerDay: 40, clock }, async ({ url }) =>
    withTempDir(async (dir) => {
      const db = join(dir, 'c.duckdb');
      const sync = await run(syncCommand(url, dir, [...spanFlags(), '--quiet']), { COSTSYNC_API_KEY: 'demo-key' });
      expect(sync.code, sync.stderr).toBe(ExitCode.OK);
      return fn(db);
    }),
  );
}

describe('costsync query', () => {
  it('lists tables and views with columns and comments, and prints results as a table, CSV or JSON', async () => {
    await withDb(async (db) => {
      const list = await run(['query', '--db', db, '--list', '--format', 'json']);
      expect(list.code).toBe(ExitCode.OK);
      const objects = JSON.parse(list.stdout) as { name: string; kind: string; columns: string; about: string | null }[];
      for (const view of [
        'daily_spend_by_provider',
        'daily_spend_by_service',
        'daily_spend_by_category',
        'monthly_spend',
        'month_to_date',
        'top_movers',
        'spend_by_project',
        'spend_by_user',
        'open_anomalies',
        'anomaly_resolution_times',
      ]) {
        const found = objects.find((o) => o.name === view);
        expect(found, view).toMatchObject({ kind: 'view' });
        expect(found!.about, view).toMatch(/\w+ \w+/);
      }
      expect(objects.find((o) => o.name === 'line_items')!.columns).toMatch(/^id VARCHAR, usage_date DATE/);

      const table = await run([
        'query',
        '--db',
        db,
        'SELECT provider, round(sum(cost_usd), 2) AS usd, count(*) AS days FROM daily_spend_by_provider GROUP BY 1 ORDER BY 1',
      ]);
      expect(table.stdout.split('\n')[0]).toMatch(/^provider\s+usd\s+days$/);
      const json = JSON.parse(
        (await run(['query', '--db', db, '--format', 'json', "SELECT count(*) AS n, DATE '2025-06-01' AS d, 1.50::DECIMAL(6,2) AS m"]))
          .stdout,
      );
      expect(json).toEqual([{ n: 1, d: '2025-06-01', m: 1.5 }]);
      const csv = await run(['query', '--db', db, '--format', 'csv', `SELECT 'a, "b"' AS text, NULL AS nothing, 2 AS two`]);
      expect(csv.stdout).toBe('text,nothing,two\n"a, ""b""",,2\n');
      // Large results stream as CSV or JSON; a table stops at 1000 rows and says so.
      const many = 'SELECT range AS n, range * 2 AS twice FROM range(25000)';
      const allCsv = await run(['query', '--db', db, '--format', 'csv', many]);
      expect(allCsv.stdout.trimEnd().split('\n')).toHaveLength(25001);
      expect(allCsv.stdout.trimEnd().split('\n').at(-1)).toBe('24999,49998');
      expect(JSON.parse((await run(['query', '--db', db, '--format', 'json', many])).stdout)).toHaveLength(25000);
      const tableMany = await run(['query', '--db', db, many]);
      expect(tableMany.stdout.trimEnd().split('\n')).toHaveLength(1003);
      expect(tableMany.stdout).toMatch(/\(the first 1000 rows; --format csv or json prints them all\)/);
      expect(JSON.parse((await run(['query', '--db', db, '--format', 'json', 'SELECT 1 AS x WHERE false'])).stdout)).toEqual([]);
    });
  });

  it('only reads: a write is refused with exit code 2, and a bad query names the fix', async () => {
    await withDb(async (db) => {
      const write = await run(['query', '--db', db, 'DELETE FROM line_items']);
      expect(write.code).toBe(ExitCode.USAGE);
      expect(write.stderr).toMatch(/costsync query only reads/);
      const bad = await run(['query', '--db', db, 'SELECT nope FROM line_items']);
      expect(bad.code).toBe(ExitCode.USAGE);
      expect(bad.stderr).toMatch(/The query failed: .*nope[\s\S]*--list/);
      const count = JSON.parse((await run(['query', '--db', db, '--format', 'json', 'SELECT count(*) AS n FROM line_items'])).stdout);
      expect(count).toEqual([{ n: 40 * 30 }]);
    });
  });
});

describe('costsync query errors', () => {
  it("keep DuckDB's suggestions and why an extension cannot load; --list is named only for an unknown table or column", async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'c.duckdb');
      await withWarehouse(db, async () => undefined);
      const query = async (sql: string) => {
        const result = await run(['query', '--db', db, sql]);
        expect(result.code, sql).toBe(ExitCode.USAGE);
        return result.stderr;
      };
      const table = await query('SELECT * FROM line_item');
      expect(table).toMatch(/Table with name line_item does not exist!\nDid you mean "line_items"\?/);
      expect(table).toMatch(/hint: costsync query --list/);
      const column = await query('SELECT providr FROM line_items');
      expect(column).toMatch(/Referenced column "providr" not found in FROM clause!\nCandidate bindings: .*"provider_type"/);
      expect(column).toMatch(/hint: costsync query --list/);
      const fn = await query("SELECT lenght('costsync')");
      expect(fn).toMatch(/Scalar Function with name lenght does not exist!\nDid you mean "length"\?/);
      expect(fn).not.toMatch(/--list/);
      const typo = await query('SELEC 1');
      expect(typo).toMatch(/Parser Error: syntax error at or near "SELEC"/);
      expect(typo).toMatch(/hint: DuckDB could not read the SQL where the caret points/);

      // An extension that is not built in: costsync query installs none, so it says how to install one.
      const extension = await query(`SELECT * FROM read_xlsx('${join(dir, 'costs.xlsx')}')`);
      expect(extension).toMatch(/Extension "excel" is an existing extension\.\nInstall it first/);
      expect(extension).toMatch(
        /hint: costsync's DuckDB has the json, parquet and icu extensions built in, and costsync query installs no other \(such as excel\): install it once with DuckDB itself/,
      );
      expect(extension).not.toMatch(/--list/);
    });
  });
});

describe('costsync query with several statements, or none', () => {
  it('prints each result of several in turn as tables, refuses them for CSV and JSON, and names text of no statement', async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'c.duckdb');
      await withWarehouse(db, async () => undefined);
      const two = await run(['query', '--db', db, "SELECT 1 AS first; SELECT 'x' AS second, 2 AS third"]);
      expect(two.code).toBe(ExitCode.OK);
      expect(two.stdout).toBe('first\n-----\n    1\n\nsecond  third\n------  -----\nx           2\n');
      for (const format of ['csv', 'json']) {
        const refused = await run(['query', '--db', db, '--format', format, 'SELECT 1; SELECT 2']);
        expect(refused.code, format).toBe(ExitCode.USAGE);
        expect(refused.stderr).toMatch(
          new RegExp(`--format ${format} writes the result of one statement, and the SQL holds 2\\.\n.*hint: .*--format table`),
        );
        expect(refused.stdout).toBe('');
      }
      // SQL opening with a `--` comment is SQL, not an option; so are the words after a `--`.
      const commented = await run(['query', '--db', db, '-- the first\nSELECT 1 AS first', '--format', 'csv']);
      expect(commented).toMatchObject({ code: ExitCode.OK, stdout: 'first\n1\n' });
      const separated = await run(['query', '--db', db, '--format', 'csv', '--', 'SELECT 2 AS second']);
      expect(separated).toMatchObject({ code: ExitCode.OK, stdout: 'second\n2\n' });
      // A JSON column (line items' extra) nests in JSON output, not as a quoted string.
      const nested = await run(['query', '--db', db, '--format', 'json', `SELECT '{"a": [1, 2]}'::JSON AS extra, NULL::JSON AS none`]);
      expect(JSON.parse(nested.stdout)).toEqual([{ extra: { a: [1, 2] }, none: null }]);
      const twice = await run(['query', '--db', db, 'SELECT 1', '--', 'SELECT 2']);
      expect(twice.code).toBe(ExitCode.USAGE);
      expect(twice.stderr).toMatch(/costsync query takes one SQL text, and got two: SELECT 1 and, after --, SELECT 2\./);
      const none = await run(['status', '--db', db, '--', 'x']);
      expect(none.code).toBe(ExitCode.USAGE);
      expect(none.stderr).toMatch(/costsync status takes no words, and x came after --\./);
      for (const empty of [';', ' ; ;', '/* nothing */']) {
        const none = await run(['query', '--db', db, empty]);
        expect(none.code, empty).toBe(ExitCode.USAGE);
        expect(none.stderr).toMatch(/No SQL to run: the text holds no statement/);
      }
    });
  });
});

describe('costsync query writes no file, installs, loads and attaches nothing', () => {
  it('refuses each such form with exit 2 naming the rule, touching no file; reads files, and --out writes', async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'c.duckdb');
      await withWarehouse(db, (wh) =>
        wh.sql("INSERT INTO rollups_daily (date, group_by, provider_type, cost_usd) VALUES ('2025-06-01', 'provider', 'aws', 10)"),
      );
      const at = (name: string) => join(dir, name);
      const refused: [string, RegExp][] = [
        [`COPY (SELECT 1) TO '${at('copy.csv')}'`, /a statement other than SELECT reads or writes a file or directory .*copy\.csv/],
        [`COPY rollups_daily TO '${at('table.csv')}'`, /a statement other than SELECT reads or writes a file or directory .*table\.csv/],
        [`SELECT 1; COPY (SELECT 1) TO '${at('second.csv')}'`, /reads or writes a file or directory .*second\.csv/],
        [`EXPORT DATABASE '${at('export')}'`, /reads or writes a file or directory .*export/],
        ['INSTALL httpfs', /INSTALL and LOAD add code to DuckDB/],
        ['LOAD httpfs', /INSTALL and LOAD add code to DuckDB/],
        [`ATTACH '${at('other.duckdb')}' AS other`, /ATTACH opens another database/],
        [
          "CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's')",
          /CREATE SECRET stores a secret in a file|CREATE changes the warehouse, or DuckDB's secrets/,
        ],
        [`SET extension_directory = '${at('ext')}'`, /SET, RESET and USE change settings/],
        [`SET temp_directory = '${at('tmp')}'`, /SET, RESET and USE change settings/],
        ['PRAGMA enable_profiling', /PRAGMA changes settings/],
        ['CALL pragma_version()', /CALL runs procedures/],
        ['DELETE FROM rollups_daily', /DELETE changes the warehouse/],
        // An EXPLAIN of a write: costsync's rule, not DuckDB's read-only error.
        [
          'EXPLAIN DELETE FROM rollups_daily',
          /EXPLAIN of a statement that changes the warehouse \(INSERT, UPDATE, DELETE, CREATE, …\) is refused as that statement is\.\n {2}hint: costsync query runs SELECT/,
        ],
        ['explain analyze update rollups_daily set cost_usd = 0', /EXPLAIN of a statement that changes the warehouse/],
      ];
      for (const [sql, rule] of refused) {
        const result = await run(['query', '--db', db, sql]);
        expect(result.code, sql).toBe(ExitCode.USAGE);
        expect(result.stderr, sql).toMatch(/costsync query only reads: /);
        expect(result.stderr, sql).toMatch(rule);
      }
      expect(readdirSync(dir).sort()).toEqual(['c.duckdb']);

      // Reading a file stays allowed (the README's tour reads the lake with read_parquet).
      writeFileSync(at('costs.csv'), 'service,usd\nS3,1.5\n');
      const read = await run(['query', '--db', db, '--format', 'json', `SELECT * FROM read_csv('${at('costs.csv')}')`]);
      expect(read.code, read.stderr).toBe(ExitCode.OK);
      expect(JSON.parse(read.stdout)).toEqual([{ service: 'S3', usd: 1.5 }]);
      // --out is costsync's own write: it works, and what it wraps must be one SELECT.
      const out = await run(['query', '--db', db, 'SELECT cost_usd FROM rollups_daily', '--out', at('out.csv')]);
      expect(out.code, out.stderr).toBe(ExitCode.OK);
      // Money is exported as the warehouse holds it: the exact decimal, at its scale.
      expect(readFileSync(at('out.csv'), 'utf8')).toBe('cost_usd\n10.0000000000\n');
      const smuggled = await run([
        'query',
        '--db',
        db,
        `SELECT 1) TO '${at('smuggled.csv')}' (FORMAT csv); SELECT (1`,
        '--out',
        at('o.csv'),
      ]);
      expect(smuggled.code).toBe(ExitCode.USAGE);
      const two = await run(['query', '--db', db, 'SELECT 1; SELECT 2', '--out', at('o.csv')]);
      expect(two.code).toBe(ExitCode.USAGE);
      expect(two.stderr).toMatch(/--out writes the result of one SELECT, and the SQL holds 2 statements\.\n.*hint: Export each statement/);
      expect(two.stderr).not.toMatch(/only reads/);
      expect(existsSync(at('smuggled.csv')) || existsSync(at('o.csv'))).toBe(false);
    });
  });
});

describe('query and verify without a warehouse', () => {
  it('name the file they looked for and how to make one, and exit 2, creating nothing', async () => {
    await withTempDir(async (dir) =>
      inDirectory(dir, async () => {
        for (const [args, db] of [
          [['query', 'SELECT 1'], 'costs.duckdb'],
          [['query', '--list'], 'costs.duckdb'],
          [['verify'], 'costs.duckdb'],
          [['verify', '--db', 'nested/w.duckdb'], 'nested/w.duckdb'],
        ] as const) {
          const result = await run([...args]);
          expect(result.code, args.join(' ')).toBe(ExitCode.USAGE);
          expect(result.stderr, args.join(' ')).toContain(`There is no warehouse at ${join(process.cwd(), db)}: no such file`);
          expect(result.stderr, args.join(' ')).toMatch(
            /hint: Run costsync sync with the same --db to make one, or pass --db .*\(for the demo's, --db demo\.duckdb/,
          );
        }
        expect(readdirSync(dir)).toEqual([]);
      }),
    );
  });
});

describe('costsync verify', () => {
  it('reports nothing on consistent data, and names the dates and providers of differences made on purpose', async () => {
    await withDb(async (db) => {
      const clean = await cli(['verify', '--db', db]);
      expect(clean.code, clean.stdout).toBe(ExitCode.OK);
      expect(clean.stdout).toMatch(
        /No differences above \$0.01 \(30 date\(s\) of line items against rollups, 30 date\(s\) of rollup totals\)/,
      );

      await withWarehouse(db, async (wh) => {
        // Five dollars more on one line item of 2025-06-10, a cent less than a cent on 2025-06-12, and a service rollup row lost on 2025-06-20.
        await wh.sql(
          `UPDATE line_items SET net_amount_usd = net_amount_usd + 5 WHERE id = (SELECT min(id) FROM line_items WHERE usage_date = '2025-06-10' AND provider_type = 'aws')`,
        );
        await wh.sql(
          `UPDATE line_items SET net_amount_usd = net_amount_usd + 0.009 WHERE id = (SELECT min(id) FROM line_items WHERE usage_date = '2025-06-12')`,
        );
        await wh.sql(
          `DELETE FROM rollups_daily WHERE rowid = (SELECT min(rowid) FROM rollups_daily WHERE date = '2025-06-20' AND group_by = 'service')`,
        );
      });
      const dirty = await run(['verify', '--db', db, '--format', 'json']);
      expect(dirty.code).toBe(ExitCode.FAILED);
      const report = JSON.parse(dirty.stdout) as {
        differences: { check: string; date: string; provider: string | null; difference_usd: number }[];
      };
      expect(report.differences.map((d) => [d.check, d.date, d.provider])).toEqual([
        ['line items vs provider rollup', '2025-06-10', 'aws'],
        ['provider vs service rollup totals', '2025-06-20', null],
      ]);
      expect(report.differences[0]!.difference_usd).toBe(5);
      const table = await run(['verify', '--db', db]);
      expect(table.stdout).toMatch(/2025-06-10\s+aws/);
      expect(table.stdout).toMatch(/2 difference\(s\) above \$0.01/);
      // A date range leaves out what is outside it; a looser tolerance forgives the five dollars.
      expect((await run(['verify', '--db', db, '--from', '2025-06-11', '--to', '2025-06-19'])).code).toBe(ExitCode.OK);
      expect((await run(['verify', '--db', db, '--to', '2025-06-15', '--tolerance', '6'])).code).toBe(ExitCode.OK);
      expect((await run(['verify', '--db', db, '--tolerance', '-1'])).code).toBe(ExitCode.USAGE);
    });
  });

  it('a synced date whose line items are gone, and a date with rollups in one grouping and none in another, are differences', async () => {
    await withDb(async (db) => {
      await withWarehouse(db, async (wh) => {
        await wh.sql(`DELETE FROM line_items WHERE usage_date = '2025-06-14'`);
        await wh.sql(`DELETE FROM rollups_daily WHERE date = '2025-06-16' AND group_by = 'service'`);
      });
      const dirty = await run(['verify', '--db', db, '--format', 'json']);
      expect(dirty.code).toBe(ExitCode.FAILED);
      const report = JSON.parse(dirty.stdout) as { differences: { check: string; date: string; left_usd: number; right_usd: number }[] };
      const checks = [...new Set(report.differences.map((d) => `${d.date} ${d.check}`))];
      expect(checks).toEqual(['2025-06-14 line items vs provider rollup', '2025-06-16 provider vs service rollup totals']);
      for (const d of report.differences) {
        if (d.date === '2025-06-14') expect(d.left_usd).toBe(0);
        else expect(d.right_usd).toBe(0);
        expect(Math.abs(d.left_usd - d.right_usd)).toBeGreaterThan(0.01);
      }
      // The line items' date is still counted as compared: 30 synced dates.
      expect((await run(['verify', '--db', db])).stdout).toMatch(
        /30 date\(s\) of line items against rollups, 30 date\(s\) of rollup totals/,
      );
    });
  });
});

describe('costsync verify over dates it holds none of', () => {
  it('refuses a date after today, and a range with no synced date is not "no differences" (exit 2, naming what the warehouse holds)', async () => {
    await withDb(async (db) => {
      const future = await run(['verify', '--db', db, '--from', '2099-01-01']);
      expect(future.code).toBe(ExitCode.USAGE);
      expect(future.stderr).toContain('--from (2099-01-01) is after today');
      expect((await run(['verify', '--db', db, '--to', '2099-01-01'])).code).toBe(ExitCode.USAGE);
      for (const format of ['table', 'json']) {
        const before = await run(['verify', '--db', db, '--from', '2025-01-01', '--to', '2025-01-31', '--format', format]);
        expect(before.code, before.stderr).toBe(ExitCode.USAGE);
        expect(before.stdout).toBe('');
        expect(before.stderr).toContain(
          'verify compared nothing: no date in 2025-01-01..2025-01-31 is synced (the warehouse holds default: 2025-06-01..2025-06-30)',
        );
        expect(before.stderr).toContain('costsync sync --since 2025-01-01 --until 2025-01-31');
      }
      // A range that takes in one synced date compares it.
      expect((await run(['verify', '--db', db, '--from', '2025-05-01', '--to', '2025-06-01'])).code).toBe(ExitCode.OK);
    });
  });
});

describe('costsync verify --api', () => {
  it('a range inside a hole of what the warehouse holds compared nothing: exit 2, no request; one around it compares the synced dates and names the hole', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async (emulator) =>
      withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
        const rate = ['--rate-limit', '100000', '--quiet'];
        // Synced 06-20..06-30, then 06-01..06-10: 06-11..06-19 never.
        expect(
          (await run(syncCommand(emulator.url, dir, ['--start-date', '2025-06-20', '--until', '2025-06-30', ...rate]), env)).code,
        ).toBe(0);
        expect((await run(syncCommand(emulator.url, dir, ['--since', '2025-06-01', '--until', '2025-06-10', ...rate]), env)).code).toBe(0);
        const db = join(dir, 'c.duckdb');
        const verify = (more: string[]) => run(['verify', '--api', '--base-url', emulator.url, '--db', db, ...more], env);
        const asked = emulator.requestLog.count({});
        const inside = await verify(['--from', '2025-06-12', '--to', '2025-06-18']);
        expect(inside.code, inside.stdout).toBe(ExitCode.USAGE);
        expect(inside.stderr).toContain(
          'verify --api compared nothing: no date in 2025-06-12..2025-06-18 is synced (the warehouse holds default: 2025-06-01..2025-06-10, 2025-06-20..2025-06-30)',
        );
        expect(emulator.requestLog.count({})).toBe(asked);
        const around = await verify(['--from', '2025-06-08', '--to', '2025-06-22', '--format', 'json']);
        expect(around.code, around.stderr).toBe(ExitCode.OK);
        expect(JSON.parse(around.stdout)).toMatchObject({
          differences: [],
          notSynced: [{ source: 'default', dates: '2025-06-11..2025-06-19' }],
        });
        // Without --base-url: the API the warehouse's state records (in --state-dir, ./state by default), said so.
        const recorded = await run(['verify', '--api', '--db', db, '--state-dir', join(dir, 'state'), '--from', '2025-06-20'], env);
        expect(recorded.code, recorded.stderr).toBe(ExitCode.OK);
        expect(recorded.stderr).toContain(
          `verify --api: asking the API this warehouse's state records, ${emulator.url} (pass --base-url to ask another)`,
        );
        expect(recorded.stdout).toMatch(/^The warehouse equals the API's rollups/);
        // With no state of this warehouse to ask, it says where it looked and what to pass.
        const none = await run(['verify', '--api', '--db', db, '--from', '2025-06-20'], {
          ...env,
          COSTSYNC_STATE_DIR: join(dir, 'elsewhere'),
        });
        expect(none.code).toBe(ExitCode.USAGE);
        expect(none.stderr).toContain(`${join(dir, 'elsewhere')} holds no state file of ${db} that records one`);
        expect(none.stderr).toMatch(/hint: Pass --base-url https:\/\/…, or --state-dir/);
      }),
    );
  });

  it('equal to the API after a sync (3 requests); a restatement, a deleted day and a changed rollup are differences with the command that syncs them again, which mends them', async () => {
    await withEmulator(
      { ...SPAN, rowsPerDay: 20, clock, restatement: { days: 4, changeRate: 0.5, deleteRate: 0.1, addRate: 0.1 } },
      async (emulator) =>
        withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
          const sync = (more: string[] = []) => run(syncCommand(emulator.url, dir, [...spanFlags(), '--quiet', ...more]), env);
          expect((await sync()).code).toBe(ExitCode.OK);
          const db = join(dir, 'c.duckdb');
          const verify = (more: string[] = []) => run(['verify', '--api', '--base-url', emulator.url, '--db', db, ...more], env);
          const clean = await verify(['--format', 'json']);
          expect(clean.code, clean.stderr).toBe(ExitCode.OK);
          expect(JSON.parse(clean.stdout)).toMatchObject({
            sources: [{ source: 'default', from: SPAN.startDate, to: SPAN.endDate, requests: 3 }],
            differences: [],
          });
          // Dates the warehouse holds none of, or after today: nothing is asked of the API, and nothing is said to agree.
          const asked = emulator.requestLog.count({});
          const none = await verify(['--from', '2025-01-01', '--to', '2025-01-31']);
          expect(none.code).toBe(ExitCode.USAGE);
          expect(none.stderr).toContain('verify --api compared nothing: no date in 2025-01-01..2025-01-31 is synced');
          expect((await verify(['--from', '2099-01-01'])).code).toBe(ExitCode.USAGE);
          expect(emulator.requestLog.count({})).toBe(asked);

          emulator.restate();
          await withWarehouse(db, async (wh) => {
            await wh.sql(`DELETE FROM line_items WHERE usage_date = '2025-06-03'`);
            await wh.sql(`UPDATE rollups_daily SET cost_usd = cost_usd + 2 WHERE date = '2025-06-05' AND group_by = 'category'`);
          });
          const dirty = await verify(['--format', 'json']);
          expect(dirty.code).toBe(ExitCode.FAILED);
          const report = JSON.parse(dirty.stdout) as { differences: { date: string; check: string }[]; fixes: string[] };
          const dates = [...new Set(report.differences.map((d) => d.date))];
          expect(dates).toContain('2025-06-03');
          expect(dates).toContain('2025-06-05');
          // The restated days (the last four) differ too, where the restatement moved a total by more than a cent.
          expect(dates.every((d) => d === '2025-06-03' || d === '2025-06-05' || d >= '2025-06-27')).toBe(true);
          expect(report.differences.filter((d) => d.date === '2025-06-05').map((d) => d.check)).toEqual(
            expect.arrayContaining(['category']),
          );
          // With the flags that named the warehouse and the API: as printed, it does not fail for want of a base URL.
          expect(report.fixes).toEqual([`costsync sync --db ${db} --base-url ${emulator.url} --since 2025-06-03 --until ${dates.at(-1)}`]);
          const text = await verify();
          expect(text.stdout).toContain(`To sync them again:\n  costsync sync --db ${db} --base-url ${emulator.url} --since 2025-06-03`);
          // The command it names mends every difference.
          expect((await sync(['--since', '2025-06-03'])).code).toBe(ExitCode.OK);
          const mended = await verify();
          expect(mended.code, mended.stdout).toBe(ExitCode.OK);
          expect(mended.stdout).toMatch(
            /^The warehouse equals the API's rollups, within \$0\.01 \(default: 2025-06-01\.\.2025-06-30, 3 request\(s\)\)\.\n$/,
          );
          // It writes nothing, and refuses a wrong key as sync does (exit 3).
          expect((await run(['verify', '--api', '--base-url', emulator.url, '--db', db], { COSTSYNC_API_KEY: 'wrong' })).code).toBe(
            ExitCode.AUTH,
          );
          expect((await run(['verify', '--api', '--focus', '--base-url', emulator.url, '--db', db], env)).code).toBe(ExitCode.USAGE);
        }),
    );
  });
});

describe('coverage with gaps', () => {
  it('a range synced, then an earlier one: status shows both and the gap, never one min..max; verify --api compares only what was synced', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async (emulator) =>
      withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
        const sync = (...more: string[]) => run(syncCommand(emulator.url, dir, ['--rate-limit', '100000', '--quiet', ...more]), env);
        expect((await sync('--start-date', '2025-06-20', '--until', '2025-06-25')).code).toBe(ExitCode.OK);
        expect((await sync('--since', '2025-06-02', '--until', '2025-06-05')).code).toBe(ExitCode.OK);
        const status = await run(['status', '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state'), '--format', 'json'], env);
        const streams = (
          JSON.parse(status.stdout) as { sources: { streams: { stream: string; watermark: string; gaps: string | null }[] }[] }
        ).sources[0]!.streams;
        for (const stream of ['line_items', 'rollups'])
          expect(streams.find((s) => s.stream === stream)).toMatchObject({
            watermark: '2025-06-02..2025-06-05, 2025-06-20..2025-06-25',
            gaps: '2025-06-06..2025-06-19',
          });
        const text = await run(['status', '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state')], env);
        expect(text.stdout).toContain('2025-06-02..2025-06-05, 2025-06-20..2025-06-25');
        expect(text.stdout).not.toContain('2025-06-02..2025-06-25');
        const verify = await run(['verify', '--api', '--base-url', emulator.url, '--db', join(dir, 'c.duckdb'), '--format', 'json'], env);
        expect(verify.code, verify.stdout).toBe(ExitCode.OK);
        expect(JSON.parse(verify.stdout)).toMatchObject({
          sources: [{ from: '2025-06-02', to: '2025-06-25', requests: 3 }],
          differences: [],
        });
        // The dates between the two syncs were compared with nothing, and both verifies say so.
        expect(JSON.parse(verify.stdout).notSynced).toEqual([{ source: 'default', dates: '2025-06-06..2025-06-19' }]);
        const local = await run(['verify', '--db', join(dir, 'c.duckdb'), '--from', '2025-06-01', '--to', '2025-06-25'], env);
        expect(local.stdout).toContain('; not compared, as never synced: default 2025-06-01..2025-06-01, 2025-06-06..2025-06-19).');
      }),
    );
  });
});
