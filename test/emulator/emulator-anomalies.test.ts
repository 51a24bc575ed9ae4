import { describe, expect, it } from 'vitest';
import { raw, withEmulator } from '../support/helpers.js';

const span = { startDate: '2025-04-01', endDate: '2025-06-30', anomaliesPerDay: 4 };
const clock = { now: () => Date.parse('2025-07-01T00:00:00Z') };
const get = (url: string, q: string) => raw(url, `/api/v1/public/anomalies?${q}`);

describe('emulator anomalies', () => {
  it('returns only anomalies detected strictly after since', async () => {
    await withEmulator({ ...span, clock, anomalyOrder: 'asc' }, async ({ url }) => {
      const first = (await get(url, 'limit=100')).body.data;
      const pivot = first[20].detected_date;
      const after = (await get(url, `limit=100&since=${encodeURIComponent(pivot)}`)).body.data;
      expect(after.length).toBeGreaterThan(0);
      expect(after.every((a: any) => Date.parse(a.detected_date) > Date.parse(pivot))).toBe(true);
      expect(after.map((a: any) => a.id)).not.toContain(first[20].id);
    });
  });

  it('defaults to 10 records, allows up to 100, and filters by severity, status and provider', async () => {
    await withEmulator({ ...span, clock }, async ({ url }) => {
      expect((await get(url, '')).body.data).toHaveLength(10);
      expect((await get(url, 'limit=100')).body.data).toHaveLength(100);
      const filtered = (await get(url, 'limit=100&severity=high&status=resolved&provider_type=aws')).body.data;
      expect(filtered.length).toBeGreaterThan(0);
      expect(filtered.every((a: any) => a.severity === 'high' && a.status === 'resolved' && a.provider_type === 'aws')).toBe(true);
      expect((await get(url, 'provider_type=nobody')).body.data).toEqual([]);
    });
  });

  it('orders ascending, descending, or not at all, as configured', async () => {
    const times = async (order: 'asc' | 'desc' | 'unordered') =>
      withEmulator(
        { ...span, clock, anomalyOrder: order },
        async ({ url }) => (await get(url, 'limit=100')).body.data.map((a: any) => Date.parse(a.detected_date)) as number[],
      );
    const asc = await times('asc');
    const desc = await times('desc');
    const unordered = await times('unordered');
    expect(asc).toEqual([...asc].sort((a, b) => a - b));
    expect(desc).toEqual([...desc].sort((a, b) => b - a));
    expect(unordered).not.toEqual([...unordered].sort((a, b) => a - b));
    expect(unordered).not.toEqual([...unordered].sort((a, b) => b - a));
    expect(Math.min(...asc)).toBeLessThan(Math.min(...desc));
  });

  it('moves statuses forward as the clock advances and hides anomalies not yet detected', async () => {
    let now = Date.parse('2025-05-01T00:00:00Z');
    await withEmulator({ ...span, clock: { now: () => now }, anomalyOrder: 'asc' }, async ({ url }) => {
      const early = (await get(url, 'limit=100')).body.data;
      expect(early.every((a: any) => Date.parse(a.detected_date) <= now)).toBe(true);
      now = Date.parse('2025-07-15T00:00:00Z');
      const later = new Map((await get(url, 'limit=100')).body.data.map((a: any) => [a.id, a.status]));
      const moved = early.filter((a: any) => later.get(a.id) !== a.status);
      expect(moved.length).toBeGreaterThan(0);
      for (const a of moved) expect(a.status === 'new' || a.status === 'acknowledged').toBe(true);
    });
  });
});
