import { describe, expect, it } from 'vitest';
import { emptyStats } from '../../src/sync/context.js';
import { etaSeconds, summaryTable } from '../../src/progress.js';

describe('progress', () => {
  it('never promises an ETA faster than the rate limit allows', () => {
    expect(etaSeconds(120, 50, 60)).toBe(120);
    expect(etaSeconds(120, 2000, 60)).toBe(240);
    expect(etaSeconds(0, 2000, 60)).toBe(0);
  });

  it('prints what changed per stream', () => {
    const table = summaryTable({ line_items: { ...emptyStats(), inserted: 4500, pages: 5, requests: 6, retries: 1 } });
    expect(table.split('\n')[0]).toMatch(/^stream\s+inserted\s+updated\s+deleted\s+pages\s+requests\s+retries\s+429s\s+warnings$/);
    expect(table.split('\n')[1]).toMatch(/^line_items\s+4500\s+0\s+0\s+5\s+6\s+1\s+0\s+0$/);
  });
});
