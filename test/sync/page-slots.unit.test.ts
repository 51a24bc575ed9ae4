import { describe, expect, it } from 'vitest';
import { HEAP_RESERVE_BYTES, PAGE_HEAP_BYTES, PageSlots, slotsForHeap } from '../../src/sync/page-slots.js';
import { heapRunningShort, memoryError } from '../../src/sync/run-stop.js';

describe('page slots: the pages in memory across sources, bounded by the heap (pure)', () => {
  it('a heap of 96 MB gives a few dozen slots; a large heap at most 64; a tiny one still 2', () => {
    expect(slotsForHeap(96 * 2 ** 20)).toBe(Math.floor((96 * 2 ** 20 - HEAP_RESERVE_BYTES) / PAGE_HEAP_BYTES));
    expect(slotsForHeap(96 * 2 ** 20)).toBe(56);
    expect(slotsForHeap(16 * 2 ** 30)).toBe(64);
    expect(slotsForHeap(40 * 2 ** 20)).toBe(2);
  });

  it('a page past the last slot waits until one is given back, in order; giving back twice frees one', async () => {
    const slots = new PageSlots(2);
    const a = await slots.take();
    const b = await slots.take();
    const order: string[] = [];
    const c = slots.take().then((release) => {
      order.push('c');
      return release;
    });
    const d = slots.take().then((release) => {
      order.push('d');
      return release;
    });
    expect(slots.queued).toBe(2);
    a();
    a();
    const releaseC = await c;
    expect(order).toEqual(['c']);
    b();
    const releaseD = await d;
    expect(order).toEqual(['c', 'd']);
    releaseC();
    releaseD();
    // Both slots free again: two takes return at once.
    await slots.take();
    await slots.take();
    expect(slots.queued).toBe(0);
  });

  it('the heap runs short past 90% of its limit; the error says what happened, that progress is saved, and the fix', () => {
    expect(heapRunningShort(86, 100)).toBe(false);
    expect(heapRunningShort(91, 100)).toBe(true);
    const error = memoryError('the heap ran short (95 MB of its 100 MB)', 200);
    expect(error.code).toBe('CS_ERR_MEMORY');
    expect(error.exitCode).toBe(1);
    expect(error.message).toContain('Progress up to here is saved');
    expect(error.hint).toMatch(/--max-old-space-size=.*--source/);
  });
});
