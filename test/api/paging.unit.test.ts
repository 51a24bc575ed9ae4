import { describe, expect, it } from 'vitest';
import type { PlannedWindow } from '../../src/state/store.js';
import { PagedTotals } from '../../src/sync/reconcile.js';
import { lineItemsStream, rollupsStream } from '../../src/sync/streams.js';
import {
  CURSOR_SAVE_MS,
  CURSOR_SAVE_PAGES,
  MAX_TRACKED_IDS,
  afterPage,
  cursorSaveDue,
  freshPaging,
  resumedPaging,
  takePage,
} from '../../src/sync/window-fetch.js';

const WINDOW: PlannedWindow = { start: '2025-01-01', end: '2025-01-07', status: 'todo', cursor: null, page: 0, fetched: false };
const item = (id: string) => ({ id, usage_date: '2025-01-02', provider_type: 'aws', net_amount_usd: 1 });

describe("a window's paging, step by step (pure)", () => {
  it('a window from its first page tracks its ids and sums the check totals; rollups (no id) sum their totals only', () => {
    const fresh = resumedPaging(lineItemsStream, WINDOW);
    expect(fresh).toMatchObject({ cursor: null, page: 0, fetched: false, rows: 0, unique: true });
    expect(fresh.idHashes).not.toBeNull();
    expect(fresh.totals).toBeInstanceOf(PagedTotals);
    const rollups = resumedPaging(rollupsStream, WINDOW);
    expect(rollups).toMatchObject({ unique: false, idHashes: null, rows: 0 });
    expect(rollups.totals).toBeInstanceOf(PagedTotals);
    // Past its first page, the earlier pages' rows are unknown: the check reads the spool.
    expect(resumedPaging(rollupsStream, { ...WINDOW, status: 'active', cursor: '1', page: 1 }).totals).toBeNull();
  });

  it("a resumed window goes on from its saved cursor; its earlier pages' ids and rows are unknown, so nothing is claimed", () => {
    const resumed = resumedPaging(lineItemsStream, { ...WINDOW, status: 'active', cursor: 'c3', page: 3 });
    expect(resumed).toMatchObject({ cursor: 'c3', page: 3, fetched: false, rows: null, unique: false, idHashes: null, totals: null });
  });

  it('a window started over after a refused cursor claims no uniqueness; after a disagreement it tracks again', () => {
    expect(freshPaging(lineItemsStream, false)).toMatchObject({ page: 0, rows: 0, unique: false, idHashes: null, totals: null });
    expect(freshPaging(lineItemsStream, true)).toMatchObject({ page: 0, rows: 0, unique: true });
  });

  it('each page moves the cursor and the page count on; the last one saves whether every id came once', () => {
    let paging = freshPaging(lineItemsStream, true);
    const take = (ids: string[], nextCursor: string | null) =>
      takePage(
        { records: ids.map(item), nextCursor },
        {
          spec: lineItemsStream,
          window: { ...WINDOW, cursor: paging.cursor },
          seenCursors: paging.seenCursors,
          idHashes: paging.idHashes,
          totals: paging.totals,
        },
      );
    const first = afterPage(paging, take(['a', 'b'], 'c1'));
    expect(first.progress).toEqual({ status: 'active', cursor: 'c1', page: 1, fetched: false });
    expect(first.paging).toMatchObject({ cursor: 'c1', page: 1, rows: 2, unique: true });
    paging = first.paging;
    const last = afterPage(paging, take(['c'], null));
    expect(last.progress).toEqual({ status: 'active', cursor: null, page: 2, fetched: true, unique: true });
    // Settled: the hashes go, the totals stay for the check.
    expect(last.paging).toMatchObject({ fetched: true, rows: 3, unique: true, idHashes: null });
    expect(last.paging.totals?.size).toBe(1);
  });

  it('an id seen twice makes the window deduplicated and its totals unusable', () => {
    let paging = freshPaging(lineItemsStream, true);
    for (const [ids, next] of [
      [['a'], 'c1'],
      [['a'], null],
    ] as const) {
      const taken = takePage(
        { records: ids.map(item), nextCursor: next },
        { spec: lineItemsStream, window: WINDOW, seenCursors: paging.seenCursors, idHashes: paging.idHashes, totals: paging.totals },
      );
      paging = afterPage(paging, taken).paging;
    }
    expect(paging).toMatchObject({ fetched: true, unique: false, idHashes: null, totals: null });
  });

  it('past the tracking limit the window is simply deduplicated, so memory stays flat', () => {
    const paging = freshPaging(lineItemsStream, true);
    for (let i = 0; i <= MAX_TRACKED_IDS; i++) paging.idHashes!.add(i);
    const next = afterPage(paging, { nextCursor: 'c1', rows: 0 });
    expect(next.paging).toMatchObject({ unique: false, idHashes: null, totals: null });
    expect(next.progress).not.toHaveProperty('unique');
  });

  it('rows stay unknown for a resumed window', () => {
    const resumed = resumedPaging(lineItemsStream, { ...WINDOW, status: 'active', cursor: 'c1', page: 1 });
    expect(afterPage(resumed, { nextCursor: null, rows: 5 }).paging.rows).toBeNull();
  });

  it('the cursor is saved every CURSOR_SAVE_PAGES pages, or CURSOR_SAVE_MS after the last save, and always after the last page', () => {
    expect(cursorSaveDue(1, 0, false)).toBe(false);
    expect(cursorSaveDue(CURSOR_SAVE_PAGES, 0, false)).toBe(true);
    expect(cursorSaveDue(1, CURSOR_SAVE_MS, false)).toBe(true);
    expect(cursorSaveDue(1, CURSOR_SAVE_MS - 1, false)).toBe(false);
    expect(cursorSaveDue(1, 0, true)).toBe(true);
  });
});
