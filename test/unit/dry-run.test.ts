import { describe, expect, it } from 'vitest';
import { dryRunText, expectedLineItemPages, storedSpan, type SourcePlan } from '../../src/sync/dry-run.js';

const day = (date: string, storedRows: number | null, usd: number | null = null) => ({ date, storedRows, usd });

describe('sync --dry-run estimates', () => {
  it('counts pages from stored rows, else rollup dollars at the warehouse dollars per row; unknown without either', () => {
    // 2,500 stored + 1,500 priced ($3,000 at $2 a row) = 4,000 rows = 4 pages, plus half a page for each of 2 windows.
    expect(expectedLineItemPages([day('2025-06-01', 2500), day('2025-06-02', null, 3000)], 2, 2)).toBe(5);
    expect(expectedLineItemPages([day('2025-06-01', 2500), day('2025-06-02', null)], 2, 1)).toBeNull();
    expect(expectedLineItemPages([day('2025-06-01', null, 100)], null, 1)).toBeNull();
  });

  it('names the stored dates the lookback fetches again', () => {
    expect(storedSpan([day('2025-06-28', 40), day('2025-06-29', 40), day('2025-06-30', null)])).toBe('2025-06-28..2025-06-29 (2 days)');
    expect(storedSpan([day('2025-06-30', null)])).toBeNull();
  });

  it('prints each stream, the total at the rate limit, and that nothing was written', () => {
    const plan: SourcePlan = {
      source: 'default', notices: [], requests: 120, seconds: 120, rateLimit: 60, rollupsRequests: 1,
      streams: [
        { stream: 'line_items', range: '2025-01-01..2025-06-30', windows: 7, resumed: false, requests: 110, minRequests: 14, refetches: null, basis: 'b', replaces: null, drops: null },
        { stream: 'anomalies', range: '2025-01-01..2025-06-30', windows: 1, resumed: false, requests: null, minRequests: 1, refetches: null, basis: 'c', replaces: null, drops: null },
      ],
    };
    const text = dryRunText([plan], false);
    expect(text).toMatch(/line_items: 2025-01-01\.\.2025-06-30, 7 window\(s\), about 110 request\(s\)/);
    expect(text).toMatch(/anomalies: .* at least 1 request/);
    expect(text).toMatch(/about 120 request\(s\) in all: 2 min at 60 requests a minute \(at least/);
    expect(text).toMatch(/Dry run: nothing was written/);
  });

  it('names what a full refresh replaces and what --drop-before deletes', () => {
    const plan: SourcePlan = {
      source: 'default', notices: [], requests: 10, seconds: 10, rateLimit: 60, rollupsRequests: 0,
      streams: [{
        stream: 'line_items', range: '2025-01-01..2025-06-30', windows: 7, resumed: false, requests: 10, minRequests: 7, refetches: '2025-01-01..2025-06-30 (181 days)',
        basis: 'b', replaces: '2025-02-01..2025-06-30', drops: '40 row(s) dated 2025-01-01..2025-01-31',
      }],
    };
    const text = dryRunText([plan], false);
    expect(text).toMatch(/deleted first \(--drop-before\): 40 row\(s\) dated 2025-01-01\.\.2025-01-31/);
    expect(text).toMatch(/replaced \(--full-refresh\): every stored date of 2025-02-01\.\.2025-06-30; nothing outside it is deleted/);
  });
});
