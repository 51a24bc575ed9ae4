import { describe, expect, it } from 'vitest';
import { windowAdvanced, windowDone, windowRestarted } from '../../src/plan/windows.js';
import { carriedState } from '../../src/state/carried.js';
import { CarriedCopy, SourceState, type CarriedStore } from '../../src/state/source-state.js';
import type { PlannedWindow, SyncState } from '../../src/state/store.js';
import { decodeCarried } from '../../src/state/progress.js';

function stateWithWindows(): { state: SyncState; windows: PlannedWindow[] } {
  const windows: PlannedWindow[] = [
    { start: '2025-06-01', end: '2025-06-10', status: 'todo', cursor: null, page: 0, fetched: false },
    { start: '2025-06-11', end: '2025-06-20', status: 'todo', cursor: null, page: 0, fetched: false },
  ];
  const state: SyncState = {
    version: 2,
    source: { name: 'eu', baseUrl: '', keyFingerprint: '' },
    streams: {
      line_items: {
        syncedFrom: null,
        syncedThrough: null,
        lastSuccessAt: null,
        pending: { from: '2025-06-01', to: '2025-06-20', fullRefresh: false, windows },
      },
    },
    updatedAt: null,
  };
  return { state, windows };
}

describe("a source's state, changed through its owner (no I/O)", () => {
  it('tells the file whether something the warehouse carries changed since the last checkpoint: a plan or a window done, not a cursor', async () => {
    const { state, windows } = stateWithWindows();
    const saves: boolean[] = [];
    const owner = new SourceState(state, {
      save: async (_state, carriedChanged) => {
        saves.push(carriedChanged);
      },
      carry: async () => undefined,
    });
    await owner.checkpoint();
    let first = windowAdvanced(windows[0]!, { status: 'active', cursor: 'c1', page: 1, fetched: false });
    await owner.checkpoint({ stream: 'line_items', window: first });
    first = windowAdvanced(first, { status: 'active', cursor: null, page: 2, fetched: true, unique: true });
    await owner.checkpoint({ stream: 'line_items', window: first });
    await owner.checkpoint({ stream: 'line_items', window: windowDone(first) });
    await owner.checkpoint({ stream: 'line_items', window: windowRestarted(windows[1]!) });
    await owner.checkpoint({ stream: 'anomalies', state: { watermark: null, lastSuccessAt: null } });
    expect(saves).toEqual([true, false, false, true, false, true]);
    // Windows are values: the state holds their new values, the caller's stay as they were.
    const [done, restarted] = owner.current.streams.line_items!.pending!.windows;
    expect(done).toEqual({ start: '2025-06-01', end: '2025-06-10', status: 'done', cursor: null, page: 2, fetched: true });
    expect(restarted).toMatchObject({ status: 'active', cursor: null, page: 0, fetched: false });
    expect(windows[0]).toMatchObject({ status: 'todo', page: 0 });
  });
});

/** The state with window `i` of its line items done, as its owner makes it: a new value (a new plan, never a changed one). */
function markDone(state: SyncState, i: number): SyncState {
  const stream = state.streams.line_items!;
  const plan = stream.pending!;
  return {
    ...state,
    streams: {
      ...state.streams,
      line_items: {
        ...stream,
        pending: { ...plan, windows: plan.windows.map((w, j) => (j === i ? { ...w, status: 'done' as const } : w)) },
      },
    },
  };
}

/** A warehouse's carried copy, faked: what it wrote, and transactions settled by the test. */
function fakeStore() {
  const writes: string[] = [];
  let settles: ((committed: boolean) => void)[] = [];
  const store: CarriedStore = {
    write: async (text) => {
      writes.push(text);
    },
    onSettle: (fn) => settles.push(fn),
    transaction: async (fn) => {
      await fn();
      settle(true);
    },
  };
  const settle = (committed: boolean) => {
    const now = settles;
    settles = [];
    for (const fn of now) fn(committed);
  };
  return { store, writes, settle };
}

describe('the copy of the state the warehouse carries (no I/O)', () => {
  it("a window's commit carries it done; a rolled-back one is written again by the next carry; settle writes only what differs", async () => {
    const { state, windows } = stateWithWindows();
    const { store, writes, settle } = fakeStore();
    const copy = new CarriedCopy(store, state, true);
    const done = { stream: 'line_items' as const, start: windows[0]!.start, end: windows[0]!.end };
    await copy.carry(state, done);
    expect(writes).toHaveLength(1);
    expect(decodeCarried(writes[0]!)).toEqual(carriedState(state, [done]));
    settle(false);
    await copy.carry(state, done);
    expect(writes).toHaveLength(2);
    settle(true);
    const first = markDone(state, 0);
    // The warehouse holds this state already: nothing more is written.
    copy.follow(first);
    await copy.settle();
    expect(writes).toHaveLength(2);
    const second = markDone(first, 1);
    copy.follow(second);
    await copy.settle();
    expect(writes).toHaveLength(3);
    expect(decodeCarried(writes[2]!)).toEqual(carriedState(second));
  });

  it('a source the warehouse carries nothing for is written at its first settle; a failed write fails the settle', async () => {
    const { state } = stateWithWindows();
    const { store, writes } = fakeStore();
    await new CarriedCopy(store, state, false).settle();
    expect(writes).toHaveLength(1);
    const failing = new CarriedCopy({ ...store, write: async () => Promise.reject(new Error('disk full')) }, state, false);
    failing.follow();
    await expect(failing.settle()).rejects.toThrow('disk full');
  });
});
