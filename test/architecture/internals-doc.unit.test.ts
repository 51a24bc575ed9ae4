import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/internals.md names every file under `src/`. The rule: a file is named when a line of the doc's
 * Layout block (the code block under `## Layout`) starts with its path from the repository's root,
 * `src/sync/runner.ts`, so two files with the same name in different directories are never confused.
 * Lines that start with a directory (`src/sync/`) introduce a group and name no file.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC = join(ROOT, 'docs', 'internals.md');

/** Every file under `dir`, as a path from the repository's root with `/` separators. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [relative(ROOT, path).split(sep).join('/')];
  });
}

/** The lines of the code block under `## Layout`. */
function layoutLines(doc: string): string[] {
  const lines = doc.split('\n');
  const heading = lines.indexOf('## Layout');
  expect(heading, 'docs/internals.md has a "## Layout" heading').toBeGreaterThanOrEqual(0);
  const open = lines.findIndex((line, i) => i > heading && line.startsWith('```'));
  const close = lines.findIndex((line, i) => i > open && line.startsWith('```'));
  expect(open, 'the Layout section has a code block').toBeGreaterThan(heading);
  expect(close, 'the Layout code block is closed').toBeGreaterThan(open);
  return lines.slice(open + 1, close);
}

/**
 * The `src/` paths the Layout block's lines start with (files, and directories ending in `/`), each followed
 * on its line by what it is: a bare path names nothing. Pure.
 */
function layoutEntries(lines: readonly string[]): string[] {
  return lines.flatMap((line) => {
    const named = /^(src\/\S*)\s+\S/.exec(line);
    return named === null ? [] : [named[1]!];
  });
}

const doc = readFileSync(DOC, 'utf8');
const files = filesUnder(join(ROOT, 'src')).sort();
const entries = layoutEntries(layoutLines(doc));

describe('docs/internals.md', () => {
  it('names every file under src/ by its path, at the start of a line of its Layout block', () => {
    expect(files.length).toBeGreaterThan(0);
    const named = new Set(entries);
    const missing = files.filter((file) => !named.has(file));
    expect(missing, `files under src/ that docs/internals.md's Layout does not name:\n${missing.join('\n')}`).toEqual([]);
  });

  it('counts a file named only by a line that says what it is', () => {
    expect(layoutEntries(['src/a.ts', 'src/b.ts   ', 'src/c.ts          the c', 'src/d/   the d group', '  src/e.ts the e'])).toEqual([
      'src/c.ts',
      'src/d/',
    ]);
  });

  it('names each file once in its Layout block', () => {
    const repeated = entries.filter((entry, i) => entries.indexOf(entry) !== i);
    expect(repeated, `named more than once in docs/internals.md's Layout:\n${repeated.join('\n')}`).toEqual([]);
  });

  it('names no file or directory under src/ that does not exist', () => {
    // Anywhere in the doc, prose included: a `src/…` path is stale when nothing is at it.
    const mentioned = new Set([...doc.matchAll(/(?<![\w./-])src\/[\w./-]*[\w/]/g)].map((m) => m[0]));
    const stale = [...mentioned].filter((path) => !existsSync(join(ROOT, path))).sort();
    expect(stale, `paths in docs/internals.md that do not exist:\n${stale.join('\n')}`).toEqual([]);
  });
});
