import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/client.js';
import type { IngestResult } from '../../src/api/types.js';
import { ApiError, ConfigError, describeError } from '../../src/errors.js';
import { openFileReader, type FileReader } from '../../src/push/reader.js';
import { runPush, type PushOptions, type RowProblem } from '../../src/push/push.js';
import { openWarehouse, type Warehouse } from '../../src/storage/duckdb.js';
import { memoryLogger, withTempDir } from '../support/helpers.js';

/** A client that records each ingest body and accepts every row; `refuse` scripts failures. */
function recordingClient(refuse: (rows: number) => Error | null = () => null) {
  const bodies: { connectionId: string; body: { format: string; version: string; rows: Record<string, unknown>[] } }[] = [];
  let batches = 0;
  const client = {
    stats: { retries: 0 },
    async ingestFocus(connectionId: string, body: unknown): Promise<IngestResult> {
      const parsed = JSON.parse(String(body));
      const error = refuse(parsed.rows.length);
      if (error) throw error;
      bodies.push({ connectionId, body: parsed });
      batches += 1;
      return {
        accepted: true,
        batch_id: `b${batches}`,
        row_count: parsed.rows.length,
        cost_line_item_count: parsed.rows.length,
        skipped: 0,
        errors: [],
      };
    },
  } as unknown as ApiClient;
  return { client, bodies, rows: () => bodies.flatMap((b) => b.body.rows) };
}

const options = (files: string[], over: Partial<PushOptions> = {}): PushOptions => ({
  connectionId: 'conn-1',
  files,
  mapping: { columns: {}, constants: {} },
  version: null,
  format: null,
  vendor: 'service',
  batchSize: 500,
  dryRun: false,
  skipInvalid: false,
  allowUndelivered: false,
  keyColumns: null,
  rekey: false,
  settleCorrections: false,
  undeliveredDir: null,
  force: false,
  baseUrl: 'http://127.0.0.1:1',
  apiKey: 'test-key',
  ...over,
});

async function withPushSetup<T>(fn: (ctx: { dir: string; reader: FileReader; warehouse: Warehouse }) => Promise<T>): Promise<T> {
  return withTempDir(async (dir) => {
    const reader = await openFileReader();
    const warehouse = await openWarehouse(join(dir, 'p.duckdb'));
    try {
      return await fn({ dir, reader, warehouse });
    } finally {
      reader.close();
      warehouse.close();
    }
  });
}

const HEADER = 'chargeperiodstart;ChargePeriodEnd;BILLEDCOST;ServiceName;ChargeCategory;BillingCurrency;Tags;RegionId';

describe('push: checks and normalization (DuckDB readers, recorded requests)', () => {
  it('sends aliases and any letter case canonical, the charge period as UTC dates, currencies upper-case, NULL as absent', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      const file = join(dir, 'costs.csv');
      writeFileSync(
        file,
        [
          HEADER,
          '2025-06-01;2025-06-02;1.5;Platform;usage;eur;"{""team"": ""a; b""}";NULL',
          '2025-06-01 10:30:15.123;2025-06-01T11:00:00Z;-2;Platform;DISCOUNT;USD;;eu-west-1',
          '2025-06-01T12:00:00+02:00;;0.25;"Platform; EU";refund;;;',
          '2025-06-03;;3;Platform;Fee;;;',
          '2025-06-03;;4;Platform;tax;;;',
        ].join('\n'),
      );
      const rec = recordingClient();
      const summary = await runPush({ options: options([file]), reader, warehouse, client: rec.client, logger: memoryLogger() });
      expect(summary).toMatchObject({ rowsRead: 5, valid: 5, invalid: 0, sent: 5, batches: 1, outcome: 'success', version: '1.2' });
      expect(rec.bodies[0]!.body.format).toBe('service.focus');
      const rows = rec.rows();
      expect(rows.map((r) => r.ChargeCategory)).toEqual(['Usage', 'Credit', 'Credit', 'Usage', 'Tax']);
      // 12:00+02:00 is 10:00 UTC: the UTC date. An end with a time of day goes as the next midnight's date.
      expect(rows.map((r) => r.ChargePeriodStart)).toEqual(['2025-06-01', '2025-06-01', '2025-06-01', '2025-06-03', '2025-06-03']);
      expect(rows[1]!.ChargePeriodEnd).toBe('2025-06-02');
      expect(rows[0]).toMatchObject({
        ChargePeriodEnd: '2025-06-02',
        BilledCost: 1.5,
        EffectiveCost: 1.5,
        BillingCurrency: 'EUR',
        Tags: { team: 'a; b' },
      });
      expect(rows[0]).not.toHaveProperty('RegionId');
      expect(rows[2]!.ServiceName).toBe('Platform; EU');
      expect(rows[1]!.EffectiveCost).toBe(-2);
      // Every row carries a line-item id; identical files give identical ids.
      expect(new Set(rows.map((r) => r.x_service_line_item_id)).size).toBe(5);
      const again = recordingClient();
      await runPush({ options: options([file], { force: true }), reader, warehouse, client: again.client, logger: memoryLogger() });
      expect(again.rows().map((r) => r.x_service_line_item_id)).toEqual(rows.map((r) => r.x_service_line_item_id));
    });
  });

  it('gives a row the content id it had when the charge period went as date-times, so a re-push is not stored twice', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      const file = join(dir, 'a.csv');
      writeFileSync(
        file,
        'ChargePeriodStart,ChargePeriodEnd,BilledCost,ServiceName,ChargeCategory\n2025-06-01T10:30:00Z,2025-06-01T11:00:00Z,1.5,Svc,Usage\n2025-06-02,,2,Svc,Usage\n',
      );
      // A connection an earlier costsync pushed to (a batch without its rows in push_rows) keeps content ids.
      await warehouse.sql(
        "INSERT INTO ingest_batches (push_id, push_key, kind, connection_id, file, file_sha256, sent_at) VALUES ('p0', 'k0', 'focus', 'conn-1', 'old.csv', 'x', now())",
      );
      const rec = recordingClient();
      const logger = memoryLogger();
      await runPush({ options: options([file]), reader, warehouse, client: rec.client, logger });
      expect(logger.lines.join('\n')).toContain('an earlier costsync pushed to it identifying rows by their whole content; kept');
      // The ids costsync gave these rows when it sent "2025-06-01T10:30:00Z" and "2025-06-02T00:00:00Z".
      expect(rec.rows().map((r) => [r.ChargePeriodStart, r.x_service_line_item_id])).toEqual([
        ['2025-06-01', 'costsync-7c4505d7e7f61b50b7642bf2e25ca3ba'],
        ['2025-06-02', 'costsync-4866d84dcdbe5bac65e6376996dc57f0'],
      ]);
    });
  });

  it('reports each bad row with file, line, column and reason, and sends nothing without --skip-invalid', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      const file = join(dir, 'bad.csv');
      writeFileSync(
        file,
        [
          'ChargePeriodStart,ChargePeriodEnd,BilledCost,ServiceName,ChargeCategory,BillingCurrency,Tags,x_service_tokens_input',
          '2025-06-01,,1,Svc,Usage,USD,,10',
          '2025-13-01,,1,Svc,Usage,USD,,',
          '2025-06-01,,"1,5",Svc,Usage,USD,,',
          '2025-06-01,,1,Svc,Usage,US,,',
          '2025-06-01,,1,Svc,Usage,USD,{not json},',
          '2025-06-01,,1,Svc,Usage,USD,"{""a"": {""b"": 1}}",',
          '2025-06-02,2025-06-01,1,Svc,Usage,USD,,',
          '2025-06-01,,1,,Usage,USD,,',
          '2025-06-01,,1,Svc,Rebate,USD,,',
          '2025-06-01,,1,Svc,Usage,USD,,-5',
          '2025-06-01,,inf,Svc,Usage,USD,,',
        ].join('\n'),
      );
      const problems: RowProblem[] = [];
      const rec = recordingClient();
      const summary = await runPush({
        options: options([file]),
        reader,
        warehouse,
        client: rec.client,
        logger: memoryLogger(),
        onProblem: (p) => problems.push(p),
      });
      expect(summary).toMatchObject({ rowsRead: 11, valid: 1, invalid: 10, sent: 0, outcome: 'invalid' });
      expect(rec.bodies).toHaveLength(0);
      expect(problems.map((p) => [p.line, p.column, p.reason.replace(/:.*$/, '')])).toEqual([
        [3, 'ChargePeriodStart', 'not a date (YYYY-MM-DD) or ISO 8601 time'],
        [4, 'BilledCost', 'not a finite number'],
        [5, 'BillingCurrency', 'not a three-letter currency code'],
        [6, 'Tags', 'not a flat JSON object'],
        [7, 'Tags', 'not a flat JSON object'],
        [8, 'ChargePeriodEnd', 'must be after ChargePeriodStart'],
        [9, 'ServiceName', 'required, but empty'],
        [10, 'ChargeCategory', 'not a ChargeCategory (Usage, Purchase, Tax, Credit, Adjustment; or Discount, Refund, Fee)'],
        [11, 'x_service_tokens_input', 'a count cannot be negative'],
        [12, 'BilledCost', 'not a finite number'],
      ]);
      expect(problems.every((p) => p.file === file && p.row === p.line! - 1)).toBe(true);
      expect(problems[1]!.reason).toBe('not a finite number: 1,5');

      // --skip-invalid sends the valid row only.
      const skip = await runPush({
        options: options([file], { skipInvalid: true }),
        reader,
        warehouse,
        client: rec.client,
        logger: memoryLogger(),
      });
      expect(skip).toMatchObject({ valid: 1, rejected: 10, sent: 1, outcome: 'success' });
      expect(rec.rows()).toHaveLength(1);
      expect(rec.rows()[0]).toMatchObject({ ChargePeriodStart: '2025-06-01', x_service_tokens_input: 10 });
    });
  });

  it('EffectiveCost defaults to BilledCost: a bad BilledCost is reported once, on BilledCost; a bad EffectiveCost of its own, on EffectiveCost', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      const billedOnly = join(dir, 'billed.csv');
      writeFileSync(
        billedOnly,
        'ChargePeriodStart,BilledCost,ServiceName,ChargeCategory\n2025-06-01,twelve,Svc,Usage\n2025-06-01,1,Svc,Usage\n',
      );
      const both = join(dir, 'both.csv');
      writeFileSync(
        both,
        'ChargePeriodStart,BilledCost,EffectiveCost,ServiceName,ChargeCategory\n2025-06-01,twelve,,Svc,Usage\n2025-06-02,1,eleven,Svc,Usage\n2025-06-03,2,,Svc,Usage\n2025-06-04,3,2.5,Svc,Usage\n',
      );
      const problems: RowProblem[] = [];
      const rec = recordingClient();
      const summary = await runPush({
        options: options([billedOnly, both], { skipInvalid: true }),
        reader,
        warehouse,
        client: rec.client,
        logger: memoryLogger(),
        onProblem: (p) => problems.push(p),
      });
      expect(problems.map((p) => [p.file, p.line, p.column, p.reason])).toEqual([
        [billedOnly, 2, 'BilledCost', 'not a finite number: twelve'],
        [both, 2, 'BilledCost', 'not a finite number: twelve'],
        [both, 3, 'EffectiveCost', 'not a finite number: eleven'],
      ]);
      expect(summary).toMatchObject({ rowsRead: 6, invalid: 3, sent: 3 });
      // Sent: the row's own EffectiveCost, else its BilledCost.
      expect(rec.rows().map((r) => [r.BilledCost, r.EffectiveCost])).toEqual([
        [1, 1],
        [2, 2],
        [3, 2.5],
      ]);
    });
  });

  it('fails before reading rows when a required column is missing, naming it and the columns the file has', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      const file = join(dir, 'cols.csv');
      writeFileSync(file, 'ChargePeriodStart,Cost,ServiceName,ChargeCategory\n2025-06-01,1,Svc,Usage\n');
      const rec = recordingClient();
      const error = await runPush({ options: options([file]), reader, warehouse, client: rec.client, logger: memoryLogger() }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toBe(`${file} lacks the required FOCUS column(s) BilledCost.`);
      expect((error as ConfigError).hint).toMatch(/--map .*Its columns are: ChargePeriodStart, Cost, ServiceName, ChargeCategory/);
      // The mapping fixes it.
      const mapped = await runPush({
        options: options([file], { mapping: { columns: { Cost: 'BilledCost' }, constants: {} } }),
        reader,
        warehouse,
        client: rec.client,
        logger: memoryLogger(),
      });
      expect(mapped.sent).toBe(1);
      expect(rec.rows()[0]).toMatchObject({ BilledCost: 1, EffectiveCost: 1 });
    });
  });

  it('refuses an empty file, or a CSV whose first line names no columns, naming the file and the fix (not a column DuckDB made up)', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      for (const [name, text, problem] of [
        ['empty.csv', '', 'is empty: it has no header line naming the columns, and no rows.'],
        ['blank.csv', '\n', 'is empty: it has no header line naming the columns, and no rows.'],
        ['unnamed.csv', ',,,\n2025-06-01,1,Svc,Usage\n', 'has no header line: its first line names no columns.'],
        ['empty.jsonl', '', 'is empty: it holds no JSON object with a member, so it names no column.'],
      ] as const) {
        const file = join(dir, name);
        writeFileSync(file, text);
        const error = await runPush({ options: options([file]), reader, warehouse, logger: memoryLogger() }).catch((e: unknown) => e);
        expect(error, name).toBeInstanceOf(ConfigError);
        expect((error as ConfigError).message, name).toBe(`${file} ${problem}`);
        expect((error as ConfigError).hint, name).toMatch(
          name.endsWith('.csv')
            ? /first line names its columns, for example ChargePeriodStart,BilledCost,ServiceName,ChargeCategory/
            : /one object a line/,
        );
        expect(describeError(error), name).not.toMatch(/column0/);
      }
    });
  });

  it('reads Parquet and JSON Lines to the same rows as CSV', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      const csv = join(dir, 'c.csv');
      writeFileSync(
        csv,
        'ChargePeriodStart,BilledCost,ServiceName,ChargeCategory,Tags\n2025-06-01,1.25,Svc,usage,"{""k"": ""v""}"\n2025-06-02,2,Svc,Credit,\n',
      );
      const parquet = join(dir, 'c.parquet');
      const jsonl = join(dir, 'c.jsonl');
      const instance = await DuckDBInstance.create(':memory:');
      const conn = await instance.connect();
      await conn.run(`COPY (SELECT DATE '2025-06-01' + i::INTEGER AS ChargePeriodStart, [1.25, 2.0][i + 1] AS BilledCost, 'Svc' AS ServiceName, ['usage', 'Credit'][i + 1] AS ChargeCategory,
        CASE WHEN i = 0 THEN MAP {'k': 'v'} END AS Tags FROM range(2) t(i)) TO '${parquet}' (FORMAT parquet)`);
      conn.closeSync();
      instance.closeSync();
      writeFileSync(
        jsonl,
        '{"ChargePeriodStart":"2025-06-01","BilledCost":1.25,"ServiceName":"Svc","ChargeCategory":"usage","Tags":{"k":"v"}}\n{"ChargePeriodStart":"2025-06-02","BilledCost":2,"ServiceName":"Svc","ChargeCategory":"Credit"}\n',
      );
      const sent: Record<string, unknown>[][] = [];
      const ids: unknown[][] = [];
      for (const file of [csv, parquet, jsonl]) {
        const rec = recordingClient();
        // The same rows in another format are the same rows: delivered already, unless forced.
        const first = file === csv;
        const summary = await runPush({
          options: options([file], { force: !first }),
          reader,
          warehouse,
          client: rec.client,
          logger: memoryLogger(),
        });
        if (first) {
          const again = await runPush({
            options: options([file]),
            reader,
            warehouse,
            client: recordingClient().client,
            logger: memoryLogger(),
          });
          expect(again).toMatchObject({ sent: 0, alreadyDelivered: 2 });
        } else expect(summary).toMatchObject({ sent: 2, delivered: 2 });
        ids.push(rec.rows().map((r) => r.x_service_line_item_id));
        sent.push(rec.rows().map(({ x_service_line_item_id: _id, ...r }) => r));
      }
      expect(ids[1]).toEqual(ids[0]);
      expect(ids[2]).toEqual(ids[0]);
      expect(sent[0]).toEqual([
        {
          ChargePeriodStart: '2025-06-01',
          BilledCost: 1.25,
          EffectiveCost: 1.25,
          ServiceName: 'Svc',
          ChargeCategory: 'Usage',
          Tags: { k: 'v' },
        },
        { ChargePeriodStart: '2025-06-02', BilledCost: 2, EffectiveCost: 2, ServiceName: 'Svc', ChargeCategory: 'Credit' },
      ]);
      expect(sent[1]).toEqual(sent[0]);
      expect(sent[2]).toEqual(sent[0]);
    });
  });

  it('batches, records each batch with its rows, resumes past answered batches, and halves a batch the server finds too large', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      const file = join(dir, 'b.csv');
      const lines = ['ChargePeriodStart,BilledCost,ServiceName,ChargeCategory'];
      for (let i = 1; i <= 7; i++) lines.push(`2025-06-0${i},${i},Svc,Usage`);
      writeFileSync(file, lines.join('\n'));
      const tooLarge = (rows: number) =>
        rows > 2
          ? new ApiError('CS_ERR_HTTP', 'POST ingest failed: HTTP (413): body too large', {
              statusCode: 413,
              path: '/api/v1/public/ingest/focus/conn-1',
            })
          : null;
      const rec = recordingClient(tooLarge);
      const first = await runPush({
        options: options([file], { batchSize: 3 }),
        reader,
        warehouse,
        client: rec.client,
        logger: memoryLogger(),
      });
      expect(rec.bodies.map((b) => b.body.rows.length)).toEqual([2, 1, 2, 1, 1]);
      expect(first).toMatchObject({ sent: 7, batches: 5, requests: 7 });
      const ledger = await warehouse.sql<{ first_row: number; last_row: number; rows_sent: number }>(
        'SELECT first_row, last_row, rows_sent FROM ingest_batches ORDER BY first_row',
      );
      expect(ledger).toEqual([
        { first_row: 1, last_row: 2, rows_sent: 2 },
        { first_row: 3, last_row: 3, rows_sent: 1 },
        { first_row: 4, last_row: 5, rows_sent: 2 },
        { first_row: 6, last_row: 6, rows_sent: 1 },
        { first_row: 7, last_row: 7, rows_sent: 1 },
      ]);
      // The same file again: everything was answered, so nothing is sent.
      const again = recordingClient();
      const second = await runPush({
        options: options([file], { batchSize: 3 }),
        reader,
        warehouse,
        client: again.client,
        logger: memoryLogger(),
      });
      expect(second).toMatchObject({ sent: 0, alreadyDelivered: 7, requests: 0 });
      // Interrupted after row 3 (rows 4..7 never recorded): the next run sends rows 4..7 only.
      const later = JSON.stringify(
        rec
          .rows()
          .slice(3)
          .map((r) => r.x_service_line_item_id),
      );
      await warehouse.sql(`DELETE FROM push_rows WHERE row_id IN (SELECT unnest(from_json('${later}', '["VARCHAR"]')))`);
      const resumed = await runPush({
        options: options([file], { batchSize: 3 }),
        reader,
        warehouse,
        client: again.client,
        logger: memoryLogger(),
      });
      expect(resumed).toMatchObject({ sent: 4, alreadyDelivered: 3 });
      expect(again.rows().map((r) => r.BilledCost)).toEqual([4, 5, 6, 7]);
      // A push running for minutes says how far it got every 30 s (a clock 40 s on at each look).
      let now = 0;
      const slow = memoryLogger();
      await runPush({
        options: options([file], { batchSize: 3, force: true }),
        reader,
        warehouse,
        client: recordingClient().client,
        logger: slow,
        clock: { now: () => (now += 40_000) },
      });
      expect(slow.lines.filter((l) => l.includes('row(s) delivered so far')).length).toBeGreaterThan(0);
    });
  });

  it('dry run checks every row and needs neither a client nor a database', async () => {
    await withTempDir(async (dir) => {
      const file = join(dir, 'd.csv');
      writeFileSync(file, 'ChargePeriodStart,BilledCost,ServiceName,ChargeCategory\n2025-06-01,1,Svc,Usage\n2025-06-01,x,Svc,Usage\n');
      const reader = await openFileReader();
      try {
        const summary = await runPush({ options: options([file], { dryRun: true, skipInvalid: true }), reader, logger: memoryLogger() });
        expect(summary).toMatchObject({ rowsRead: 2, valid: 1, invalid: 1, sent: 0, requests: 0, outcome: 'success' });
      } finally {
        reader.close();
      }
    });
  });

  it('names extension columns by --vendor, and keeps and shows the errors the server returns, as returned', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      const file = join(dir, 'v.csv');
      writeFileSync(
        file,
        'ChargePeriodStart,BilledCost,ServiceName,ChargeCategory,X_ACME_MODEL,x_acme_tokens_input,x_service_model\n2025-06-01,1,Svc,Usage,m1,100,ignored?\n2025-06-02,2,Svc,Usage,m2,200,\n',
      );
      const serverError = { row: 1, column: 'x_acme_model', message: 'unknown model', code: 'E42' };
      const client = {
        async ingestFocus(_id: string, body: unknown): Promise<IngestResult> {
          const parsed = JSON.parse(String(body));
          sentRows.push(...parsed.rows);
          return { accepted: true, batch_id: 'b1', row_count: 2, cost_line_item_count: 1, skipped: 1, errors: [serverError] };
        },
      } as unknown as ApiClient;
      const sentRows: Record<string, unknown>[] = [];
      const logger = memoryLogger();
      const summary = await runPush({ options: options([file], { vendor: 'acme' }), reader, warehouse, client, logger });
      expect(summary).toMatchObject({ sent: 2, accepted: 1, skipped: 1, serverErrors: 1, version: '1.2' });
      expect(sentRows[0]).toMatchObject({ x_acme_model: 'm1', x_acme_tokens_input: 100, x_service_model: 'ignored?' });
      expect(Object.keys(sentRows[0]!)).toContain('x_acme_line_item_id');
      expect(logger.lines.some((l) => l.includes('v.csv line 3: refused by the server: x_acme_model: unknown model'))).toBe(true);
      const [stored] = await warehouse.sql<{ errors: string }>('SELECT errors::VARCHAR AS errors FROM ingest_batches');
      expect(JSON.parse(stored!.errors)).toEqual([serverError]);
    });
  });

  it('refuses a file it cannot read, or cannot tell the format of, naming the file and the fix', async () => {
    await withPushSetup(async ({ dir, reader, warehouse }) => {
      const fake = join(dir, 'costs.parquet');
      writeFileSync(fake, 'this is not parquet');
      const unreadable = await runPush({ options: options([fake]), reader, warehouse, logger: memoryLogger() }).catch((e: unknown) => e);
      expect(unreadable).toMatchObject({ code: 'CS_ERR_PUSH_READ', exitCode: 2 });
      expect((unreadable as Error).message).toMatch(new RegExp(`^${fake}: DuckDB cannot read the file`));
      const sheet = join(dir, 'costs.xlsx');
      writeFileSync(sheet, 'x');
      const unknown = await runPush({ options: options([sheet]), reader, warehouse, logger: memoryLogger() }).catch((e: unknown) => e);
      expect(unknown).toBeInstanceOf(ConfigError);
      expect((unknown as ConfigError).hint).toMatch(/\.csv .*\.parquet.*\.jsonl/);
    });
  });
});
