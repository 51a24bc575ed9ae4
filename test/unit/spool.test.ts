import { describe, expect, it } from 'vitest';
import { spoolLines } from '../../src/storage/spool.js';

describe('spoolLines', () => {
  it('writes one JSON line per record: its place, the spec fields, and the rest as extra', () => {
    const columns = [{ name: 'id', type: 'VARCHAR' as const }, { name: 'cost', type: 'DOUBLE' as const }];
    const text = spoolLines([{ id: 'a', cost: 1.5, model: 'm', tokens: 3 }, { id: 'b' }], columns);
    expect(text.split('\n').map((l) => JSON.parse(l))).toEqual([
      { o: 0, id: 'a', cost: 1.5, extra: { model: 'm', tokens: 3 } },
      { o: 1, id: 'b', cost: null, extra: null },
    ]);
  });
});

describe('spoolLines values', () => {
  it('escapes strings, and writes non-finite numbers and missing fields as null', () => {
    const columns = [{ name: 'id', type: 'VARCHAR' as const }, { name: 'cost', type: 'DOUBLE' as const }];
    const text = spoolLines([{ id: 'a "quoted"\nline', cost: Number.NaN }, { id: 'x', cost: -0.25, nested: { a: [1, 'b'] } }], columns);
    expect(text.split('\n').map((l) => JSON.parse(l))).toEqual([
      { o: 0, id: 'a "quoted"\nline', cost: null, extra: null },
      { o: 1, id: 'x', cost: -0.25, extra: { nested: { a: [1, 'b'] } } },
    ]);
  });
});
