import { describe, expect, it } from 'vitest';
import { raw, withEmulator, SPAN } from '../support/helpers.js';

const post = (url: string, body: unknown, connection = 'demo-connection') =>
  raw(url, `/api/v1/public/ingest/focus/${connection}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const row = (over: Record<string, unknown> = {}) => ({
  ChargePeriodStart: '2024-03-05',
  BilledCost: 10,
  ServiceName: 'Internal GPU Pool',
  ChargeCategory: 'Usage',
  ...over,
});

async function lineItemsOn(url: string, date: string) {
  const res = await raw(url, `/api/v1/public/line-items?start_date=${date}&end_date=${date}&limit=1000`);
  return res.body.data as any[];
}

describe('emulator FOCUS ingest', () => {
  it('accepts aliases and any letter case, and stores rows as line items of the connection provider', async () => {
    await withEmulator(SPAN, async ({ url }) => {
      const res = await post(url, {
        version: '1.2',
        format: 'service.focus',
        rows: [
          row({ ChargeCategory: 'usage', EffectiveCost: 8, x_service_line_item_id: 'a' }),
          row({ ChargeCategory: 'Discount', BilledCost: -2, x_service_line_item_id: 'b' }),
          row({
            ChargeCategory: 'FEE',
            ChargePeriodStart: '2024-03-05T23:00:00-02:00',
            x_service_line_item_id: 'c',
            x_service_model: 'm1',
            x_service_tokens_input: 5,
          }),
        ],
      });
      expect(res.status).toBe(202);
      expect(res.body.error).toBeNull();
      expect(res.body.data).toMatchObject({ accepted: true, row_count: 3, cost_line_item_count: 3, skipped: 0, errors: [] });
      expect(typeof res.body.data.batch_id).toBe('string');

      const onFifth = await lineItemsOn(url, '2024-03-05');
      expect(onFifth.map((r) => [r.provider_type, r.net_amount_usd, r.charge_category])).toEqual([
        ['custom', 8, 'Usage'],
        ['custom', -2, 'Credit'],
      ]);
      const onSixth = await lineItemsOn(url, '2024-03-06');
      expect(onSixth).toHaveLength(1);
      expect(onSixth[0]).toMatchObject({ charge_category: 'Usage', model: 'm1', tokens_input: 5 });

      const rollup = await raw(url, '/api/v1/public/rollups/daily?start_date=2024-03-05&end_date=2024-03-06&group_by=provider');
      expect(rollup.body.data).toEqual([
        { date: '2024-03-05', cost_usd: 6, provider_type: 'custom', service: null, category: null },
        { date: '2024-03-06', cost_usd: 10, provider_type: 'custom', service: null, category: null },
      ]);
    });
  });

  it('deduplicates by the line-item id column, whose vendor word is configurable', async () => {
    await withEmulator({ ...SPAN, vendor: 'acme' }, async ({ url }) => {
      const body = { format: 'acme.focus', rows: [row({ x_acme_line_item_id: 'r1' }), row({ x_acme_line_item_id: 'r2' })] };
      expect((await post(url, body)).body.data).toMatchObject({ cost_line_item_count: 2, skipped: 0 });
      expect((await post(url, body)).body.data).toMatchObject({ accepted: true, cost_line_item_count: 0, skipped: 2 });
      expect(await lineItemsOn(url, '2024-03-05')).toHaveLength(2);
      expect((await post(url, { format: 'service.focus', rows: [row()] })).status).toBe(400);
    });
  });

  it('skips invalid rows with per-row errors, and refuses nothing else', async () => {
    await withEmulator(SPAN, async ({ url }) => {
      const res = await post(url, {
        rows: [
          row(),
          { BilledCost: 1, ServiceName: 'X', ChargeCategory: 'Usage' },
          row({ ChargeCategory: 'Rebate' }),
          row({ BilledCost: '12' }),
          row({ ChargePeriodStart: '2024-02-30' }),
          row({ ChargePeriodEnd: '2024-03-01' }),
          row({ BillingCurrency: 'EURO' }),
          row({ Tags: ['x'] }),
        ],
      });
      expect(res.status).toBe(202);
      expect(res.body.data).toMatchObject({ accepted: true, row_count: 8, cost_line_item_count: 1, skipped: 7 });
      const columns = res.body.data.errors.map((e: any) => [e.row, e.column]);
      expect(columns).toEqual([
        [1, 'ChargePeriodStart'],
        [2, 'ChargeCategory'],
        [3, 'BilledCost'],
        [4, 'ChargePeriodStart'],
        [5, 'ChargePeriodEnd'],
        [6, 'BillingCurrency'],
        [7, 'Tags'],
      ]);
      const allBad = await post(url, { rows: [row({ BilledCost: null })] });
      expect(allBad.body.data).toMatchObject({ accepted: false, cost_line_item_count: 0, skipped: 1 });
    });
  });

  it('refuses batches above the row limit with a message saying to split them', async () => {
    await withEmulator({ ...SPAN, maxIngestRows: 2 }, async ({ url }) => {
      const res = await post(url, { rows: [row(), row(), row()] });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/at most 2 per request: split the batch/);
    });
  });

  it('takes the ChargeCategory spellings the API document lists, in any letter case, and nothing around them', async () => {
    await withEmulator(SPAN, async ({ url }) => {
      const spellings = ['USAGE', 'purchase', 'Tax', 'cReDiT', 'adjustment', 'DISCOUNT', 'Refund', 'fee'];
      const res = await post(url, { rows: [...spellings, ' Usage', 'Usage ', 'Charge'].map((c) => row({ ChargeCategory: c })) });
      expect(res.body.data).toMatchObject({ row_count: 11, cost_line_item_count: 8, skipped: 3 });
      expect(res.body.data.errors.map((e: any) => [e.row, e.column])).toEqual([
        [8, 'ChargeCategory'],
        [9, 'ChargeCategory'],
        [10, 'ChargeCategory'],
      ]);
      expect((await lineItemsOn(url, '2024-03-05')).map((r) => r.charge_category)).toEqual([
        'Usage',
        'Purchase',
        'Tax',
        'Credit',
        'Adjustment',
        'Credit',
        'Credit',
        'Usage',
      ]);
    });
  });

  it('takes charge period dates as FOCUS writes them by default, or only calendar dates, as the document words it', async () => {
    const starts = [
      '2024-03-05',
      '2024-03-05T10:00:00Z',
      '2024-03-05T10:00:00.5+01:00',
      '2024-03-05T10:00:00',
      '2024-03-05 10:00:00Z',
      '2024-03-05T24:00:00Z',
    ];
    await withEmulator(SPAN, async ({ url }) => {
      const res = await post(url, { rows: starts.map((s) => row({ ChargePeriodStart: s })) });
      expect(res.body.data.errors.map((e: any) => [e.row, e.column])).toEqual([
        [3, 'ChargePeriodStart'],
        [4, 'ChargePeriodStart'],
        [5, 'ChargePeriodStart'],
      ]);
    });
    await withEmulator({ ...SPAN, ingestChargePeriodDates: 'date' }, async ({ url }) => {
      const res = await post(url, {
        rows: [...starts, '2024-03-05'].map((s, i) =>
          row({ ChargePeriodStart: s, ChargePeriodEnd: i === 0 ? '2024-03-06T00:00:00Z' : undefined }),
        ),
      });
      expect(res.body.data).toMatchObject({ cost_line_item_count: 1, skipped: 6 });
      expect(res.body.data.errors.map((e: any) => [e.row, e.column])).toEqual([
        [0, 'ChargePeriodEnd'],
        [1, 'ChargePeriodStart'],
        [2, 'ChargePeriodStart'],
        [3, 'ChargePeriodStart'],
        [4, 'ChargePeriodStart'],
        [5, 'ChargePeriodStart'],
      ]);
      expect(res.body.data.errors[1].message).toMatch(/calendar date \(YYYY-MM-DD\)/);
    });
  });

  it('lets a test pick what an invalid row does to its request: skipped, its batch rejected, or the request refused', async () => {
    const rows = [
      row({ x_service_line_item_id: 'ok' }),
      row({ ChargeCategory: 'Rebate' }),
      row({ ServiceName: 7, BillingCurrency: 'EURO' }),
    ];
    await withEmulator({ ...SPAN, ingestInvalidRows: 'reject-batch' }, async (emulator) => {
      const res = await post(emulator.url, { rows });
      expect(res.status).toBe(202);
      expect(res.body.data).toMatchObject({ accepted: false, row_count: 3, cost_line_item_count: 0, skipped: 3 });
      expect(res.body.data.errors.map((e: any) => [e.row, e.column])).toEqual([
        [1, 'ChargeCategory'],
        [2, 'ServiceName'],
        [2, 'BillingCurrency'],
      ]);
      expect(emulator.dataset.ingestedRecords()).toHaveLength(0);
      // A batch of valid rows is stored as usual.
      expect((await post(emulator.url, { rows: [rows[0]] })).body.data).toMatchObject({ accepted: true, cost_line_item_count: 1 });
    });
    await withEmulator({ ...SPAN, ingestInvalidRows: 'refuse-request' }, async (emulator) => {
      const res = await post(emulator.url, { rows });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ data: null, error: { code: 'VALIDATION_ERROR' }, meta: {} });
      expect(res.body.error.message).toBe(
        'row 1, ChargeCategory: must be Usage, Purchase, Tax, Credit or Adjustment (or Discount, Refund, Fee), in any letter case (and 2 more problems)',
      );
      expect(emulator.dataset.ingestedRecords()).toHaveLength(0);
    });
  });

  it('lets a test pick the shape of the per-row errors, which the document does not show', async () => {
    await withEmulator({ ...SPAN, ingestRowErrorShape: 'string' }, async ({ url }) => {
      const res = await post(url, { rows: [row(), 'not a row', row({ BilledCost: '1' })] });
      expect(res.body.data).toMatchObject({ accepted: true, cost_line_item_count: 1, skipped: 2 });
      expect(res.body.data.errors).toEqual(['row 1: row must be a JSON object', 'row 2, BilledCost: must be a number']);
    });
  });

  it('lets a test pick how a request above the row or body limit is refused: 400 VALIDATION_ERROR or 413', async () => {
    await withEmulator({ ...SPAN, maxIngestRows: 2, maxBodyBytes: 2000, ingestTooLarge: 'payload-too-large' }, async (emulator) => {
      const rows = await post(emulator.url, { rows: [row(), row(), row()] });
      expect(rows.status).toBe(413);
      expect(rows.body).toMatchObject({ data: null, error: { code: 'PAYLOAD_TOO_LARGE' }, meta: {} });
      expect(rows.body.error.message).toMatch(/at most 2 per request: split the batch/);
      const bytes = await post(emulator.url, { rows: [row({ ServiceName: 'x'.repeat(3000) })] });
      expect(bytes.status).toBe(413);
      expect(bytes.body.error.message).toMatch(/exceeds 2000 bytes/);
      expect(emulator.dataset.ingestedRecords()).toHaveLength(0);
    });
    await withEmulator({ ...SPAN, maxBodyBytes: 2000 }, async ({ url }) => {
      const bytes = await post(url, { rows: [row({ ServiceName: 'x'.repeat(3000) })] });
      expect(bytes.status).toBe(400);
      expect(bytes.body.error).toMatchObject({ code: 'VALIDATION_ERROR' });
    });
  });

  it('lets a test pick which row wins on a repeated line-item id: the first (skipped) or the last (replaces it)', async () => {
    await withEmulator({ ...SPAN, ingestDuplicateRows: 'replace' }, async (emulator) => {
      const { url } = emulator;
      expect(
        (await post(url, { rows: [row({ x_service_line_item_id: 'r1' }), row({ x_service_line_item_id: 'r2' })] })).body.data,
      ).toMatchObject({
        cost_line_item_count: 2,
        skipped: 0,
      });
      const [before] = await lineItemsOn(url, '2024-03-05');
      const again = await post(url, { rows: [row({ x_service_line_item_id: 'r1', ChargePeriodStart: '2024-03-06', BilledCost: 7 })] });
      expect(again.body.data).toMatchObject({ accepted: true, cost_line_item_count: 1, skipped: 0 });
      expect((await lineItemsOn(url, '2024-03-05')).map((r) => r.net_amount_usd)).toEqual([10]);
      const moved = await lineItemsOn(url, '2024-03-06');
      expect(moved).toMatchObject([{ id: before.id, net_amount_usd: 7 }]);
      expect(emulator.dataset.ingestedRecords()).toHaveLength(2);
      const rollup = await raw(url, '/api/v1/public/rollups/daily?start_date=2024-03-05&end_date=2024-03-06&group_by=provider');
      expect(rollup.body.data.map((r: any) => [r.date, r.cost_usd])).toEqual([
        ['2024-03-05', 10],
        ['2024-03-06', 7],
      ]);
    });
  });
});
