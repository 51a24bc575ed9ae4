import { describe, expect, it } from 'vitest';
import { createApiClient, type ApiClientOptions } from '../../src/api/client.js';
import { createRequestLimiter } from '../../src/api/resilience.js';
import { SCOPES } from '../../src/api/types.js';
import { ApiError, ConfigError, ExitCode } from '../../src/errors.js';
import { fakeClock, withEmulator, SPAN } from '../support/helpers.js';

const FAST_RETRY = { retries: 4, minTimeoutMs: 1, maxTimeoutMs: 5 };

async function withClient<T>(
  options: Partial<ApiClientOptions> & { baseUrl: string },
  fn: (c: ReturnType<typeof createApiClient>) => Promise<T>,
) {
  const client = createApiClient({ apiKey: 'demo-key', requestsPerMinute: 60_000, retry: FAST_RETRY, ...options });
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

async function caught(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('API client', () => {
  it('pages line items to the end with either way of sending the key', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 450 }, async ({ url, requestLog }) => {
      for (const authHeader of ['x-api-key', 'bearer'] as const) {
        await withClient({ baseUrl: url, authHeader }, async (client) => {
          const ids: string[] = [];
          let cursor: string | null = null;
          let pages = 0;
          do {
            const page = await client.lineItems({ startDate: '2025-06-01', endDate: '2025-06-03', limit: 1000, cursor });
            ids.push(...page.data.map((r) => r.id));
            cursor = page.nextCursor;
            pages += 1;
            if (!page.hasMore) break;
          } while (cursor);
          expect(ids.length).toBe(1350);
          expect(new Set(ids).size).toBe(1350);
          expect(pages).toBe(2);
        });
      }
      expect(requestLog.count({ status: 200 })).toBe(4);
    });
  });

  it('keeps fields the spec does not list', async () => {
    await withEmulator(SPAN, async ({ url }) => {
      await withClient({ baseUrl: url }, async (client) => {
        const page = await client.lineItems({ startDate: '2025-06-01', endDate: '2025-06-01', limit: 200 });
        expect(page.data.every((r) => typeof r.charge_category === 'string')).toBe(true);
        expect(page.data.some((r) => typeof r.model === 'string')).toBe(true);
      });
    });
  });

  it('turns each error code into a typed error with status, API code, path and a hint', async () => {
    const keys = {
      keys: [
        { key: 'team-key', scopes: [...SCOPES], plan: 'team' as const },
        { key: 'no-rollups', scopes: ['line_items:read' as const], plan: 'business' as const },
        { key: 'bound', scopes: ['usage:write' as const], plan: 'business' as const, connection_id: 'conn-a' },
      ],
      connections: [
        { id: 'conn-a', provider_type: 'custom' },
        { id: 'conn-b', provider_type: 'custom' },
      ],
    };
    await withEmulator({ ...SPAN, keys }, async ({ url, requestLog }) => {
      const q = { startDate: '2025-06-01', endDate: '2025-06-01', groupBy: 'provider' as const };
      const unauthorized = await withClient({ baseUrl: url, apiKey: 'wrong-key' }, (c) => caught(c.rollups(q)));
      expect(unauthorized).toMatchObject({
        code: 'CS_ERR_UNAUTHORIZED',
        statusCode: 401,
        apiCode: 'UNAUTHORIZED',
        exitCode: ExitCode.AUTH,
        path: '/api/v1/public/rollups/daily',
      });
      expect(unauthorized.hint).toMatch(/COSTSYNC_API_KEY/);

      const plan = await withClient({ baseUrl: url, apiKey: 'team-key' }, (c) => caught(c.rollups(q)));
      expect(plan).toMatchObject({ code: 'CS_ERR_PLAN_RESTRICTED', statusCode: 403, exitCode: ExitCode.AUTH });
      expect(plan.hint).toMatch(/Business plan or above/);

      const scope = await withClient({ baseUrl: url, apiKey: 'no-rollups' }, (c) => caught(c.rollups(q)));
      expect(scope).toMatchObject({ code: 'CS_ERR_INVALID_SCOPE', statusCode: 403 });
      expect(scope.hint).toMatch(/rollups:read/);

      const forbidden = await withClient({ baseUrl: url, apiKey: 'bound' }, (c) =>
        caught(
          c.ingestFocus('conn-b', {
            rows: [{ ChargePeriodStart: '2025-06-01', BilledCost: 1, ServiceName: 'x', ChargeCategory: 'Usage' }],
          }),
        ),
      );
      expect(forbidden).toMatchObject({ code: 'CS_ERR_FORBIDDEN', statusCode: 403, exitCode: ExitCode.AUTH });
      expect(forbidden.hint).toMatch(/bound to another connection/);

      const invalid = await withClient({ baseUrl: url, apiKey: 'no-rollups' }, (c) =>
        caught(c.lineItems({ startDate: '2025-06-05', endDate: '2025-06-01' })),
      );
      expect(invalid).toMatchObject({ code: 'CS_ERR_VALIDATION', statusCode: 400, apiCode: 'VALIDATION_ERROR' });
      expect(invalid.message).toMatch(/start_date .* is after end_date/);

      // Not one of these was retried.
      expect(requestLog.total).toBe(5);
    });
  });

  it('a key the API refuses (401) ends every request waiting its turn with that refusal, none of them sent', async () => {
    await withEmulator(SPAN, async ({ url, requestLog }) => {
      // One request a second: without the drop, the other four would each wait their turn to be refused.
      await withClient({ baseUrl: url, apiKey: 'not-a-key', requestsPerMinute: 60 }, async (client) => {
        const errors = await Promise.all(
          ['2025-06-01', '2025-06-02', '2025-06-03', '2025-06-04', '2025-06-05'].map((d) =>
            caught(client.lineItems({ startDate: d, endDate: d, limit: 100 })),
          ),
        );
        expect(errors.map((e) => e.code)).toEqual(Array(5).fill('CS_ERR_UNAUTHORIZED'));
        expect(errors.every((e) => e.exitCode === ExitCode.AUTH)).toBe(true);
        await expect(client.rollups({ startDate: '2025-06-01', endDate: '2025-06-01', groupBy: 'provider' })).rejects.toMatchObject({
          code: 'CS_ERR_UNAUTHORIZED',
        });
      });
      expect(requestLog.total).toBe(1);
    });
  });

  it('retries 500s, dropped connections, truncated and malformed bodies, then succeeds', async () => {
    await withEmulator(SPAN, async ({ url, faults, requestLog }) => {
      faults.script('error500', 'drop', 'truncate', 'malformed');
      const retried: string[] = [];
      await withClient(
        {
          baseUrl: url,
          onEvent: (e) => {
            if (e.type === 'retry') retried.push(e.code);
          },
        },
        async (client) => {
          const page = await client.lineItems({ startDate: '2025-06-01', endDate: '2025-06-01' });
          expect(page.data).toHaveLength(50);
          expect(client.stats).toMatchObject({ requests: 5, retries: 4, rateLimited: 0 });
        },
      );
      expect(retried).toEqual(['CS_ERR_SERVER', 'CS_ERR_NETWORK', 'CS_ERR_NETWORK', 'CS_ERR_MALFORMED_RESPONSE']);
      expect(requestLog.count({ route: 'line-items' })).toBe(5);
    });
  });

  it("takes the caller's room (admit) before each attempt is sent, gives it back when the attempt fails, and leaves the last to the caller", async () => {
    await withEmulator(SPAN, async ({ url, faults, requestLog }) => {
      faults.script('error500', 'malformed');
      const steps: string[] = [];
      let holding = 0;
      const admit = async () => {
        holding += 1;
        steps.push(`admit after ${requestLog.count({ route: 'line-items' })} request(s)`);
        let given = false;
        return () => {
          if (given) return;
          given = true;
          holding -= 1;
          steps.push('give back');
        };
      };
      await withClient({ baseUrl: url }, async (client) => {
        const page = await client.lineItems({ startDate: '2025-06-01', endDate: '2025-06-01', admit });
        expect(page.data).toHaveLength(50);
      });
      // The 500 and the malformed body each gave their room back; the page that came keeps it.
      expect(steps).toEqual(['admit after 0 request(s)', 'give back', 'admit after 1 request(s)', 'give back', 'admit after 2 request(s)']);
      expect(holding).toBe(1);
    });
  });

  it('gives up after the bounded number of attempts with a clear error', async () => {
    await withEmulator({ ...SPAN, faults: { errorRate: 1 } }, async ({ url, requestLog }) => {
      const retried: string[] = [];
      const onEvent: ApiClientOptions['onEvent'] = (e) => {
        if (e.type === 'retry') retried.push(e.code);
      };
      await withClient({ baseUrl: url, retry: { ...FAST_RETRY, retries: 2 }, onEvent }, async (client) => {
        const error = await caught(client.anomalies());
        expect(error.code).toBe('CS_ERR_RETRIES_EXHAUSTED');
        expect(error.message).toMatch(/still failing after 3 attempts/);
        expect(error.statusCode).toBe(500);
        expect((error.cause as ApiError).code).toBe('CS_ERR_SERVER');
      });
      expect(requestLog.count({ route: 'anomalies' })).toBe(3);
      // Two retries: the third failure is the last, with no retry after it.
      expect(retried).toEqual(['CS_ERR_SERVER', 'CS_ERR_SERVER']);
    });
  });

  it('holds the whole limiter for Retry-After on 429, by the injected clock', async () => {
    for (const retryAfterHeader of [true, false]) {
      const clock = fakeClock();
      await withEmulator({ ...SPAN, rateLimit: 2, retryAfterHeader, clock }, async ({ url, requestLog }) => {
        const limiter = createRequestLimiter({ requestsPerMinute: 60_000, maxConcurrent: 1, clock });
        await withClient({ baseUrl: url, limiter, clock }, async (client) => {
          const q = { startDate: '2025-06-01', endDate: '2025-06-01', limit: 1 };
          const pages = await Promise.all([1, 2, 3, 4].map(() => client.lineItems(q)));
          expect(pages.every((p) => p.data.length === 1)).toBe(true);
          expect(client.stats.rateLimited).toBe(1);
        });
        await limiter.stop();
        expect(clock.sleeps).toEqual([60_000]);
        const log = requestLog.recent();
        expect(log.map((e) => e.status)).toEqual([200, 200, 429, 200, 200]);
        // Nothing was sent while the hold was in force.
        const heldAt = log[2]!.atMs;
        expect(log.slice(3).every((e) => e.atMs >= heldAt + 60_000)).toBe(true);
      });
    }
  });

  it('bounds 429 retries too', async () => {
    await withEmulator(SPAN, async ({ url, faults }) => {
      faults.script(...Array.from({ length: 10 }, () => 'rateLimit' as const));
      const clock = fakeClock();
      const limiter = createRequestLimiter({ requestsPerMinute: 60_000, clock });
      await withClient({ baseUrl: url, limiter, clock, retry: { ...FAST_RETRY, maxRateLimitRetries: 3 } }, async (client) => {
        const error = await caught(client.anomalies());
        expect(error.code).toBe('CS_ERR_RETRIES_EXHAUSTED');
        expect(client.stats.rateLimited).toBe(4);
      });
      await limiter.stop();
    });
  });

  it('retries a body that is cut off for good, then reports it as malformed', async () => {
    await withEmulator({ ...SPAN, faults: { malformedRate: 1 } }, async ({ url }) => {
      await withClient({ baseUrl: url, retry: { ...FAST_RETRY, retries: 1 } }, async (client) => {
        const error = await caught(client.rollups({ startDate: '2025-06-01', endDate: '2025-06-01', groupBy: 'provider' }));
        expect(error.code).toBe('CS_ERR_RETRIES_EXHAUSTED');
        expect((error.cause as ApiError).code).toBe('CS_ERR_MALFORMED_RESPONSE');
        expect(client.stats.requests).toBe(2);
      });
    });
  });

  it('never lets the key into an error, its hint, cause or stack', async () => {
    const secret = 'sk-live-very-secret-123';
    await withEmulator(SPAN, async ({ url }) => {
      const auth = await withClient({ baseUrl: url, apiKey: secret }, (c) => caught(c.anomalies()));
      const closedPort = await withClient({ baseUrl: 'http://127.0.0.1:9', apiKey: secret, retry: { ...FAST_RETRY, retries: 0 } }, (c) =>
        caught(c.anomalies()),
      );
      // Nothing ever answered there: a setting to fix (exit 2), not a fault to retry.
      expect(closedPort.code).toBe('CS_ERR_UNREACHABLE');
      expect(closedPort.exitCode).toBe(ExitCode.USAGE);
      for (const error of [auth, closedPort]) {
        const everything = [
          error.message,
          error.hint,
          error.stack,
          JSON.stringify(error),
          String(error.cause),
          (error.cause as Error | undefined)?.stack,
        ].join('\n');
        expect(everything).not.toContain(secret);
      }
    });
  });

  it('requires https except on loopback, and refuses keys in the URL', () => {
    const make = (baseUrl: string) => createApiClient({ baseUrl, apiKey: 'k-1234' });
    expect(() => make('http://api.example.com')).toThrow(ConfigError);
    expect(() => make('http://10.0.0.5:8080')).toThrow(/must use https/);
    expect(() => make('https://user:pw@api.example.com')).toThrow(/credentials/);
    expect(() => make('not a url')).toThrow(/not a URL/);
    for (const ok of ['https://api.example.com', 'http://127.0.0.1:8787', 'http://localhost:1', 'http://[::1]:2']) {
      const client = make(ok);
      void client.close();
    }
  });
});
