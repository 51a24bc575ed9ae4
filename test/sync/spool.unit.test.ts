import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropPagesAfter, linesAsArray, pageAsRows, spoolPage, upgradePages, writePage, type SpoolColumn } from '../../src/storage/spool.js';

const columns = [
  { name: 'id', type: 'VARCHAR' as const },
  { name: 'cost', type: 'DOUBLE' as const },
];

/** A page's spool file as text. */
function spoolText(records: Record<string, unknown>[], cols: readonly SpoolColumn[] = columns): string {
  return Buffer.from(spoolPage(records, cols)).toString('utf8');
}

/** A row as the loader reads it: its place, the spec's fields (NULL when absent) and `extra`. */
function asRead(row: unknown[]): Record<string, unknown> {
  const [o, id, cost, extra] = row;
  return { o, id, cost, extra };
}

describe('spoolPage', () => {
  it('writes the page as one JSON array of rows: each record as its place, the spec fields, and the rest as extra', () => {
    const text = spoolText([{ id: 'a', cost: 1.5, model: 'm', tokens: 3 }, { id: 'b' }]);
    expect((JSON.parse(text) as unknown[][]).map(asRead)).toEqual([
      { o: 0, id: 'a', cost: 1.5, extra: { model: 'm', tokens: 3 } },
      { o: 1, id: 'b', cost: null, extra: null },
    ]);
  });

  it('writes the spec fields in the columns order, a missing one as null, every other field once (in extra)', () => {
    const records = [{ cost: 2, id: 'a' }, {}, { id: 'c', cost: null, model: 'm' }];
    expect(spoolText(records)).toBe('[[0,"a",2,null],[1,null,null,null],[2,"c",null,{"model":"m"}]]');
    expect(records).toEqual([{ cost: 2, id: 'a' }, {}, { id: 'c', cost: null, model: 'm' }]);
  });

  it('writes a field of its own named o or extra in extra, like any other', () => {
    expect(spoolText([{ id: 'a', o: 7 }, { id: 'b', extra: 'x' }, { id: 'c' }])).toBe(
      '[[0,"a",null,{"o":7}],[1,"b",null,{"extra":"x"}],[2,"c",null,null]]',
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
    expect((JSON.parse(text) as unknown[][]).map(asRead)).toEqual([
      { o: 0, id: 'a "quoted"\nline', cost: null, extra: null },
      { o: 1, id: 'x', cost: -0.25, extra: { nested: { a: [1, 'b'] } } },
      { o: 2, id: '€-😀', cost: 1, extra: { note: 'ü'.repeat(400) } },
    ]);
  });
});

describe('pages an earlier version spooled', () => {
  // As the version before last wrote them: a JSON object a line, no newline at the end; nothing for no records.
  const lines = '{"o":0,"id":"a","cost":1.5,"extra":{"model":"m"}}\n{"o":1,"id":"b\\nc","cost":null}';
  // As the last version wrote them: one array of the records, each with its place and its other fields also in extra.
  const objects =
    '[{"id":"a","cost":1.5,"model":"m","o":0,"extra":{"model":"m"}},{"o":1,"id":"b","cost":null,"extra":{"o":7}},{"id":"c","o":2}]';

  it("reads as the same records in this version's form", () => {
    expect(JSON.parse(linesAsArray(lines))).toEqual([
      { o: 0, id: 'a', cost: 1.5, extra: { model: 'm' } },
      { o: 1, id: 'b\nc', cost: null },
    ]);
    expect(linesAsArray('')).toBe('[]');
    expect(linesAsArray(`${lines}\n`)).toBe(linesAsArray(lines));
    expect(pageAsRows(lines, columns)).toBe('[[0,"a",1.5,{"model":"m"}],[1,"b\\nc",null,null]]');
    expect(pageAsRows(objects, columns)).toBe('[[0,"a",1.5,{"model":"m"}],[1,"b",null,{"o":7}],[2,"c",null,null]]');
    expect(pageAsRows('', columns)).toBe('[]');
    expect(pageAsRows('[]', columns)).toBe('[]');
  });

  it("are rewritten in place, and pages in this version's form and other files are left as they are", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'costsync-spool-'));
    try {
      const current = spoolText([{ id: 'z', cost: 3 }]);
      writeFileSync(join(dir, '000001.json'), lines);
      writeFileSync(join(dir, '000002.json'), '');
      writeFileSync(join(dir, '000003.json'), current);
      writeFileSync(join(dir, '000004.json'), objects);
      writeFileSync(join(dir, '000005.json'), '[]');
      writeFileSync(join(dir, 'notes.txt'), 'not a page');
      await upgradePages(dir, columns);
      expect(readFileSync(join(dir, '000001.json'), 'utf8')).toBe(pageAsRows(lines, columns));
      expect(readFileSync(join(dir, '000002.json'), 'utf8')).toBe('[]');
      expect(readFileSync(join(dir, '000003.json'), 'utf8')).toBe(current);
      expect(readFileSync(join(dir, '000004.json'), 'utf8')).toBe(pageAsRows(objects, columns));
      expect(readFileSync(join(dir, '000005.json'), 'utf8')).toBe('[]');
      expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('not a page');
      await upgradePages(join(dir, 'missing'), columns);
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
      expect(JSON.parse(readFileSync(join(dir, '000002.json'), 'utf8'))).toEqual([[0, 'b', 2, null]]);
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
