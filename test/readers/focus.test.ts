import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FOCUS_1_2_COLUMNS, FOCUS_VERSIONS } from '../../src/focus/columns.js';
import { openWarehouse } from '../../src/storage/duckdb.js';
import { pushArgs, queryDb, run, SPAN, syncCommand, withEmulator, withTempDir, spanFlags } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

/** Every FOCUS 1.2 column with its data type as DuckDB's, as declared once (focus/columns.ts). */
const FOCUS_1_2: Record<string, string> = Object.fromEntries(FOCUS_1_2_COLUMNS.map((c) => [c.name, c.type]));

/** Representative FOCUS queries (cost by service, sub-account, billing period; credits; tags), as written against any FOCUS dataset. */
const FOCUS_QUERIES = [
  'SELECT ServiceName, ServiceCategory, SUM(EffectiveCost) AS cost FROM focus GROUP BY ServiceName, ServiceCategory ORDER BY cost DESC',
  'SELECT SubAccountId, SubAccountName, SUM(BilledCost) AS cost FROM focus GROUP BY SubAccountId, SubAccountName',
  "SELECT BillingPeriodStart, BillingCurrency, SUM(BilledCost) AS billed FROM focus WHERE ChargeCategory = 'Usage' GROUP BY BillingPeriodStart, BillingCurrency ORDER BY BillingPeriodStart",
  "SELECT ProviderName, SUM(BilledCost) AS credits FROM focus WHERE ChargeCategory = 'Credit' GROUP BY ProviderName",
  "SELECT json_extract_string(Tags, '$.team') AS team, SUM(EffectiveCost) AS cost FROM focus WHERE ChargePeriodStart >= TIMESTAMPTZ '2025-06-01' AND ChargePeriodEnd <= TIMESTAMPTZ '2025-07-01' GROUP BY team",
];

async function synced<T>(fn: (db: string, dir: string) => Promise<T>): Promise<T> {
  return withEmulator({ ...SPAN, rowsPerDay: 80, clock }, async ({ url }) =>
    withTempDir(async (dir) => {
      const db = join(dir, 'c.duckdb');
      const sync = await run(syncCommand(url, dir, [...spanFlags(), '--quiet']), env);
      expect(sync.code, sync.stderr).toBe(0);
      return fn(db, dir);
    }),
  );
}

describe('the FOCUS views per version (focus_1_2, focus_1_3, focus_1_4)', () => {
  it("each has its version's columns by name and type, then x_ extras; every date's totals equal the line items'; a query written for the version runs", async () => {
    await synced(async (db) => {
      for (const { version, view, columns } of FOCUS_VERSIONS) {
        const described = await queryDb<{ name: string; type: string }>(
          db,
          `SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_name = '${view}' ORDER BY ordinal_position`,
        );
        expect(
          described.filter((c) => !c.name.startsWith('x_')),
          version,
        ).toEqual(columns.map((c) => ({ name: c.name, type: c.type })));
        expect(described.at(-1)?.name, version).toBe('x_extra');
        // Per date and source: the same cost and count as the line items, to the cent and to the row.
        const differing = await queryDb<{ n: number }>(
          db,
          `SELECT count(*)::INT AS n FROM (
             SELECT x_source AS source, CAST(ChargePeriodStart AS DATE) AS date, sum(BilledCost) AS usd, count(*) AS rows FROM ${view} GROUP BY ALL
           ) v FULL JOIN (
             SELECT source, usage_date AS date, sum(net_amount_usd) AS usd, count(*) AS rows FROM line_items GROUP BY ALL
           ) l USING (source, date)
           WHERE v.usd IS DISTINCT FROM l.usd OR v.rows IS DISTINCT FROM l.rows`,
        );
        expect(differing, version).toEqual([{ n: 0 }]);
      }
      // FOCUS 1.3's own query (its migration guide's): who sells and who hosts.
      const v13 = await run([
        'query',
        'SELECT ServiceProviderName, HostProviderName, InvoiceIssuerName, SUM(BilledCost) AS TotalCost FROM focus_1_3 GROUP BY ServiceProviderName, HostProviderName, InvoiceIssuerName',
        '--db',
        db,
        '--format',
        'json',
      ]);
      expect(v13.code, v13.stderr).toBe(0);
      expect(JSON.parse(v13.stdout).length).toBeGreaterThan(0);
      // FOCUS 1.4 has no ProviderName: a query written for 1.4 runs, one written for 1.2's ProviderName does not bind.
      const v14 = await run(['query', 'SELECT ServiceProviderName, SUM(EffectiveCost) AS cost FROM focus_1_4 GROUP BY ALL', '--db', db]);
      expect(v14.code, v14.stderr).toBe(0);
      const old = await run(['query', 'SELECT ProviderName FROM focus_1_4', '--db', db]);
      expect(old.code).not.toBe(0);
      expect(old.stderr).toMatch(/ProviderName/);
    });
  });
});

describe('the focus view (FOCUS 1.2)', () => {
  it("has every FOCUS 1.2 column by name and type, x_ extras only besides; sums and counts equal the line items'; FOCUS queries run unchanged", async () => {
    await synced(async (db) => {
      const columns = await queryDb<{ name: string; type: string }>(
        db,
        "SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_name = 'focus' ORDER BY ordinal_position",
      );
      const spec = columns.filter((c) => !c.name.startsWith('x_'));
      expect(Object.fromEntries(spec.map((c) => [c.name, c.type]))).toEqual(FOCUS_1_2);
      expect(columns.filter((c) => c.name.startsWith('x_')).map((c) => c.name)).toEqual([
        'x_source',
        'x_line_item_id',
        'x_user_email',
        'x_provider_type',
        'x_currency_original',
        'x_extra',
      ]);
      const [sums] = await queryDb<{ f: number; l: number; fn: number; ln: number; credits: number; negatives: number }>(
        db,
        `
        SELECT (SELECT sum(BilledCost)::DOUBLE FROM focus) AS f, (SELECT sum(net_amount_usd) FROM line_items) AS l,
               (SELECT count(*) FROM focus)::INT AS fn, (SELECT count(*) FROM line_items)::INT AS ln,
               (SELECT count(*) FROM focus WHERE ChargeCategory = 'Credit')::INT AS credits, (SELECT count(*) FROM line_items WHERE net_amount_usd < 0)::INT AS negatives`,
      );
      expect(sums!.fn).toBe(sums!.ln);
      expect(sums!.fn).toBe(30 * 80);
      expect(sums!.f).toBeCloseTo(sums!.l, 6);
      expect(sums!.credits).toBe(sums!.negatives);
      for (const sql of FOCUS_QUERIES) {
        const result = await run(['query', sql, '--db', db, '--format', 'json']);
        expect(result.code, `${sql}\n${result.stderr}`).toBe(0);
        expect(JSON.parse(result.stdout).length, sql).toBeGreaterThan(0);
      }
    });
  });

  it('verify --focus passes on synced data and names a violation planted in a copy', async () => {
    await synced(async (db, dir) => {
      const clean = await run(['verify', '--focus', '--db', db]);
      expect(clean.code, clean.stdout + clean.stderr).toBe(0);
      expect(clean.stdout).toMatch(/No FOCUS violations/);
      const copy = join(dir, 'planted.duckdb');
      copyFileSync(db, copy);
      const wh = await openWarehouse(copy);
      try {
        await wh.sql('UPDATE line_items SET provider_service = NULL WHERE id = (SELECT min(id) FROM line_items)');
        await wh.sql(
          "CREATE OR REPLACE VIEW focus_map_services AS SELECT 'x' AS service_key, 'x' AS service, 'Not A Category' AS service_category, 'Other (Other)' AS service_subcategory UNION ALL SELECT lower('Amazon EC2'), 'Amazon EC2', 'Not A Category', 'Other (Other)'",
        );
      } finally {
        wh.close();
      }
      // Views are refreshed on every open by costsync: the planted mapping is read from the copy as it is.
      const planted = await run(['verify', '--focus', '--db', copy, '--format', 'json']);
      expect(planted.code).toBe(1);
      const rules = (JSON.parse(planted.stdout) as { violations: { rule: string; rows: number }[] }).violations.map((v) => v.rule);
      expect(rules).toContain('ServiceName must not be null');
      expect(rules).toContain('ServiceCategory must be one of the allowed values');
      // The original is untouched.
      expect((await run(['verify', '--focus', '--db', db])).code).toBe(0);
    });
  });

  it('fills what FOCUS requires from what costsync knows, and verify --focus catches a planted violation of each rule', async () => {
    await synced(async (db, dir) => {
      const [facts] = await queryDb<Record<string, number>>(
        db,
        `
        SELECT count(*) FILTER (WHERE BillingAccountId = x_source AND BillingAccountName = x_source AND BillingAccountType = 'Workspace')::INT AS account,
               count(*) FILTER (WHERE ContractedCost = BilledCost AND ListCost = BilledCost)::INT AS costs,
               count(*) FILTER (WHERE SubAccountName = SubAccountId)::INT AS sub,
               count(*) FILTER (WHERE (ServiceCategory, ServiceSubcategory) IN (SELECT (service_category, service_subcategory) FROM focus_subcategories))::INT AS subcategory,
               count(*) FILTER (WHERE ChargeDescription LIKE ServiceName || ' ' || lower(ChargeCategory) || ' on %')::INT AS description,
               count(*) FILTER (WHERE PricingCurrency = upper(x_currency_original))::INT AS pricing,
               count(*) FILTER (WHERE PricingCurrency = 'USD' AND PricingCurrencyEffectiveCost = EffectiveCost)::INT AS usd,
               count(*) FILTER (WHERE PricingCurrency <> 'USD' AND PricingCurrencyEffectiveCost IS NULL)::INT AS other,
               count(*)::INT AS n
        FROM focus`,
      );
      for (const key of ['account', 'costs', 'sub', 'subcategory', 'description', 'pricing']) expect(facts![key], key).toBe(facts!.n);
      expect(facts!.usd! + facts!.other!).toBe(facts!.n);
      expect(facts!.other).toBeGreaterThan(0);
      // One subcategory per service name.
      expect(await queryDb(db, 'SELECT ServiceName FROM focus GROUP BY 1 HAVING count(DISTINCT ServiceSubcategory) > 1')).toEqual([]);

      // A copy whose focus view breaks each rule on a row of its own.
      const copy = join(dir, 'each.duckdb');
      copyFileSync(db, copy);
      const planted: [string, string, RegExp][] = [
        ['BillingAccountId', 'NULL', /^BillingAccountId must not be null$/],
        ['BillingAccountName', 'NULL', /^BillingAccountName must not be null$/],
        ['BillingAccountType', 'NULL', /^BillingAccountType must not be null when BillingAccountId is not null$/],
        ['SubAccountName', 'NULL', /^SubAccountName must not be null when SubAccountId is not null$/],
        [
          'ServiceSubcategory',
          "'Generative AI'",
          /^ServiceSubcategory must be one of the allowed values, under its one parent ServiceCategory$/,
        ],
        ['ChargeDescription', 'NULL', /^ChargeDescription must not be null$/],
        ['ContractedCost', 'BilledCost + 1', /^ContractedCost must match BilledCost/],
        ['ListCost', 'NULL', /^ListCost must not be null$/],
        ['PricingCurrency', "'eur'", /^BillingCurrency and PricingCurrency must be three-letter upper-case currency codes$/],
        [
          'PricingCurrencyEffectiveCost',
          'EffectiveCost * 2',
          /^PricingCurrencyEffectiveCost must equal EffectiveCost when PricingCurrency is the BillingCurrency$/,
        ],
      ];
      const wh = await openWarehouse(copy);
      try {
        await wh.sql('ALTER VIEW focus RENAME TO focus_as_synced');
        // Row n breaks rule n (rows of USD pricing, so each planted value breaks only its own rule).
        const replaced = planted.map(([col, value], i) => `CASE WHEN n = ${i + 1} THEN ${value} ELSE ${col} END AS ${col}`).join(', ');
        await wh.sql(`CREATE VIEW focus AS SELECT * EXCLUDE (n) REPLACE (${replaced})
          FROM (SELECT *, row_number() OVER (ORDER BY x_line_item_id) AS n FROM focus_as_synced WHERE PricingCurrency = 'USD' AND ServiceCategory <> 'AI and Machine Learning'
                UNION ALL SELECT *, 0 AS n FROM focus_as_synced WHERE NOT (PricingCurrency = 'USD' AND ServiceCategory <> 'AI and Machine Learning'))`);
      } finally {
        wh.close();
      }
      const result = await run(['verify', '--focus', '--db', copy, '--format', 'json']);
      expect(result.code, result.stderr).toBe(1);
      const found = (JSON.parse(result.stdout) as { violations: { rule: string; rows: number }[] }).violations;
      for (const [col, , rule] of planted) {
        expect(
          found.filter((v) => rule.test(v.rule)).map((v) => v.rows),
          col,
        ).toEqual([1]);
      }
      // The planted subcategory also gives its service a second one.
      expect(found.map((v) => v.rule)).toContain('ServiceName should have one ServiceSubcategory');
    });
  });

  it('query --out writes the result as Parquet, CSV or JSON Lines, by extension (making its folder), and refuses another', async () => {
    await synced(async (db, dir) => {
      for (const ext of ['parquet', 'csv', 'jsonl']) {
        // The CSV goes to a folder that does not exist yet: it is made, as report --out does.
        const file = join(dir, ext === 'csv' ? 'exports' : '', `focus.${ext}`);
        const result = await run(['query', 'SELECT * FROM focus', '--db', db, '--out', file]);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stderr).toContain(`${30 * 80} rows`);
        const reader = ext === 'parquet' ? `read_parquet('${file}')` : ext === 'csv' ? `read_csv('${file}')` : `read_json('${file}')`;
        const [back] = await queryDb<{ n: number; cost: number; cols: number }>(
          db,
          `SELECT count(*)::INT AS n, sum(BilledCost)::DOUBLE AS cost, (SELECT count(*) FROM (DESCRIBE SELECT * FROM ${reader}))::INT AS cols FROM ${reader}`,
        );
        expect(back!.n).toBe(30 * 80);
        expect(back!.cols).toBe(57 + 6);
      }
      const bad = await run(['query', 'SELECT 1', '--db', db, '--out', join(dir, 'x.xlsx')]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('.parquet, .csv or .jsonl');
    });
  });

  it('round trip: a FOCUS file pushed, then synced, shows up in focus with the same dates, services and amounts', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const file = fileURLToPath(new URL('../fixtures/focus-1.2-ai-gateway.csv', import.meta.url));
        const pushed = await run(pushArgs(url, dir, ['--connection', 'demo-connection', file]), env);
        expect(pushed.code, pushed.stderr).toBe(0);
        const db = join(dir, 'c.duckdb');
        const sync = await run(syncCommand(url, dir, [...spanFlags(), '--quiet']), env);
        expect(sync.code, sync.stderr).toBe(0);
        // The API's net amount is the row's EffectiveCost (BilledCost when it has none); categories as the spec's rules store them.
        const expected = await queryDb<{ d: string; service: string; category: string; cost: number }>(
          db,
          `
          SELECT CAST(ChargePeriodStart AS DATE)::VARCHAR AS d, ServiceName AS service,
                 CASE lower(ChargeCategory) WHEN 'discount' THEN 'credit' WHEN 'refund' THEN 'credit' WHEN 'fee' THEN 'usage' ELSE lower(ChargeCategory) END AS category,
                 round(sum(coalesce(EffectiveCost, BilledCost)), 6) AS cost
          FROM read_csv('${file}') GROUP BY ALL ORDER BY ALL`,
        );
        const custom = await queryDb<{ d: string; service: string; category: string; cost: number }>(
          db,
          `
          SELECT CAST(ChargePeriodStart AS DATE)::VARCHAR AS d, ServiceName AS service, lower(ChargeCategory) AS category,
                 round(sum(BilledCost)::DOUBLE, 6) AS cost
          FROM focus WHERE x_provider_type = 'custom' GROUP BY ALL ORDER BY ALL`,
        );
        expect(expected.length).toBeGreaterThan(0);
        expect(custom).toEqual(expected);
      });
    });
  });
});
