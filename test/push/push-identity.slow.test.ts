// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: A push's row identity: the push model (random exports, spellings, formats, ingest modes), push.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import type { EmulatorInput } from '../../src/emulator/server.js';
import { ExitCode } from '../../src/errors.js';
import { pushArgs, pushSummary, run, withEmulator, withTempDir, SPAN } from '../support/helpers.js';

const env = { COSTSYNC_API_KEY: 'demo-key' };
const CONNECTION = 'demo-connection';

const push = (url: string, dir: string, extra: string[]) => pushArgs(url, dir, ['--connection', CONNECTION, ...extra]);
const summaryOf = pushSummary;

/** What the emulator holds of the connection: service, date and amount per stored row, sorted. */
function held(emulator: {
  dataset: { ingestedRecords(): { provider_service: string; usage_date: string; net_amount_usd: number; user_email: string }[] };
}) {
  return emulator.dataset
    .ingestedRecords()
    .map((r) => `${r.usage_date} ${r.provider_service} ${r.net_amount_usd}`)
    .sort();
}

async function sql(text: string): Promise<Record<string, unknown>[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    return (await conn.runAndReadAll(text)).getRowObjectsJS();
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

const ROWS = [
  ['2026-11-20', 'Build farm', 'Usage', '12.5'],
  ['2026-11-20', 'Artifact store', 'Usage', '3'],
  ['2026-11-21', 'Build farm', 'Usage', '7.25'],
];
const csv = (rows: string[][]) => ['ChargePeriodStart,ServiceName,ChargeCategory,BilledCost', ...rows.map((r) => r.join(','))].join('\n');

async function withPush<T>(
  input: EmulatorInput,
  fn: (ctx: { url: string; dir: string; emulator: Parameters<typeof held>[0] }) => Promise<T>,
) {
  return withEmulator({ ...SPAN, rowsPerDay: 1, ...input }, (emulator) => withTempDir((dir) => fn({ url: emulator.url, dir, emulator })));
}

describe('push: row identity and an honest end (emulator over HTTP)', () => {
  it('pushes the same rows once, whatever the column order, header case, format or number formatting', async () => {
    await withPush({}, async ({ url, dir, emulator }) => {
      const first = join(dir, 'costs.csv');
      writeFileSync(first, csv(ROWS));
      const reordered = join(dir, 'reordered.csv');
      writeFileSync(
        reordered,
        [
          'billedcost,SERVICENAME,chargecategory,ChargePeriodStart',
          '12.50,Build farm,usage,2026-11-20T00:00:00Z',
          '3.0,Artifact store,Usage,2026-11-20',
          '7.250,Build farm,Usage,2026-11-21',
        ].join('\n'),
      );
      const jsonl = join(dir, 'costs.jsonl');
      writeFileSync(
        jsonl,
        ROWS.map(([d, s, c, b]) => JSON.stringify({ BilledCost: Number(b), ChargeCategory: c, ServiceName: s, ChargePeriodStart: d })).join(
          '\n',
        ),
      );
      const parquet = join(dir, 'costs.parquet');
      await sql(
        `COPY (SELECT ServiceName, CAST(BilledCost AS DOUBLE) AS BilledCost, CAST(ChargePeriodStart AS DATE) AS ChargePeriodStart, ChargeCategory FROM read_csv('${first}', all_varchar = true)) TO '${parquet}' (FORMAT parquet)`,
      );

      const pushed = await run(push(url, dir, [first]), env);
      expect(pushed.code, pushed.stderr).toBe(ExitCode.OK);
      expect(summaryOf(pushed.stderr)).toMatchObject({ delivered: 3, alreadyDelivered: 0 });
      expect(pushed.stderr).toContain('every row read is delivered (3 stored by the server now; 0 delivered before and not sent)');
      for (const file of [first, reordered, jsonl, parquet]) {
        const again = await run(push(url, dir, [file]), env);
        expect(again.code, again.stderr).toBe(ExitCode.OK);
        expect(summaryOf(again.stderr), file).toMatchObject({ sent: 0, alreadyDelivered: 3 });
      }
      expect(held(emulator)).toEqual(['2026-11-20 Artifact store 3', '2026-11-20 Build farm 12.5', '2026-11-21 Build farm 7.25']);
    });
  });

  it('a corrected row is a correction: applied where the server replaces, named with exit 1 where it keeps the first', async () => {
    for (const duplicates of ['replace', 'skip'] as const) {
      await withPush({ ingestDuplicateRows: duplicates }, async ({ url, dir, emulator }) => {
        const file = join(dir, 'costs.csv');
        writeFileSync(file, csv(ROWS));
        expect((await run(push(url, dir, [file]), env)).code).toBe(ExitCode.OK);
        // The month re-exported with one charge corrected and one removed.
        writeFileSync(file, csv([ROWS[0]!, ['2026-11-21', 'Build farm', 'Usage', '9']]));
        const corrected = await run(push(url, dir, [file]), env);
        const undelivered = join(dir, 'costs.undelivered.csv');
        if (duplicates === 'replace') {
          expect(corrected.code, corrected.stderr).toBe(ExitCode.OK);
          expect(summaryOf(corrected.stderr)).toMatchObject({ delivered: 1, corrected: 1, alreadyDelivered: 1, notApplied: 0 });
          expect(held(emulator)).toEqual(['2026-11-20 Artifact store 3', '2026-11-20 Build farm 12.5', '2026-11-21 Build farm 9']);
          expect(existsSync(undelivered)).toBe(false);
        } else {
          expect(corrected.code, corrected.stderr).toBe(ExitCode.FAILED);
          expect(summaryOf(corrected.stderr)).toMatchObject({ delivered: 0, notApplied: 1, alreadyDelivered: 1, outcome: 'undelivered' });
          expect(corrected.stderr).toContain('Not done: 1 of 2 row(s) read were not delivered (1 correction(s) the server did not apply)');
          expect(held(emulator)).toEqual(['2026-11-20 Artifact store 3', '2026-11-20 Build farm 12.5', '2026-11-21 Build farm 7.25']);
          const rows = await sql(`SELECT * FROM read_csv('${undelivered}', all_varchar = true)`);
          expect(rows).toEqual([
            {
              ChargePeriodStart: '2026-11-21',
              ServiceName: 'Build farm',
              ChargeCategory: 'Usage',
              BilledCost: '9',
              costsync_row: '2',
              costsync_reason: 'a correction the server did not apply: it keeps the values it stored first for this id',
            },
          ]);
          const allowed = await run(push(url, dir, ['--allow-undelivered', file]), env);
          expect(allowed.code, allowed.stderr).toBe(ExitCode.OK);
          expect(allowed.stderr).toContain('Done, with rows not delivered as --allow-undelivered allows');
          // The recipe: the difference as an Adjustment under a new id, then the correction settled once.
          const adjustment = join(dir, 'adjustment.csv');
          writeFileSync(adjustment, csv([['2026-11-21', 'Build farm', 'Adjustment', '1.75']]));
          expect((await run(push(url, dir, [adjustment]), env)).code).toBe(ExitCode.OK);
          const settled = await run(push(url, dir, ['--settle-corrections', file]), env);
          expect(settled.code, settled.stderr).toBe(ExitCode.OK);
          expect(summaryOf(settled.stderr)).toMatchObject({ settled: 1, notApplied: 0 });
          // Each night's export after: nothing sent, exit 0; a new change to the row is a new correction.
          const nightly = await run(push(url, dir, [file]), env);
          expect(nightly.code, nightly.stderr).toBe(ExitCode.OK);
          expect(summaryOf(nightly.stderr)).toMatchObject({ sent: 0, settled: 1, alreadyDelivered: 1 });
          writeFileSync(file, csv([ROWS[0]!, ['2026-11-21', 'Build farm', 'Usage', '9.5']]));
          expect((await run(push(url, dir, [file]), env)).code).toBe(ExitCode.FAILED);
          expect(held(emulator)).toEqual([
            '2026-11-20 Artifact store 3',
            '2026-11-20 Build farm 12.5',
            '2026-11-21 Build farm 1.75',
            '2026-11-21 Build farm 7.25',
          ]);
        }
      });
    }
  });

  it('rows the server refuses or skips without a word, in either error shape and either handling of invalid rows, end with exit 1 and a file naming them', async () => {
    for (const [invalidRows, rowErrorShape] of [
      ['skip', 'object'],
      ['skip', 'string'],
      ['reject-batch', 'object'],
    ] as const) {
      const verdict = (row: Record<string, unknown>) =>
        row.ServiceName === 'Artifact store' ? { refuse: 'unknown service' } : row.BilledCost === 7.25 ? ('skip' as const) : null;
      await withPush(
        { ingestInvalidRows: invalidRows, ingestRowErrorShape: rowErrorShape, ingestVerdict: verdict },
        async ({ url, dir }) => {
          const file = join(dir, 'costs.jsonl');
          writeFileSync(
            file,
            ROWS.map(([d, s, c, b]) =>
              JSON.stringify({ ChargePeriodStart: d, ServiceName: s, ChargeCategory: c, BilledCost: Number(b) }),
            ).join('\n'),
          );
          const pushed = await run(push(url, dir, ['--undelivered-dir', dir, file]), env);
          const label = `${invalidRows}/${rowErrorShape}`;
          expect(pushed.code, `${label}\n${pushed.stderr}`).toBe(ExitCode.FAILED);
          const lines = readFileSync(join(dir, 'costs.undelivered.jsonl'), 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as Record<string, unknown>);
          if (invalidRows === 'reject-batch') {
            expect(summaryOf(pushed.stderr), label).toMatchObject({ delivered: 0, refused: 3 });
            expect(lines.map((l) => l.costsync_row)).toEqual([1, 2, 3]);
            expect(lines[1]!.costsync_reason).toBe('refused by the server: unknown service');
            expect(String(lines[0]!.costsync_reason)).toMatch(/^the server did not accept the request \(batch .+\) that carried it$/);
          } else {
            expect(summaryOf(pushed.stderr), label).toMatchObject({ delivered: 0, refused: 1, unconfirmed: 2 });
            expect(lines.map((l) => [l.ServiceName, l.costsync_row, l.costsync_reason])).toEqual([
              ['Build farm', 1, 'the server skipped 1 of these 2 rows without naming them'],
              ['Artifact store', 2, 'refused by the server: unknown service'],
              ['Build farm', 3, 'the server skipped 1 of these 2 rows without naming them'],
            ]);
          }
        },
      );
    }
  });

  it('rows failing the local checks are listed in the file too; --skip-invalid accepts them, and a push that delivers every row removes the file', async () => {
    await withPush({}, async ({ url, dir }) => {
      const file = join(dir, 'costs.csv');
      writeFileSync(file, csv([ROWS[0]!, ['2026-11-20', 'Build farm', 'Usage', 'twelve'], ROWS[2]!]));
      const undelivered = join(dir, 'costs.undelivered.csv');
      const refused = await run(push(url, dir, [file]), env);
      expect(refused.code).toBe(ExitCode.FAILED);
      expect(refused.stderr).toContain(`They are in ${undelivered}, with the reason per row.`);
      const skipped = await run(push(url, dir, ['--skip-invalid', file]), env);
      expect(skipped.code, skipped.stderr).toBe(ExitCode.OK);
      expect(skipped.stderr).toContain(
        'Done, with rows not delivered as --skip-invalid allows: 1 of 3 row(s) read were not delivered (1 failed the checks)',
      );
      expect(await sql(`SELECT costsync_row, costsync_reason FROM read_csv('${undelivered}', all_varchar = true)`)).toEqual([
        { costsync_row: '2', costsync_reason: 'failed the checks: BilledCost: not a finite number: twelve' },
      ]);
      // The list, fixed and pushed, delivers its row and goes; so does the fixed original's push after it.
      writeFileSync(undelivered, readFileSync(undelivered, 'utf8').replace('twelve', '12.5'));
      const listFixed = await run(push(url, dir, [undelivered]), env);
      expect(listFixed.code, listFixed.stderr).toBe(ExitCode.OK);
      expect(summaryOf(listFixed.stderr)).toMatchObject({ delivered: 0, alreadyDelivered: 1 });
      expect(existsSync(undelivered)).toBe(false);
      writeFileSync(file, csv(ROWS));
      const fixed = await run(push(url, dir, [file]), env);
      expect(fixed.code, fixed.stderr).toBe(ExitCode.OK);
      expect(summaryOf(fixed.stderr)).toMatchObject({ delivered: 1, alreadyDelivered: 2 });
    });
  });

  it('rows that share a key are as many charges, told apart by their values in any order or format; a re-tag or a changed amount corrects one of them', async () => {
    await withPush({ ingestDuplicateRows: 'replace' }, async ({ url, dir, emulator }) => {
      const header = 'ChargePeriodStart,ServiceName,ChargeCategory,BilledCost,SubAccountId,Tags';
      const rows = [
        ['2026-11-20', 'Build farm', 'Usage', '5', 'acct-1', '"{""user_email"": ""red@x"", ""team"": ""red""}"'],
        ['2026-11-20', 'Build farm', 'Usage', '6', 'acct-1', '"{""user_email"": ""blue@x""}"'],
        // The same charge twice (two hourly lines of one amount) is two charges.
        ['2026-11-20', 'Build farm', 'Usage', '2', 'acct-1', ''],
        ['2026-11-20', 'Build farm', 'Usage', '2', 'acct-1', ''],
      ];
      const file = join(dir, 'teams.csv');
      writeFileSync(file, [header, ...rows.map((r) => r.join(','))].join('\n'));
      const first = await run(push(url, dir, [file]), env);
      expect(first.code, first.stderr).toBe(ExitCode.OK);
      expect(first.stderr).toContain(
        '4 valid row(s) share their key (the default key columns (--key-columns default)) with other rows of their file',
      );
      expect(summaryOf(first.stderr)).toMatchObject({ invalid: 0, sharedKey: 4, delivered: 4 });
      expect(held(emulator)).toEqual([
        '2026-11-20 Build farm 2',
        '2026-11-20 Build farm 2',
        '2026-11-20 Build farm 5',
        '2026-11-20 Build farm 6',
      ]);

      // The same rows in reverse order, as JSON Lines with the tags' members in another order: nothing new.
      const jsonl = join(dir, 'teams.jsonl');
      const objects = [...rows].reverse().map(([d, sv, c, b, a, t]) => ({
        SubAccountId: a,
        BilledCost: Number(b),
        ChargePeriodStart: `${d}T00:00:00Z`,
        ServiceName: sv,
        ChargeCategory: c!.toUpperCase(),
        ...(t === ''
          ? {}
          : { Tags: Object.fromEntries(Object.entries(JSON.parse(t!.slice(1, -1).replaceAll('""', '"')) as object).reverse()) }),
      }));
      writeFileSync(jsonl, objects.map((o) => JSON.stringify(o)).join('\n'));
      const again = await run(push(url, dir, [jsonl]), env);
      expect(again.code, again.stderr).toBe(ExitCode.OK);
      expect(summaryOf(again.stderr)).toMatchObject({ sent: 0, alreadyDelivered: 4 });

      // A re-tag of one row is a correction of that row only; a third identical row is one new charge.
      const retagged = [...rows, rows[3]!];
      retagged[1] = [...rows[1]!.slice(0, 5), '"{""user_email"": ""green@x""}"'];
      writeFileSync(file, [header, ...retagged.map((r) => r.join(','))].join('\n'));
      const third = await run(push(url, dir, [file]), env);
      expect(third.code, third.stderr).toBe(ExitCode.OK);
      expect(summaryOf(third.stderr)).toMatchObject({ sent: 2, corrected: 1, delivered: 2, alreadyDelivered: 3 });
      expect(held(emulator)).toEqual([
        '2026-11-20 Build farm 2',
        '2026-11-20 Build farm 2',
        '2026-11-20 Build farm 2',
        '2026-11-20 Build farm 5',
        '2026-11-20 Build farm 6',
      ]);
      expect(
        emulator.dataset
          .ingestedRecords()
          .map((r) => r.user_email)
          .sort(),
      ).toEqual(['', '', '', 'green@x', 'red@x']);

      // A changed amount within the group corrects that row; the group's total follows the export.
      retagged[0] = [...retagged[0]!.slice(0, 3), '5.5', ...retagged[0]!.slice(4)];
      writeFileSync(file, [header, ...retagged.map((r) => r.join(','))].join('\n'));
      const fourth = await run(push(url, dir, [file]), env);
      expect(summaryOf(fourth.stderr)).toMatchObject({ sent: 1, corrected: 1, alreadyDelivered: 4 });
      expect(held(emulator).join()).toContain('2026-11-20 Build farm 5.5');
      expect(emulator.dataset.ingestedRecords().reduce((sum, r) => sum + r.net_amount_usd, 0)).toBeCloseTo(17.5, 9);
    });
  });

  it('a row sharing its own id with another is refused naming both lines; changing the key rows were delivered under needs --rekey', async () => {
    await withPush({}, async ({ url, dir, emulator }) => {
      const ids = join(dir, 'ids.csv');
      writeFileSync(
        ids,
        [
          'ChargePeriodStart,ServiceName,ChargeCategory,BilledCost,x_service_line_item_id',
          '2026-11-20,Build farm,Usage,5,li-1',
          '2026-11-20,Build farm,Usage,6,li-1',
        ].join('\n'),
      );
      const refused = await run(push(url, dir, [ids]), env);
      expect(refused.code).toBe(ExitCode.FAILED);
      expect(refused.stderr).toContain(
        `${ids}:2: the same x_service_line_item_id as line 3: the server keeps one row per id, so neither is sent`,
      );
      const file = join(dir, 'teams.csv');
      writeFileSync(
        file,
        [
          'ChargePeriodStart,ServiceName,ChargeCategory,BilledCost,SubAccountId,x_team',
          '2026-11-20,Build farm,Usage,5,acct-1,red',
          '2026-11-20,Build farm,Usage,6,acct-1,blue',
        ].join('\n'),
      );
      // Every file named is read; a flag given twice, the last wins.
      const more = join(dir, 'more.csv');
      writeFileSync(more, 'ChargePeriodStart,ServiceName,ChargeCategory,BilledCost\n2026-11-22,Build farm,Usage,1');
      const both = await run(push(url, dir, ['--dry-run', file, more, '--batch-size', '7', '--batch-size', '9']), env);
      expect(summaryOf(both.stderr)).toMatchObject({ rowsRead: 3, invalid: 0, sharedKey: 2 });
      const keyed = await run(push(url, dir, ['--key-columns', 'ChargePeriodStart,ServiceName,SubAccountId,x_team', file]), env);
      expect(keyed.code, keyed.stderr).toBe(ExitCode.OK);
      expect(keyed.stderr).not.toContain('--key-columns would change');
      expect(held(emulator)).toEqual(['2026-11-20 Build farm 5', '2026-11-20 Build farm 6']);
      // The connection keeps the rule its ledger records: the same file again is delivered already.
      const again = await run(push(url, dir, [file]), env);
      expect(summaryOf(again.stderr)).toMatchObject({ sent: 0, alreadyDelivered: 2 });
      expect(again.stderr).not.toContain('--key-columns would change');
      // Changing it once rows were delivered would give them new ids: refused unless --rekey.
      const back = await run(push(url, dir, ['--key-columns', 'default', file]), env);
      expect(back.code).toBe(ExitCode.USAGE);
      expect(back.stderr).toContain(
        'its ledger identifies rows by the key columns ChargePeriodStart, ServiceName, SubAccountId, x_team; --key-columns would change that to the default key columns (--key-columns default): rows pushed before without an id of their own (2 delivered) would get new ids',
      );
      expect(held(emulator)).toHaveLength(2);
      const rekeyed = await run(
        push(url, dir, ['--key-columns', 'ChargePeriodStart,ServiceName,SubAccountId,x_team,ChargeCategory', '--rekey', file]),
        env,
      );
      expect(rekeyed.stderr).toContain('as --rekey asks');
      expect(rekeyed.code).toBe(ExitCode.OK);
      const bad = await run(push(url, dir, ['--key-columns', 'ChargePeriodStart,Nope', file]), env);
      expect(bad.code).toBe(ExitCode.USAGE);
      expect(bad.stderr).toContain('--key-columns: \\"Nope\\" is not a FOCUS 1.2 column');
    });
  });
});
