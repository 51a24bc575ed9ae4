import { describe, expect, it } from 'vitest';
import { CarriedText, carriedState, reconcileCarried } from '../../src/state/carried.js';
import type { SyncState } from '../../src/state/store.js';

function state(windows: SyncState['streams']['line_items']): SyncState {
  return {
    version: 2,
    source: { name: 'eu', baseUrl: 'http://x', keyFingerprint: 'abc' },
    updatedAt: null,
    streams: { line_items: windows, anomalies: { watermark: '2025-06-30T10:00:00.000Z', lastSuccessAt: null } },
  };
}

const midWindow = state({
  syncedFrom: null,
  syncedThrough: null,
  lastSuccessAt: null,
  pending: {
    from: '2025-06-01',
    to: '2025-06-20',
    fullRefresh: false,
    windows: [
      { start: '2025-06-01', end: '2025-06-10', status: 'done', cursor: null, page: 4, fetched: false },
      { start: '2025-06-11', end: '2025-06-20', status: 'active', cursor: 'c-3', page: 3, fetched: false, unique: true },
    ],
  },
});

describe('the state the warehouse carries', () => {
  it('keeps windows done and watermarks, drops mid-window cursors and page counts', () => {
    const carried = carriedState(midWindow);
    expect(carried.line_items!.pending!.windows).toEqual([
      { start: '2025-06-01', end: '2025-06-10', status: 'done', cursor: null, page: 0, fetched: false },
      { start: '2025-06-11', end: '2025-06-20', status: 'todo', cursor: null, page: 0, fetched: false },
    ]);
    expect(carried.anomalies).toEqual(midWindow.streams.anomalies);
    // The input is not changed.
    expect(midWindow.streams.line_items!.pending!.windows[1]!.cursor).toBe('c-3');
  });

  it('marks the window being committed done, for the transaction that commits it', () => {
    const carried = carriedState(midWindow, [{ stream: 'line_items', start: '2025-06-11', end: '2025-06-20' }]);
    expect(carried.line_items!.pending!.windows.map((w) => w.status)).toEqual(['done', 'done']);
    expect(
      carriedState(midWindow, [{ stream: 'rollups', start: '2025-06-11', end: '2025-06-20' }]).line_items!.pending!.windows[1]!.status,
    ).toBe('todo');
  });

  it('marks every window of a grouped commit done, whatever stream each is of', () => {
    const carried = carriedState(midWindow, [
      { stream: 'line_items', start: '2025-06-11', end: '2025-06-20' },
      { stream: 'rollups', start: '2025-06-01', end: '2025-06-10' },
    ]);
    expect(carried.line_items!.pending!.windows.map((w) => w.status)).toEqual(['done', 'done']);
    expect(carriedState(midWindow, []).line_items!.pending!.windows.map((w) => w.status)).toEqual(['done', 'todo']);
  });

  it('a state file that agrees keeps its cursors; one that disagrees, or none, yields to the warehouse with a notice', () => {
    const carried = carriedState(midWindow);
    expect(reconcileCarried(midWindow, true, carried, 'eu')).toEqual({ state: midWindow, notice: null });
    expect(reconcileCarried(midWindow, true, null, 'eu')).toEqual({ state: midWindow, notice: null });

    const ahead = carriedState(midWindow, [{ stream: 'line_items', start: '2025-06-11', end: '2025-06-20' }]);
    const behind = reconcileCarried(midWindow, true, ahead, 'eu');
    expect(behind.state.streams).toEqual(ahead);
    expect(behind.notice).toMatch(/disagrees with the warehouse/);

    const fresh: SyncState = { ...midWindow, streams: {} };
    const adopted = reconcileCarried(fresh, false, carried, 'eu');
    expect(adopted.state.streams).toEqual(carried);
    expect(adopted.state.source).toEqual(midWindow.source);
    expect(adopted.notice).toMatch(/going on from the state the warehouse carries/);
  });
});

describe('the carried text the warehouse holds (CarriedText)', () => {
  it("takes a written text as the warehouse's only once its transaction commits", () => {
    const text = new CarriedText('plan');
    expect(text.differs('plan + w1')).toBe(true);
    text.wrote('plan + w1');
    // Inside the transaction the write is seen; outside, the warehouse still holds what committed.
    expect(text.differs('plan + w1')).toBe(false);
    expect(text.committed).toBe('plan');
    text.settled(true);
    expect(text.committed).toBe('plan + w1');
    expect(text.differs('plan + w1')).toBe(false);
  });

  it('after a rollback (a group that failed after the carry), the window stored again on its own writes the same text again', () => {
    const text = new CarriedText('plan');
    text.wrote('plan + w1');
    text.settled(false);
    expect(text.committed).toBe('plan');
    // Skipping this write as unchanged left the warehouse without a window whose rows committed.
    expect(text.differs('plan + w1')).toBe(true);
    text.wrote('plan + w1');
    text.settled(true);
    expect(text.committed).toBe('plan + w1');
  });

  it("commits the last of several texts one transaction wrote (a group with two of the source's windows), told once per write", () => {
    const text = new CarriedText(null);
    text.wrote('plan + w1');
    expect(text.differs('plan + w1 + w2')).toBe(true);
    text.wrote('plan + w1 + w2');
    text.settled(true);
    text.settled(true);
    expect(text.committed).toBe('plan + w1 + w2');
    // A transaction that wrote nothing of this source's changes nothing, committed or not.
    text.settled(false);
    text.settled(true);
    expect(text.committed).toBe('plan + w1 + w2');
  });

  it('a rollback after several writes leaves the text committed before, and the next transaction compares with it', () => {
    const text = new CarriedText('plan');
    text.wrote('plan + w1');
    text.wrote('plan + w1 + w2');
    text.settled(false);
    text.settled(false);
    expect(text.committed).toBe('plan');
    expect(text.differs('plan')).toBe(false);
    expect(text.differs('plan + w1')).toBe(true);
  });
});
