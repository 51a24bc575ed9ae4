import { describe, expect, it } from 'vitest';
import { raw, withEmulator, SPAN } from '../helpers.js';

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
});
