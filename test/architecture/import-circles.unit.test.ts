import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

/** Every TypeScript file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.c?ts$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

/** Each file's imports of other files of src, as TypeScript's own scanner reads them (type-only imports and re-exports included). */
function importGraph(): Map<string, string[]> {
  const files = sources(SRC);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map((i) => i.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => resolve(dirname(file), name.replace(/\.c?js$/, '.ts')))
      .filter((target) => known.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The strongly connected components of more than one file (Tarjan's algorithm). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    order.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, order.get(w)!));
    }
    if (low.get(v) === order.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.map((f) => relative(SRC, f)).sort());
    }
  };
  for (const v of graph.keys()) if (!order.has(v)) visit(v);
  return found;
}

describe('the layers of src', () => {
  it('no circle of imports spans two folders, type-only imports included', () => {
    const graph = importGraph();
    // The scanner sees the imports at all: hundreds of them.
    expect([...graph.values()].flat().length).toBeGreaterThan(300);
    const across = circles(graph).filter((c) => new Set(c.map((f) => dirname(f))).size > 1);
    expect(across, `circles across folders:\n${across.map((c) => c.join(' -> ')).join('\n')}`).toEqual([]);
  });

  it('finds a circle across folders where there is one', () => {
    const graph = new Map([
      ['/a/x.ts', ['/b/y.ts']],
      ['/b/y.ts', ['/a/x.ts']],
      ['/a/z.ts', []],
    ]);
    expect(circles(graph)).toEqual([[relative(SRC, '/a/x.ts'), relative(SRC, '/b/y.ts')]]);
  });
});
