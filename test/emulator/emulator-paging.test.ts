import { describe, expect, it } from 'vitest';
import { raw, withEmulator, SPAN } from '../support/helpers.js';

const path = (q: string) => `/api/v1/public/line-items?${q}`;

/** Follows cursors to the end; returns every page's records and meta. */
async function allPages(url: string, query: string, key = 'demo-key') {
  const pages: { data: any[]; meta: any }[] = [];
  let cursor: string | null = null;
  for (let guard = 0; guard < 1000; guard++) {
    const res = await raw(url, path(`${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`), { key });
    expect(res.status).toBe(200);
    pages.push(res.body);
    if (!res.body.meta.has_more) return pages;
    cursor = res.body.meta.next_cursor;
  }
  throw new Error('paging did not end');
}

describe('emulator line-item paging', () => {
  it('pages through every record exactly once, default limit 50, and ends with has_more false', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 37 }, async ({ url }) => {
      const pages = await allPages(url, 'start_date=2025-06-01&end_date=2025-06-04');
      const ids = pages.flatMap((p) => p.data.map((r) => r.id));
      expect(ids.length).toBe(37 * 4);
      expect(new Set(ids).size).toBe(ids.length);
      expect(pages.slice(0, -1).every((p) => p.data.length === 50)).toBe(true);
      expect(pages.at(-1)!.meta).toEqual({ next_cursor: null, has_more: false });
      const dates = new Set(pages.flatMap((p) => p.data.map((r) => r.usage_date)));
      expect(dates).toEqual(new Set(['2025-06-01', '2025-06-02', '2025-06-03', '2025-06-04']));
    });
  });

  it('honours limit up to 1000 and returns nothing outside the span', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 600 }, async ({ url }) => {
      const res = await raw(url, path('start_date=2025-06-01&end_date=2025-06-02&limit=1000'));
      expect(res.body.data).toHaveLength(1000);
      const outside = await raw(url, path('start_date=2024-01-01&end_date=2024-12-31'));
      expect(outside.body).toEqual({ data: [], error: null, meta: { next_cursor: null, has_more: false } });
    });
  });

  it('refuses tampered, foreign and mismatched cursors with VALIDATION_ERROR', async () => {
    await withEmulator(SPAN, async ({ url }) => {
      const first = await raw(url, path('start_date=2025-06-01&end_date=2025-06-02'));
      const cursor: string = first.body.meta.next_cursor;
      const tampered = `${cursor.slice(0, 5)}${cursor[5] === 'A' ? 'B' : 'A'}${cursor.slice(6)}`;
      for (const [c, q] of [
        [tampered, 'start_date=2025-06-01&end_date=2025-06-02'],
        ['not-a-cursor', 'start_date=2025-06-01&end_date=2025-06-02'],
        [cursor, 'start_date=2025-06-01&end_date=2025-06-03'],
      ] as const) {
        const res = await raw(url, path(`${q}&cursor=${encodeURIComponent(c)}`));
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_ERROR');
        expect(res.body.error.message).toMatch(/cursor/i);
      }
      await withEmulator(SPAN, async (other) => {
        const res = await raw(other.url, path(`start_date=2025-06-01&end_date=2025-06-02&cursor=${encodeURIComponent(cursor)}`));
        expect(res.status).toBe(400);
        expect(res.body.error.message).toMatch(/another server/);
      });
    });
  });

  it('expires cursors after the TTL, by the injected clock', async () => {
    let now = Date.parse('2025-07-01T00:00:00Z');
    await withEmulator({ ...SPAN, clock: { now: () => now }, faults: { cursorTtlMs: 60_000 } }, async ({ url }) => {
      const first = await raw(url, path('start_date=2025-06-01&end_date=2025-06-02'));
      const next = path(`start_date=2025-06-01&end_date=2025-06-02&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`);
      expect((await raw(url, next)).status).toBe(200);
      now += 60_001;
      const expired = await raw(url, next);
      expect(expired.status).toBe(400);
      expect(expired.body.error.message).toMatch(/expired/);
    });
  });

  it('shows the last page cursor as null, omitted or empty, as configured', async () => {
    for (const [mode, expected] of [
      ['null', { next_cursor: null, has_more: false }],
      ['omit', { has_more: false }],
      ['empty', { next_cursor: '', has_more: false }],
    ] as const) {
      await withEmulator({ ...SPAN, rowsPerDay: 3, lastPageCursor: mode }, async ({ url }) => {
        const res = await raw(url, path('start_date=2025-06-01&end_date=2025-06-01'));
        expect(res.body.meta).toEqual(expected);
      });
    }
  });

  it('can shuffle records within pages and repeat records across pages', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 200, lineItemOrder: 'shuffled', pageOverlapRate: 1 }, async ({ url }) => {
      const pages = await allPages(url, 'start_date=2025-06-01&end_date=2025-06-01&limit=40');
      const ids = pages.flatMap((p) => p.data.map((r) => r.id));
      expect(ids.length).toBeGreaterThan(200);
      expect(new Set(ids).size).toBe(200);
      const firstIds = pages[0]!.data.map((r) => r.id);
      expect(firstIds).not.toEqual([...firstIds].sort());
    });
  });

  it('--cursor-mode offset: cursors are an offset into the data as it is at each request, so a restatement between pages shifts them', async () => {
    const restatement = { days: 30, changeRate: 0, deleteRate: 0.2 };
    await withEmulator({ ...SPAN, rowsPerDay: 40, cursorMode: 'offset', restatement }, async (emulator) => {
      const query = 'start_date=2025-06-01&end_date=2025-06-02&limit=30';
      const stable = (await allPages(emulator.url, query)).flatMap((p) => p.data.map((r) => r.id));
      expect(stable).toHaveLength(80);
      const first = await raw(emulator.url, path(query));
      expect(JSON.parse(Buffer.from(first.body.meta.next_cursor, 'base64url').toString())).toEqual({
        offset: 30,
        s: '2025-06-01',
        e: '2025-06-02',
      });
      emulator.restate();
      const second = await raw(emulator.url, path(`${query}&cursor=${first.body.meta.next_cursor}`));
      const live = (await allPages(emulator.url, query)).flatMap((p) => p.data.map((r) => r.id));
      // The second page starts 30 live rows in: rows deleted among the first 30 shift later rows past it.
      expect(second.body.data.map((r: { id: string }) => r.id)).toEqual(live.slice(30, 60));
      const firstIds: string[] = first.body.data.map((r: { id: string }) => r.id);
      const skipped = live.slice(0, 30).filter((id) => !firstIds.includes(id));
      expect(skipped.length).toBeGreaterThan(0);
    });
  });

  it('--restate-at-page restates between two pages of one query; --restate-add-rate adds late rows that rollups count', async () => {
    const restatement = { days: 30, changeRate: 0, deleteRate: 0, addRate: 0.5 };
    await withEmulator({ ...SPAN, rowsPerDay: 20, restateAtPage: 1, restatement }, async (emulator) => {
      const pages = await allPages(emulator.url, 'start_date=2025-06-01&end_date=2025-06-01&limit=10');
      // 20 rows at the first page; the restatement before the second adds 10 to the day.
      expect(pages.flatMap((p) => p.data)).toHaveLength(30);
      const rollup = await raw(emulator.url, '/api/v1/public/rollups/daily?start_date=2025-06-01&end_date=2025-06-01&group_by=category');
      const total = rollup.body.data.reduce((sum: number, r: { cost_usd: number }) => sum + r.cost_usd, 0);
      const items = pages.flatMap((p) => p.data).reduce((sum: number, r: { net_amount_usd: number }) => sum + r.net_amount_usd, 0);
      expect(total).toBeCloseTo(items, 6);
    });
  });
});
