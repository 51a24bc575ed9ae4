import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/client.js';
import type { RollupRow } from '../../src/api/types.js';
import { ApiError } from '../../src/errors.js';
import { compareAmounts, fetchRollups, groupKey, micros } from '../../src/verify-api.js';
import { shellWord } from '../../src/commands/args.js';

describe('verify --api, the arithmetic', () => {
  it('micros: exact micro-dollars from numbers and decimal text, negatives and small amounts included', () => {
    expect(micros('12.345678')).toBe(12_345_678n);
    expect(micros(12.5)).toBe(12_500_000n);
    expect(micros('-0.5')).toBe(-500_000n);
    expect(micros(1e-7)).toBe(0n);
    expect(micros(0.1) + micros(0.2)).toBe(micros(0.3));
  });

  it('groupKey: the dimension fields the server filled, whichever they are', () => {
    expect(groupKey('provider', { provider_type: 'aws', service: null, category: null })).toBe('aws');
    expect(groupKey('service', { provider_type: 'aws', service: 'EC2', category: null })).toBe('aws / EC2');
    expect(groupKey('category', { provider_type: null, service: null, category: 'compute' })).toBe('compute');
    expect(groupKey('category', { provider_type: null, service: null, category: null })).toBe('(none)');
  });

  it('compareAmounts: above the tolerance only, a key on one side counting $0 on the other', () => {
    const stored = new Map([
      ['2025-06-01|provider|aws', micros('10.00')],
      ['2025-06-01|provider|gcp', micros('5.005')],
      ['2025-06-02|provider|aws', micros('3')],
    ]);
    const api = new Map([
      ['2025-06-01|provider|aws', micros('10.00')],
      ['2025-06-01|provider|gcp', micros('5.00')],
      ['2025-06-03|provider|aws', micros('4')],
    ]);
    expect(compareAmounts('s', stored, api, 0.01)).toEqual([
      { source: 's', date: '2025-06-02', check: 'provider', group: 'aws', stored_usd: 3, api_usd: 0, difference_usd: 3 },
      { source: 's', date: '2025-06-03', check: 'provider', group: 'aws', stored_usd: 0, api_usd: 4, difference_usd: -4 },
    ]);
    expect(compareAmounts('s', stored, api, 0.001)).toHaveLength(3);
  });

  it('fetchRollups: one request for the range, or halves of it while the server refuses it (400)', async () => {
    const asked: string[] = [];
    const client = {
      rollups: async (q: { startDate: string; endDate: string }): Promise<RollupRow[]> => {
        asked.push(`${q.startDate}..${q.endDate}`);
        if (q.startDate < q.endDate && q.endDate > '2025-06-08')
          throw new ApiError('CS_ERR_VALIDATION', 'range too long', {
            statusCode: 400,
            apiCode: 'VALIDATION_ERROR',
            path: '/rollups/daily',
          });
        return [{ date: q.startDate, cost_usd: 1, provider_type: 'aws', service: null, category: null }];
      },
    } as unknown as ApiClient;
    let requests = 0;
    const rows = await fetchRollups(client, '2025-06-01', '2025-06-10', 'provider', () => (requests += 1));
    expect(asked).toEqual([
      '2025-06-01..2025-06-10',
      '2025-06-01..2025-06-05',
      '2025-06-06..2025-06-10',
      '2025-06-06..2025-06-08',
      '2025-06-09..2025-06-10',
      '2025-06-09..2025-06-09',
      '2025-06-10..2025-06-10',
    ]);
    expect(requests).toBe(asked.length);
    expect(rows.map((r) => r.date)).toEqual(['2025-06-01', '2025-06-06', '2025-06-09', '2025-06-10']);
    const refused = {
      rollups: async () =>
        Promise.reject(new ApiError('CS_ERR_UNAUTHORIZED', 'no', { statusCode: 401, apiCode: 'UNAUTHORIZED', path: '/' })),
    } as unknown as ApiClient;
    await expect(fetchRollups(refused, '2025-06-01', '2025-06-10', 'provider', () => undefined)).rejects.toMatchObject({ statusCode: 401 });
  });
});

describe("the fix command's words (shellWord)", () => {
  it('leaves a plain path or URL as it is, and single-quotes one with spaces or quotes', () => {
    expect(shellWord('/tmp/w/costs.duckdb')).toBe('/tmp/w/costs.duckdb');
    expect(shellWord('http://127.0.0.1:8787')).toBe('http://127.0.0.1:8787');
    expect(shellWord('/tmp/my costs.duckdb')).toBe("'/tmp/my costs.duckdb'");
    expect(shellWord("it's.duckdb")).toBe("'it'\\''s.duckdb'");
  });
});
