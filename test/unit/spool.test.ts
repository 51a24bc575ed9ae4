import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropPagesAfter, linesAsArray, spoolPage, upgradePages, writePage, type SpoolColumn } from '../../src/storage/spool.js';

const columns = [
  { name: 'id', type: 'VARCHAR' as const },
  { name: 'cost', type: 'DOUBLE' as const },
];

/** A page's spool file as text. */
function spoolText(records: Record<string, unknown>[], cols: readonly SpoolColumn[] = columns): string {
  return Buffer.from(spoolPage(records, cols)).toString('utf8');
}

/** A record as the loader reads it: its place, the spec's fields (NULL when absent) and `extra`. */
function asRead(parsed: Record<string, unknown>): Record<string, unknown> {
  return { o: parsed.o, id: parsed.id ?? null, cost: parsed.cost ?? null, extra: parsed.extra ?? null };
}

describe('spoolPage', () => {
  it('writes the page as one JSON array: each record with its place, the spec fields, and the rest as extra', () => {
    const text = spoolText([{ id: 'a', cost: 1.5, model: 'm', tokens: 3 }, { id: 'b' }]);
    expect((JSON.parse(text) as Record<string, unknown>[]).map(asRead)).toEqual([
      { o: 0, id: 'a', cost: 1.5, extra: { model: 'm', tokens: 3 } },
      { o: 1, id: 'b', cost: null, extra: null },
    ]);
  });

  it('writes each record as the API sent it, its place and its other fields copied into extra after its own', () => {
    const records = [{ cost: 2, id: 'a' }, {}, { id: 'c', cost: null, model: 'm' }];
    expect(spoolText(records)).toBe('[{"cost":2,"id":"a","o":0},{"o":1},{"id":"c","cost":null,"model":"m","o":2,"extra":{"model":"m"}}]');
  });

  it('writes a record with a field of its own named o or extra as the spec fields, its own fields in extra (no key twice)', () => {
    expect(spoolText([{ id: 'a', o: 7 }, { id: 'b', extra: 'x' }, { id: 'c' }])).toBe(
      '[{"o":0,"id":"a","cost":null,"extra":{"o":7}},{"o":1,"id":"b","cost":null,"extra":{"extra":"x"}},{"id":"c","o":2}]',
    );
  });

  it('writes an empty page as an empty array', () => {
    expect(spoolText([])).toBe('[]');
  });
});

describe('spoolPage values', () => {
  it('escapes strings, writes non-finite numbers as null, and any text as UTF-8', () => {
    const records = [
      { id: 'a "quoted"\nline', cost: Number.NaN },
      { id: 'x', cost: -0.25, nested: { a: [1, 'b'] } },
      { id: '€-😀', cost: 1, note: 'ü'.repeat(400) },
    ];
    const bytes = spoolPage(records, columns);
    const text = Buffer.from(bytes).toString('utf8');
    expect(bytes.byteLength).toBe(Buffer.byteLength(text));
    expect((JSON.parse(text) as Record<string, unknown>[]).map(asRead)).toEqual([
      { o: 0, id: 'a "quoted"\nline', cost: null, extra: null },
      { o: 1, id: 'x', cost: -0.25, extra: { nested: { a: [1, 'b'] } } },
      { o: 2, id: '€-😀', cost: 1, extra: { note: 'ü'.repeat(400) } },
    ]);
  });
});

describe('pages an earlier version spooled', () => {
  // As the previous version wrote them: a JSON object a line, no newline at the end; nothing for no records.
  const previous = '{"o":0,"id":"a","cost":1.5,"extra":{"model":"m"}}\n{"o":1,"id":"b\\nc","cost":null}';

  it("reads as the same records in this version's form", () => {
    expect(JSON.parse(linesAsArray(previous))).toEqual([
      { o: 0, id: 'a', cost: 1.5, extra: { model: 'm' } },
      { o: 1, id: 'b\nc', cost: null },
    ]);
    expect(linesAsArray('')).toBe('[]');
    expect(linesAsArray(`${previous}\n`)).toBe(linesAsArray(previous));
  });

  it("are rewritten in place, and pages in this version's form and other files are left as they are", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'costsync-spool-'));
    try {
      const current = spoolText([{ id: 'z', cost: 3 }]);
      writeFileSync(join(dir, '000001.json'), previous);
      writeFileSync(join(dir, '000002.json'), '');
      writeFileSync(join(dir, '000003.json'), current);
      writeFileSync(join(dir, 'notes.txt'), 'not a page');
      await upgradePages(dir);
      expect(readFileSync(join(dir, '000001.json'), 'utf8')).toBe(linesAsArray(previous));
      expect(readFileSync(join(dir, '000002.json'), 'utf8')).toBe('[]');
      expect(readFileSync(join(dir, '000003.json'), 'utf8')).toBe(current);
      expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('not a page');
      await upgradePages(join(dir, 'missing'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('writing pages', () => {
  it('creates the window directory with the first page, overwrites a page in place, and leaves no other file', async () => {
    const root = mkdtempSync(join(tmpdir(), 'costsync-spool-'));
    const dir = join(root, 'line_items', '2025-01-01');
    try {
      await writePage(dir, 1, spoolText([{ id: 'a', cost: 1 }]));
      await writePage(dir, 2, 'cut short by a crash');
      await writePage(dir, 2, spoolText([{ id: 'b', cost: 2 }]));
      expect(readdirSync(dir).sort()).toEqual(['000001.json', '000002.json']);
      expect(JSON.parse(readFileSync(join(dir, '000002.json'), 'utf8'))).toEqual([{ id: 'b', cost: 2, o: 0 }]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a page written past the saved one (perhaps cut short) is dropped when the window resumes, with any temp file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'costsync-spool-'));
    try {
      await writePage(dir, 1, '[]');
      await writePage(dir, 2, '[]');
      writeFileSync(join(dir, '000003.json'), '[{"id":"c","co');
      writeFileSync(join(dir, '000001.json.123.abc.tmp'), "an earlier version's temp file");
      dropPagesAfter(dir, 2);
      expect(readdirSync(dir).sort()).toEqual(['000001.json', '000002.json']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
