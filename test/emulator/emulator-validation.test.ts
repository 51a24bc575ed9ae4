import { describe, expect, it } from 'vitest';
import { raw, withEmulator, SPAN } from '../support/helpers.js';

const cases: [string, RegExp][] = [
  ['/api/v1/public/line-items', /start_date is required/],
  ['/api/v1/public/line-items?start_date=2025-06-01', /end_date is required/],
  ['/api/v1/public/line-items?start_date=2025-02-30&end_date=2025-03-01', /real calendar date/],
  ['/api/v1/public/line-items?start_date=06/01/2025&end_date=2025-06-02', /real calendar date/],
  ['/api/v1/public/line-items?start_date=2025-06-05&end_date=2025-06-01', /after end_date/],
  ['/api/v1/public/line-items?start_date=2025-06-01&end_date=2025-06-01&limit=0', /limit must be an integer from 1 to 1000/],
  ['/api/v1/public/line-items?start_date=2025-06-01&end_date=2025-06-01&limit=1001', /limit must be an integer from 1 to 1000/],
  ['/api/v1/public/line-items?start_date=2025-06-01&end_date=2025-06-01&limit=ten', /limit must be an integer/],
  ['/api/v1/public/line-items?start_date=2025-06-01&start_date=2025-06-02&end_date=2025-06-03', /sent 2 times/],
  ['/api/v1/public/rollups/daily?start_date=2025-06-01&end_date=2025-06-01', /group_by is required/],
  ['/api/v1/public/rollups/daily?start_date=2025-06-01&end_date=2025-06-01&group_by=project', /group_by must be one of/],
  ['/api/v1/public/anomalies?limit=101', /limit must be an integer from 1 to 100/],
  ['/api/v1/public/anomalies?since=last-week', /since must be an ISO 8601 timestamp/],
  ['/api/v1/public/anomalies?since=2025-06-01T00:00:00', /since must be an ISO 8601 timestamp/],
  ['/api/v1/public/anomalies?severity=huge', /severity must be one of low, medium, high, critical/],
  ['/api/v1/public/anomalies?status=open', /status must be one of new, acknowledged, resolved, false_positive, dismissed/],
];

describe('emulator parameter validation', () => {
  it.each(cases)('GET %s is VALIDATION_ERROR 400', async (path, message) => {
    await withEmulator(SPAN, async ({ url }) => {
      const res = await raw(url, path);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ data: null, error: { code: 'VALIDATION_ERROR' }, meta: {} });
      expect(res.body.error.message).toMatch(message);
    });
  });

  it('checks ingest bodies: rows, version, format', async () => {
    await withEmulator(SPAN, async ({ url }) => {
      const post = (body: unknown) =>
        raw(url, '/api/v1/public/ingest/focus/demo-connection', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const row = { ChargePeriodStart: '2025-06-01', BilledCost: 1, ServiceName: 'X', ChargeCategory: 'Usage' };
      for (const [body, message] of [
        [[], /JSON object/],
        [{}, /"rows" is required/],
        [{ rows: [] }, /at least one row/],
        [{ rows: [row], version: '2.0' }, /"version" must be one of 1, 1.1, 1.2/],
        [{ rows: [row], format: 'other.focus' }, /"format" must be "service.focus"/],
      ] as const) {
        const res = await post(body);
        expect(res.status).toBe(400);
        expect(res.body.error.message).toMatch(message);
      }
      for (const version of ['1', '1.1', '1.2', 1.2])
        expect((await post({ rows: [row], version, format: 'service.focus' })).status).toBe(202);
    });
  });
});
