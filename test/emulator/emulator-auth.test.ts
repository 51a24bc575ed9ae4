import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import { raw, withEmulator, SPAN } from '../support/helpers.js';

const LINE_ITEMS = `/api/v1/public/line-items?start_date=${SPAN.startDate}&end_date=${SPAN.startDate}&limit=1`;
const keys = {
  keys: [
    { key: 'good-key', scopes: [...SCOPES], plan: 'enterprise' as const },
    { key: 'read-only', scopes: ['line_items:read' as const], plan: 'business' as const },
    { key: 'team-key', scopes: [...SCOPES], plan: 'team' as const },
    { key: 'trial-key', scopes: [...SCOPES], plan: 'trial' as const },
    { key: 'revoked-key', scopes: [...SCOPES], plan: 'business' as const, revoked: true },
    { key: 'expired-key', scopes: [...SCOPES], plan: 'business' as const, expires_at: '2020-01-01T00:00:00Z' },
    { key: 'bound-key', scopes: ['usage:write' as const], plan: 'business' as const, connection_id: 'conn-a' },
  ],
  connections: [
    { id: 'conn-a', provider_type: 'custom' },
    { id: 'conn-b', provider_type: 'acme' },
  ],
};

function expectError(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ data: null, error: { code } });
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.meta).toEqual({});
}

describe('emulator authentication and authorization', () => {
  it('accepts the key in X-API-Key and as a bearer token', async () => {
    await withEmulator({ ...SPAN, keys }, async ({ url }) => {
      const a = await raw(url, LINE_ITEMS, { key: 'good-key' });
      const b = await raw(url, LINE_ITEMS, { key: null, headers: { authorization: 'Bearer good-key' } });
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(b.body.data).toEqual(a.body.data);
    });
  });

  it('answers UNAUTHORIZED 401 for a missing, malformed, unknown, revoked or expired key', async () => {
    await withEmulator({ ...SPAN, keys }, async ({ url }) => {
      expectError(await raw(url, LINE_ITEMS, { key: null }), 401, 'UNAUTHORIZED');
      expectError(await raw(url, LINE_ITEMS, { key: null, headers: { authorization: 'Basic Zm9vOmJhcg==' } }), 401, 'UNAUTHORIZED');
      expectError(await raw(url, LINE_ITEMS, { key: 'nope' }), 401, 'UNAUTHORIZED');
      const revoked = await raw(url, LINE_ITEMS, { key: 'revoked-key' });
      expectError(revoked, 401, 'UNAUTHORIZED');
      expect(revoked.body.error.message).toMatch(/revoked/);
      const expired = await raw(url, LINE_ITEMS, { key: 'expired-key' });
      expectError(expired, 401, 'UNAUTHORIZED');
      expect(expired.body.error.message).toMatch(/expired/);
    });
  });

  it('answers PLAN_RESTRICTED 403 for trial and team workspaces', async () => {
    await withEmulator({ ...SPAN, keys }, async ({ url }) => {
      for (const key of ['team-key', 'trial-key']) {
        const res = await raw(url, LINE_ITEMS, { key });
        expectError(res, 403, 'PLAN_RESTRICTED');
        expect(res.body.error.message).toMatch(/Business plan/);
      }
    });
  });

  it('answers INVALID_SCOPE 403 naming the missing scope', async () => {
    await withEmulator({ ...SPAN, keys }, async ({ url }) => {
      expect((await raw(url, LINE_ITEMS, { key: 'read-only' })).status).toBe(200);
      const res = await raw(url, `/api/v1/public/rollups/daily?start_date=${SPAN.startDate}&end_date=${SPAN.startDate}&group_by=provider`, {
        key: 'read-only',
      });
      expectError(res, 403, 'INVALID_SCOPE');
      expect(res.body.error.message).toContain('rollups:read');
    });
  });

  it('answers FORBIDDEN 403 for a bound ingest key on another connection, and 400 for an unknown connection', async () => {
    await withEmulator({ ...SPAN, keys }, async ({ url }) => {
      const body = JSON.stringify({
        rows: [{ ChargePeriodStart: '2025-06-01', BilledCost: 1, ServiceName: 'X', ChargeCategory: 'Usage' }],
      });
      const headers = { 'content-type': 'application/json' };
      const own = await raw(url, '/api/v1/public/ingest/focus/conn-a', { method: 'POST', key: 'bound-key', headers, body });
      expect(own.status).toBe(202);
      const other = await raw(url, '/api/v1/public/ingest/focus/conn-b', { method: 'POST', key: 'bound-key', headers, body });
      expectError(other, 403, 'FORBIDDEN');
      expect(other.body.error.message).toContain('conn-a');
      const unknown = await raw(url, '/api/v1/public/ingest/focus/nope', { method: 'POST', key: 'good-key', headers, body });
      expectError(unknown, 400, 'VALIDATION_ERROR');
      expect(unknown.body.error.message).toMatch(/Unknown connection id "nope"/);
    });
  });

  it('answers RATE_LIMITED 429 past the per-key budget, stating the wait, with Retry-After unless switched off', async () => {
    for (const retryAfterHeader of [true, false]) {
      await withEmulator({ ...SPAN, rateLimit: 3, retryAfterHeader }, async ({ url, requestLog }) => {
        for (let i = 0; i < 3; i++) expect((await raw(url, LINE_ITEMS)).status).toBe(200);
        const res = await raw(url, LINE_ITEMS);
        expectError(res, 429, 'RATE_LIMITED');
        expect(res.body.error.message).toMatch(/retry after \d+ seconds/);
        expect(res.headers['retry-after'] !== undefined).toBe(retryAfterHeader);
        expect(requestLog.count({ route: 'line-items', status: 429 })).toBe(1);
      });
    }
  });
});
