import { describe, expect, it } from 'vitest';
import { raw, withEmulator, SPAN } from '../support/helpers.js';

describe('emulator envelope and routing', () => {
  it('wraps unknown paths, wrong methods and unparsable bodies in the envelope', async () => {
    await withEmulator(SPAN, async ({ url }) => {
      const notFound = await raw(url, '/api/v1/public/nothing-here');
      expect(notFound.status).toBe(404);
      expect(notFound.body).toEqual({ data: null, error: { code: 'NOT_FOUND', message: expect.any(String) }, meta: {} });

      const wrongMethod = await raw(url, '/api/v1/public/line-items', { method: 'POST', body: '{}' });
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.allow).toBe('GET');
      expect(wrongMethod.body.error.code).toBe('METHOD_NOT_ALLOWED');

      const badJson = await raw(url, '/api/v1/public/ingest/focus/demo-connection', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"rows": [',
      });
      expect(badJson.status).toBe(400);
      expect(badJson.body).toMatchObject({ data: null, error: { code: 'VALIDATION_ERROR' }, meta: {} });
      expect(badJson.body.error.message).toMatch(/not valid JSON/);

      const wrongType = await raw(url, '/api/v1/public/ingest/otel', {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: '{}',
      });
      expect(wrongType.status).toBe(400);
      expect(wrongType.body.error.message).toMatch(/Content-Type must be application\/json/);
    });
  });

  it('returns the documented shapes on success', async () => {
    await withEmulator(SPAN, async ({ url }) => {
      const li = await raw(url, `/api/v1/public/line-items?start_date=${SPAN.startDate}&end_date=${SPAN.endDate}`);
      expect(li.status).toBe(200);
      expect(li.body.error).toBeNull();
      expect(li.body.data).toHaveLength(50);
      expect(li.body.meta).toEqual({ next_cursor: expect.any(String), has_more: true });
      expect(li.body.data[0]).toMatchObject({
        id: expect.any(String),
        usage_date: SPAN.startDate,
        provider_type: expect.any(String),
        provider_service: expect.any(String),
        net_amount_usd: expect.any(Number),
        currency_original: expect.stringMatching(/^[A-Z]{3}$/),
        project_id: expect.any(String),
        user_email: expect.stringContaining('@'),
      });

      const roll = await raw(url, `/api/v1/public/rollups/daily?start_date=${SPAN.startDate}&end_date=${SPAN.startDate}&group_by=category`);
      expect(roll.body.meta).toEqual({});
      expect(roll.body.data[0]).toEqual({
        date: SPAN.startDate,
        cost_usd: expect.any(Number),
        provider_type: null,
        service: null,
        category: expect.any(String),
      });

      const an = await raw(url, '/api/v1/public/anomalies');
      expect(an.body.meta).toEqual({});
      expect(an.body.data).toHaveLength(10);
      expect(an.body.data[0]).toMatchObject({
        id: expect.any(String),
        provider_type: expect.any(String),
        service: expect.any(String),
        detected_date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/),
        actual_cost: expect.any(Number),
        expected_cost: expect.any(Number),
        deviation_percent: expect.any(Number),
        severity: expect.any(String),
        alert_type: expect.any(String),
        status: expect.any(String),
      });

      const otel = await raw(url, '/api/v1/public/ingest/otel', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"resourceMetrics": []}',
      });
      expect(otel.status).toBe(202);
      expect(otel.body).toMatchObject({ data: { accepted: true }, error: null });
    });
  });
});
