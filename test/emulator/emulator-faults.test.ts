import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { raw, withEmulator, SPAN } from '../support/helpers.js';

const PATH = `/api/v1/public/line-items?start_date=${SPAN.startDate}&end_date=${SPAN.startDate}`;

describe('emulator fault injection', () => {
  it('answers scripted faults in order: 500, 429, malformed, truncated, dropped', async () => {
    await withEmulator(SPAN, async ({ url, faults, requestLog }) => {
      faults.script('error500', 'rateLimit', 'malformed', 'truncate', 'drop');
      const e500 = await raw(url, PATH);
      expect(e500.status).toBe(500);
      expect(e500.body.error.code).toBe('INTERNAL_ERROR');
      const e429 = await raw(url, PATH);
      expect(e429.status).toBe(429);
      expect(e429.headers['retry-after']).toBe('1');
      const malformed = await raw(url, PATH);
      expect(malformed.status).toBe(200);
      expect(malformed.body).toBeUndefined();
      expect(malformed.text).toContain('<<not json>>');
      await expect(raw(url, PATH)).rejects.toThrow();
      await expect(raw(url, PATH)).rejects.toThrow();
      expect((await raw(url, PATH)).status).toBe(200);
      expect(faults.pending).toBe(0);
      expect(requestLog.count({ route: 'line-items' })).toBe(6);
      expect(requestLog.count({ route: 'line-items', status: 200 })).toBe(3);
      expect(requestLog.summary()['line-items']).toMatchObject({ '500': 1, '429': 1, '0': 1 });
    });
  });

  it('applies scripted faults only to the matching path', async () => {
    await withEmulator(SPAN, async ({ url, faults }) => {
      faults.script({ kind: 'error500', pathPrefix: '/api/v1/public/anomalies' });
      expect((await raw(url, PATH)).status).toBe(200);
      expect((await raw(url, '/api/v1/public/anomalies')).status).toBe(500);
    });
  });

  it('draws random faults from the seed: the same seed gives the same sequence', async () => {
    const statuses = async (seed: number) =>
      withEmulator({ ...SPAN, seed, faults: { errorRate: 0.3 } }, async ({ url }) => {
        const out: number[] = [];
        for (let i = 0; i < 40; i++) out.push((await raw(url, PATH)).status);
        return out;
      });
    const a = await statuses(5);
    expect(a).toEqual(await statuses(5));
    expect(a.filter((s) => s === 500).length).toBeGreaterThan(4);
    expect(a.filter((s) => s === 500).length).toBeLessThan(25);
  });

  it('expires cursors at the configured rate', async () => {
    await withEmulator({ ...SPAN, faults: { cursorExpiryRate: 1 } }, async ({ url }) => {
      const first = await raw(url, PATH);
      expect(first.status).toBe(200);
      const next = await raw(url, `${PATH}&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`);
      expect(next.status).toBe(400);
      expect(next.body.error.message).toMatch(/expired/);
    });
  });

  it('restates recent days every N requests', async () => {
    await withEmulator({ ...SPAN, faults: { restateEveryRequests: 2 } }, async ({ url, dataset }) => {
      const recent = `/api/v1/public/rollups/daily?start_date=2025-06-30&end_date=2025-06-30&group_by=provider`;
      const before = (await raw(url, recent)).body.data;
      expect(dataset.generation).toBe(0);
      const after = (await raw(url, recent)).body.data;
      expect(dataset.generation).toBe(1);
      expect(after).not.toEqual(before);
    });
  });

  it('adds latency to responses: each answer waits it out first', async () => {
    const waits: number[] = [];
    let answered = 0;
    const sleep = async (ms: number) => {
      // The answer has not gone out while the latency is waited out.
      waits.push(ms, answered);
    };
    await withEmulator({ ...SPAN, faults: { latencyMs: 150 }, sleep, onRequest: () => (answered += 1) }, async ({ url }) => {
      for (let i = 0; i < 2; i++) {
        const res = await request(`${url}${PATH}`, { headers: { 'x-api-key': 'demo-key' } });
        await res.body.text();
      }
    });
    expect(waits).toEqual([150, 0, 150, 1]);
  });
});
