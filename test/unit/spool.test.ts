import { describe, expect, it } from 'vitest';
import { spoolLines } from '../../src/storage/spool.js';

const columns = [{ name: 'id', type: 'VARCHAR' as const }, { name: 'cost', type: 'DOUBLE' as const }];

/** A line as the loader reads it: its place, the spec's fields (NULL when absent) and `extra`. */
function asRead(line: string): Record<string, unknown> {
  const parsed = JSON.parse(line) as Record<string, unknown>;
  return { o: parsed.o, id: parsed.id ?? null, cost: parsed.cost ?? null, extra: parsed.extra ?? null };
}

describe('spoolLines', () => {
  it('writes one JSON line per record: its place, the spec fields, and the rest as extra', () => {
    const text = spoolLines([{ id: 'a', cost: 1.5, model: 'm', tokens: 3 }, { id: 'b' }], columns);
    expect(text.split('\n').map(asRead)).toEqual([
      { o: 0, id: 'a', cost: 1.5, extra: { model: 'm', tokens: 3 } },
      { o: 1, id: 'b', cost: null, extra: null },
    ]);
  });

  it('writes a record as the API sent it, its place first and its other fields copied into extra', () => {
    const records = [{ cost: 2, id: 'a' }, {}, { id: 'c', cost: null, model: 'm' }];
    expect(spoolLines(records, columns)).toBe('{"o":0,"cost":2,"id":"a"}\n{"o":1}\n{"o":2,"id":"c","cost":null,"model":"m","extra":{"model":"m"}}');
  });

  it('builds the line field by field when a record has a field of its own named o or extra (no key twice in a line)', () => {
    const lines = spoolLines([{ id: 'a', o: 7 }, { id: 'b', extra: 'x' }], columns).split('\n');
    expect(lines).toEqual(['{"o":0,"id":"a","cost":null,"extra":{"o":7}}', '{"o":1,"id":"b","cost":null,"extra":{"extra":"x"}}']);
  });
});

describe('spoolLines values', () => {
  it('escapes strings, and writes non-finite numbers as null', () => {
    const text = spoolLines([{ id: 'a "quoted"\nline', cost: Number.NaN }, { id: 'x', cost: -0.25, nested: { a: [1, 'b'] } }], columns);
    expect(text.split('\n').map(asRead)).toEqual([
      { o: 0, id: 'a "quoted"\nline', cost: null, extra: null },
      { o: 1, id: 'x', cost: -0.25, extra: { nested: { a: [1, 'b'] } } },
    ]);
  });
});
