import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import {
  CARRIED_VERSION,
  STATE_VERSION,
  decodeCarried,
  decodeLakeObject,
  decodeStateFile,
  encodeCarried,
  encodeLakeObject,
  encodeStateFile,
} from '../../src/state/progress.js';
import type { SyncState } from '../../src/state/store.js';

const STATE: SyncState = {
  version: STATE_VERSION,
  source: { name: 'w1', baseUrl: 'http://api', keyFingerprint: 'abc' },
  streams: {
    line_items: {
      syncedFrom: '2025-06-01',
      syncedThrough: '2025-06-30',
      covered: [{ from: '2025-06-01', to: '2025-06-30' }],
      lastSuccessAt: null,
      pending: {
        from: '2025-06-29',
        to: '2025-06-30',
        fullRefresh: false,
        windows: [{ start: '2025-06-29', end: '2025-06-30', status: 'active', cursor: 'c2', page: 2, fetched: false }],
      },
    },
    anomalies: { watermark: '2025-06-30T06:00:00Z', lastSuccessAt: null },
  },
  updatedAt: '2025-07-01T00:00:00.000Z',
};

const refusal = (text: string) => {
  try {
    decodeStateFile(text, '/s/state.json');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error(`accepted ${text}`);
};

describe('the progress codec', () => {
  it('reads back the state file it writes, cursors and coverage included', () => {
    expect(decodeStateFile(encodeStateFile(STATE), '/s/state.json')).toEqual(STATE);
  });

  it("reads a version 1 file as the default source's, at this version", () => {
    const { source: _source, ...v1 } = { ...STATE, version: 1 };
    const read = decodeStateFile(JSON.stringify(v1), '/s/old.json');
    expect(read.version).toBe(STATE_VERSION);
    expect(read.source.name).toBe('default');
    expect(read.streams).toEqual(STATE.streams);
  });

  it('refuses text that is not JSON, not a state, or of a version it does not read, naming the file', () => {
    expect(refusal('{nope')).toContain('/s/state.json is not valid JSON');
    expect(refusal('{"streams": {}}')).toContain('is not a costsync state file');
    expect(refusal('{"version": 2, "streams": null}')).toContain('is not a costsync state file');
    expect(refusal('{"version": 9, "streams": {}}')).toContain('written by a newer costsync (state version 9; this one reads 2)');
    expect(refusal('{"version": 0, "streams": {}}')).toContain('older than any this costsync can read');
  });

  it('carries the streams as text that compares equal for equal states', () => {
    const carried = { line_items: STATE.streams.line_items! };
    expect(decodeCarried(encodeCarried(carried))).toEqual(carried);
    expect(encodeCarried(decodeCarried(encodeCarried(carried)))).toBe(encodeCarried(carried));
    expect(JSON.parse(encodeCarried(carried))).toEqual({ version: CARRIED_VERSION, streams: carried });
  });

  it('reads the carried row an older costsync wrote (the streams alone) and refuses a newer one', () => {
    const carried = { line_items: STATE.streams.line_items! };
    expect(decodeCarried(JSON.stringify(carried))).toEqual(carried);
    expect(() => decodeCarried(JSON.stringify({ version: CARRIED_VERSION + 1, streams: carried }))).toThrow(
      /written by a newer costsync \(carried version 2; this one reads 1\)/,
    );
  });

  it('reads a lake state object of its version and source only', () => {
    const object = {
      source: 'w1',
      run_id: 'r1',
      written_at: '2025-07-01T00:00:00Z',
      state: { anomalies: STATE.streams.anomalies! },
      tables: { line_items: ['2025-06-01'] },
    };
    const text = encodeLakeObject(object);
    expect(decodeLakeObject(text, 'w1')).toEqual({ version: 1, ...object });
    expect(decodeLakeObject(text, 'w2')).toBeNull();
    expect(decodeLakeObject(text.replace('"version":1', '"version":2'), 'w1')).toBeNull();
    expect(decodeLakeObject('not json', 'w1')).toBeNull();
  });

  it('a progress is a value: a change is a new value, and the compiler refuses changing one in place', () => {
    const state = decodeStateFile(encodeStateFile(STATE), '/s/state.json');
    const changed: SyncState = { ...state, streams: { ...state.streams, anomalies: { watermark: null, lastSuccessAt: null } } };
    // Each assignment below fails `tsc -p tsconfig.test.json` (npm run lint) should that field become writable.
    if (changed === state) {
      // @ts-expect-error: a stream's state is replaced, never assigned in place
      state.streams.anomalies = undefined;
      // @ts-expect-error: the file's time is set in the value the store writes
      state.updatedAt = null;
      // @ts-expect-error: a plan is replaced whole
      state.streams.line_items!.pending = null;
      // @ts-expect-error: a range is a value
      state.streams.line_items!.covered![0]!.to = '2025-06-02';
      // @ts-expect-error: a window is a value
      state.streams.line_items!.pending!.windows[0]!.page = 3;
    }
    expect(state).toEqual(STATE);
    expect(changed.streams.anomalies).toEqual({ watermark: null, lastSuccessAt: null });
  });
});
