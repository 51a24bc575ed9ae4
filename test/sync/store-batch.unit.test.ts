import { describe, expect, it } from 'vitest';
import { MAX_GROUP } from '../../src/storage/write-queue.js';
import { ROW_GROUP_ROWS, STORE_BATCH_ROWS, storeNow } from '../../src/sync/store-batch.js';

const busy = { fetching: 2, queued: 5 };
const open = { maxWaitMs: 300_000, ending: false };
/** Waiting windows that have just started to wait. */
const fresh = (windows: number, rows: number) => ({ windows, rows, waitedMs: 0 });

describe('when fetched windows are stored (storeNow)', () => {
  it('nothing waiting is nothing to store, even at the end', () => {
    expect(storeNow(fresh(0, 0), { fetching: 0, queued: 0 }, { ...open, ending: true })).toBe(false);
  });

  it('small windows wait while others are fetched, until their rows fill three row groups', () => {
    expect(STORE_BATCH_ROWS).toBe(3 * ROW_GROUP_ROWS);
    expect(storeNow(fresh(3, 150_000), busy, open)).toBe(false);
    expect(storeNow(fresh(3, STORE_BATCH_ROWS - 1), busy, open)).toBe(false);
    expect(storeNow(fresh(3, STORE_BATCH_ROWS), busy, open)).toBe(true);
  });

  it('one large window goes at once', () => {
    expect(storeNow(fresh(1, 1_500_000), busy, open)).toBe(true);
  });

  it('a window whose rows are not all known (resumed) goes at once', () => {
    expect(storeNow(fresh(1, Infinity), busy, open)).toBe(true);
  });

  it("at most one transaction's worth of windows wait, however small", () => {
    expect(storeNow(fresh(MAX_GROUP - 1, 10), busy, open)).toBe(false);
    expect(storeNow(fresh(MAX_GROUP, 10), busy, open)).toBe(true);
  });

  it('they wait only for windows being fetched or queued: with none, they go', () => {
    expect(storeNow(fresh(1, 10), { fetching: 1, queued: 0 }, open)).toBe(false);
    expect(storeNow(fresh(1, 10), { fetching: 0, queued: 1 }, open)).toBe(false);
    expect(storeNow(fresh(1, 10), { fetching: 0, queued: 0 }, open)).toBe(true);
  });

  it('they wait at most maxWaitMs (half the publish interval), and not at all under --publish-interval 0', () => {
    expect(storeNow({ windows: 1, rows: 10, waitedMs: 299_999 }, busy, open)).toBe(false);
    expect(storeNow({ windows: 1, rows: 10, waitedMs: 300_000 }, busy, open)).toBe(true);
    expect(storeNow(fresh(1, 10), busy, { maxWaitMs: 0, ending: false })).toBe(true);
  });

  it('a stop or a failure stores what waits', () => {
    expect(storeNow(fresh(1, 10), busy, { ...open, ending: true })).toBe(true);
  });
});
