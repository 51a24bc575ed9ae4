import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FOCUS_1_3_COLUMNS, FOCUS_VERSIONS } from '../../src/focus/columns.js';
import { openReadOnly, withWarehouse } from '../../src/storage/duckdb.js';
import { verifyFocus, versionColumnViolations } from '../../src/verify.js';
import { runDemo } from '../../src/commands/demo.js';
import { byHand, run, withTempDir } from '../support/helpers.js';

const described = FOCUS_1_3_COLUMNS.map((c) => ({ name: c.name, type: c.type }));

describe("each FOCUS version's checks (verify --focus)", () => {
  it('a view with every column of its version by type, and x_ extras, passes; a missing, mistyped or foreign column is named', () => {
    expect(versionColumnViolations('focus_1_3', '1.3', FOCUS_1_3_COLUMNS, [...described, { name: 'x_source', type: 'VARCHAR' }])).toEqual(
      [],
    );
    const broken = [
      ...described.filter((c) => c.name !== 'HostProviderName').map((c) => (c.name === 'BilledCost' ? { ...c, type: 'DOUBLE' } : c)),
      { name: 'UsageQuantity', type: 'DOUBLE' },
    ];
    expect(versionColumnViolations('focus_1_3', '1.3', FOCUS_1_3_COLUMNS, broken).map((v) => v.rule)).toEqual([
      'FOCUS 1.3: BilledCost must be DECIMAL(38,10)',
      'FOCUS 1.3: HostProviderName is missing from focus_1_3',
      'FOCUS 1.3: UsageQuantity is not a FOCUS 1.3 column',
    ]);
    expect(versionColumnViolations('focus_1_3', '1.3', FOCUS_1_3_COLUMNS, []).map((v) => v.rule)).toEqual([
      'FOCUS 1.3: the view focus_1_3 is missing',
    ]);
  });

  it("pass on costsync's own views; fail on a view changed by hand: a column dropped, a 1.4 view with ProviderName, a value not a JSON object", async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'w.duckdb');
      const write = (...statements: string[]) =>
        withWarehouse(db, async (wh) => {
          for (const sql of statements) await wh.sql(sql);
        });
      const check = async () => {
        const wh = await openReadOnly(db);
        try {
          return await verifyFocus(wh, { tolerance: 0.01 });
        } finally {
          wh.close();
        }
      };
      await write(
        "INSERT INTO line_items (source, id, usage_date, provider_type, provider_service, net_amount_usd) VALUES ('default', 'li-1', '2025-06-01', 'aws', 'Amazon S3', 1.25)",
      );
      expect((await check()).violations).toEqual([]);
      // Changed by hand after costsync made them (a read-only command sees them as they are).
      const changeByHand = (...statements: string[]) => byHand(db, statements);
      await changeByHand(
        `CREATE OR REPLACE VIEW focus_1_3 AS SELECT COLUMNS('^[A-Z]'), NULL::JSON AS AllocatedMethodDetails, NULL::VARCHAR AS AllocatedMethodId,
           NULL::VARCHAR AS AllocatedResourceId, NULL::VARCHAR AS AllocatedResourceName, NULL::JSON AS AllocatedTags,
           NULL::JSON AS ContractApplied, ProviderName AS ServiceProviderName, COLUMNS('^x_') FROM focus`,
        'CREATE OR REPLACE VIEW focus_1_4 AS SELECT * FROM focus_1_2',
      );
      const dropped = await check();
      expect(dropped.violations.map((v) => v.rule)).toEqual(
        expect.arrayContaining([
          'FOCUS 1.3: HostProviderName is missing from focus_1_3',
          'FOCUS 1.4: ProviderName is not a FOCUS 1.4 column',
        ]),
      );
      expect(dropped.violations.find((v) => v.rule.includes('HostProviderName'))).toMatchObject({ source: 'focus_1_3', rows: 1 });
      // Views with every column, but a ContractApplied that is a JSON string, not an object.
      await changeByHand(
        `CREATE OR REPLACE VIEW focus_1_3 AS SELECT COLUMNS('^[A-Z]'), NULL::JSON AS AllocatedMethodDetails, NULL::VARCHAR AS AllocatedMethodId,
           NULL::VARCHAR AS AllocatedResourceId, NULL::VARCHAR AS AllocatedResourceName, NULL::JSON AS AllocatedTags,
           '"contract-9"'::JSON AS ContractApplied, ProviderName AS HostProviderName, ProviderName AS ServiceProviderName, COLUMNS('^x_') FROM focus`,
        `CREATE OR REPLACE VIEW focus_1_4 AS SELECT COLUMNS(c -> regexp_matches(c, '^[A-Z]') AND c NOT IN ('ProviderName', 'PublisherName')),
           NULL::JSON AS CommitmentProgramEligibilityDetails, NULL::VARCHAR AS InvoiceDetailId, COLUMNS('^x_') FROM focus_1_3`,
      );
      expect((await check()).violations).toEqual([
        { rule: 'FOCUS 1.3: ContractApplied must be a JSON object', source: 'default', rows: 1, example: 'li-1' },
        { rule: 'FOCUS 1.4: ContractApplied must be a JSON object', source: 'default', rows: 1, example: 'li-1' },
      ]);

      // The rules 1.3 and 1.4 give their added and changed columns' values, each broken on a row of a 1.4 view.
      await write(
        "INSERT INTO line_items (source, id, usage_date, provider_type, provider_service, net_amount_usd) VALUES ('default', 'li-2', '2025-06-01', 'aws', 'Amazon S3', 2), ('default', 'li-3', '2025-06-02', 'aws', 'Amazon S3', 3)",
      );
      await changeByHand(
        `CREATE OR REPLACE VIEW focus_1_3 AS SELECT COLUMNS('^[A-Z]'), NULL::JSON AS AllocatedMethodDetails, NULL::VARCHAR AS AllocatedMethodId,
           NULL::VARCHAR AS AllocatedResourceId, NULL::VARCHAR AS AllocatedResourceName, NULL::JSON AS AllocatedTags,
           NULL::JSON AS ContractApplied, ProviderName AS HostProviderName, ProviderName AS ServiceProviderName, COLUMNS('^x_') FROM focus`,
        `CREATE OR REPLACE VIEW focus_1_4 AS SELECT * REPLACE (
           CASE x_line_item_id WHEN 'li-1' THEN 'r-1' END AS AllocatedResourceId,
           CASE x_line_item_id WHEN 'li-2' THEN 'm' WHEN 'li-3' THEN 'm' END AS AllocatedMethodId,
           CASE x_line_item_id WHEN 'li-2' THEN '{"Elements": [{"AllocatedRatio": 0.5}]}'::JSON END AS AllocatedMethodDetails,
           CASE x_line_item_id WHEN 'li-3' THEN '{"team": "a"}'::JSON END AS AllocatedTags,
           CASE x_line_item_id WHEN 'li-3' THEN '{"team": "b"}'::JSON ELSE Tags END AS Tags,
           CASE x_line_item_id WHEN 'li-2' THEN 'inv' WHEN 'li-3' THEN 'inv' END AS InvoiceId,
           CASE x_line_item_id WHEN 'li-1' THEN 'd1' WHEN 'li-2' THEN 'd2' WHEN 'li-3' THEN 'd2' END AS InvoiceDetailId,
           CASE x_line_item_id WHEN 'li-1' THEN '{"CommitmentPrograms": []}'::JSON
                               WHEN 'li-2' THEN '{"CommitmentPrograms": [{"ProgramType": "Savings Plan"}]}'::JSON END AS CommitmentProgramEligibilityDetails,
           CASE x_line_item_id WHEN 'li-2' THEN 'Reserved Instance' END AS CommitmentDiscountType)
         FROM (SELECT COLUMNS(c -> regexp_matches(c, '^[A-Z]') AND c NOT IN ('ProviderName', 'PublisherName')),
                 NULL::JSON AS CommitmentProgramEligibilityDetails, NULL::VARCHAR AS InvoiceDetailId, COLUMNS('^x_') FROM focus_1_3)`,
      );
      const at = (rule: string, example: string, rows = 1) => ({ rule: `FOCUS 1.4: ${rule}`, source: 'default', rows, example });
      expect((await check()).violations).toEqual([
        at("AllocatedMethodDetails' AllocatedRatio values must sum to 1", 'li-2'),
        at('AllocatedResourceId must be null when AllocatedMethodId is (no split cost allocation)', 'li-1'),
        at('AllocatedTags must not repeat a tag of Tags', 'li-3'),
        at('CommitmentProgramEligibilityDetails must list CommitmentPrograms, each with a ProgramType', 'li-1'),
        at('CommitmentProgramEligibilityDetails must name CommitmentDiscountType among its ProgramType values', 'li-2'),
        at('InvoiceDetailId must be null when InvoiceId is (no invoice)', 'li-1'),
        at('InvoiceDetailId must be unique within its InvoiceId', 'li-2', 2),
      ]);
    });
  });

  it('each version exports to Parquet at the default memory limit, however wide (row groups of a fixed row count of focus_1_4 did not fit)', async () => {
    // The demo's warehouse at the size a newcomer's had (generated or plainly synced rows did not reach the limit).
    await withTempDir(async (dir) => {
      const db = join(dir, 'demo.duckdb');
      const quiet = { env: {}, stdout: () => undefined, stderr: () => undefined, isTTY: false, now: () => Date.now() };
      expect(await runDemo({ db, stateDir: join(dir, 'state'), days: 90, rowsPerDay: 500, report: join(dir, 'r.html') }, quiet)).toBe(0);
      for (const { view } of FOCUS_VERSIONS) {
        const out = join(dir, `${view}.parquet`);
        const exported = await run(['query', '--db', db, `SELECT * FROM ${view}`, '--out', out]);
        expect(exported.code, `${view}: ${exported.stderr}`).toBe(0);
        const back = await run(['query', '--db', db, '--format', 'csv', `SELECT count(*) AS n FROM read_parquet('${out}')`]);
        expect(back.stdout, view).toBe(`n\n${90 * 500}\n`);
      }
    });
  });
});
