import { describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.js';
import { ApiError } from '../../src/errors.js';
import { withScriptedServer, type ScriptedReply } from '../support/helpers.js';

const item = {
  id: 'a',
  usage_date: '2025-06-01',
  provider_type: 'aws',
  provider_service: 'EC2',
  net_amount_usd: 1.5,
  currency_original: 'USD',
  project_id: 'p',
  user_email: 'u@example.com',
};
const q = { startDate: '2025-06-01', endDate: '2025-06-01' };

async function fetchPage(
  replies: ScriptedReply[],
  extra: Parameters<typeof createApiClient>[0]['timeouts'] = undefined,
  maxResponseBytes?: number,
) {
  return withScriptedServer(replies, async (url, hits) => {
    const client = createApiClient({
      baseUrl: url,
      apiKey: 'k-123456',
      requestsPerMinute: 60_000,
      retry: { retries: 1, minTimeoutMs: 1, maxTimeoutMs: 2 },
      ...(extra ? { timeouts: extra } : {}),
      ...(maxResponseBytes ? { maxResponseBytes } : {}),
    });
    try {
      return { result: await client.lineItems(q).catch((e: unknown) => e), hits: hits() };
    } finally {
      await client.close();
    }
  });
}

describe('API client response validation', () => {
  it('accepts a page whose meta omits has_more or shows the last cursor as empty', async () => {
    const omitted = await fetchPage([{ body: { data: [item], error: null, meta: { next_cursor: 'abc' } } }]);
    expect(omitted.result).toMatchObject({ hasMore: true, nextCursor: 'abc' });
    const empty = await fetchPage([{ body: { data: [item], error: null, meta: { next_cursor: '', has_more: false } } }]);
    expect(empty.result).toMatchObject({ hasMore: false, nextCursor: null });
    const bare = await fetchPage([{ body: { data: [item], error: null } }]);
    expect(bare.result).toMatchObject({ hasMore: false, nextCursor: null, data: [item] });
  });

  it('refuses records with missing or wrongly typed fields, naming the field, without retrying', async () => {
    const { result, hits } = await fetchPage([{ body: { data: [item, { ...item, net_amount_usd: '1.5' }], error: null, meta: {} } }]);
    expect(result).toBeInstanceOf(ApiError);
    expect((result as ApiError).code).toBe('CS_ERR_BAD_RECORD');
    expect((result as ApiError).message).toMatch(/line item #1 has an invalid "net_amount_usd"/);
    expect(hits).toBe(1);
    const noDate = await fetchPage([{ body: { data: [{ ...item, usage_date: undefined }], error: null, meta: {} } }]);
    expect((noDate.result as ApiError).message).toMatch(/"usage_date"/);
  });

  it('refuses has_more without a cursor, and an envelope with both data and error', async () => {
    const stuck = await fetchPage([{ body: { data: [item], error: null, meta: { has_more: true } } }]);
    expect((stuck.result as ApiError).message).toMatch(/has_more is true but meta.next_cursor is missing/);
    const both = await fetchPage([{ body: { data: [item], error: { code: 'INTERNAL_ERROR', message: 'oops' }, meta: {} } }]);
    expect((both.result as ApiError).message).toMatch(/with an error in the envelope/);
  });

  it('retries an HTML error page by its status, and a 200 HTML page as malformed', async () => {
    const html = '<html><body>Bad gateway</body></html>';
    const gateway = await fetchPage([
      { status: 502, body: html, headers: { 'content-type': 'text/html' } },
      { body: { data: [item], error: null, meta: {} } },
    ]);
    expect(gateway.hits).toBe(2);
    expect(gateway.result).toMatchObject({ data: [item] });
    const htmlOk = await fetchPage([{ status: 200, body: html }]);
    expect((htmlOk.result as ApiError).code).toBe('CS_ERR_RETRIES_EXHAUSTED');
    expect(((htmlOk.result as ApiError).cause as ApiError).code).toBe('CS_ERR_MALFORMED_RESPONSE');
    expect(htmlOk.hits).toBe(2);
  });

  it('stops reading a body above the size limit', async () => {
    const big = { data: Array.from({ length: 2000 }, () => item), error: null, meta: {} };
    const { result } = await fetchPage([{ body: big }], undefined, 10_000);
    expect((result as ApiError).code).toBe('CS_ERR_RESPONSE_TOO_LARGE');
  });

  it('times out a server that never answers', async () => {
    const { result, hits } = await fetchPage([{ hang: true }], { headersMs: 100 });
    expect((result as ApiError).code).toBe('CS_ERR_RETRIES_EXHAUSTED');
    expect(((result as ApiError).cause as ApiError).code).toBe('CS_ERR_TIMEOUT');
    expect(hits).toBe(2);
  });
});
