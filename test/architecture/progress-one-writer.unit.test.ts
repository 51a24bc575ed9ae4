import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A source's progress has three homes, each with one writer (docs/internals.md, "A source's progress"):
 * the state file and the warehouse's carried copy are written by src/state/source-state.ts alone, the
 * sync modules change progress only through `SourceState.checkpoint`, and the lake's state object is made
 * by src/outputs/lake-seed.ts and put by the lake outputs. Each rule names what writes a home and the only
 * modules allowed to say it; code only (comment lines are skipped). A progress is a readonly value
 * (`src/state/store.ts`): no module can change one in place, which the compiler checks
 * (test/state/progress-codec.unit.test.ts holds the assignments it must refuse).
 */
const RULES: readonly { writes: string; pattern: RegExp; allowed: readonly string[] }[] = [
  { writes: 'the state file (StateStore.saveAsync)', pattern: /\.saveAsync\(/, allowed: ['src/state/source-state.ts'] },
  {
    writes: "a source's progress (SourceState.checkpoint)",
    pattern: /\.checkpoint\(/,
    allowed: ['src/sync/windowed.ts', 'src/sync/window-fetch.ts', 'src/sync/anomalies.ts', 'src/sync/recheck.ts'],
  },
  {
    writes: "progress changed in place (SourceState's old methods, a window's fields)",
    pattern:
      /\.(advance|restart|done|setWindowed|setAnomalies|rechecked)\(\s*(spec|stream|window|this\.window|'line_items'|'rollups'|\{)|\bstate\.save\(|Object\.assign\(\s*window/,
    allowed: [],
  },
  { writes: "the source's state owner (new SourceState)", pattern: /new SourceState\(/, allowed: ['src/sync/runner.ts'] },
  {
    writes: "the warehouse's carried copy (its table and SQL)",
    pattern: /'state\/carry_(insert|update)'|(DELETE FROM|INSERT INTO|UPDATE)\s+_costsync_sync_state/,
    allowed: ['src/state/source-state.ts'],
  },
  {
    writes: "the warehouse's carried copy (a window's carry, in its commit)",
    pattern: /\.state\.carry\(/,
    allowed: ['src/sync/windowed.ts'],
  },
  {
    writes: "the warehouse's carried copy (the lake seed's)",
    pattern: /\bcarriedFromLake\.(drop|adopt)\(/,
    allowed: ['src/outputs/lake-seed.ts'],
  },
  {
    writes: 'the carried state (carriedState)',
    pattern: /\bcarriedState\(/,
    allowed: ['src/state/carried.ts', 'src/state/source-state.ts'],
  },
  {
    writes: "the lake's state object",
    pattern: /\b(writeStateObjects|stateObjects|stateProperty)\(/,
    allowed: ['src/outputs/lake-seed.ts', 'src/outputs/lake.ts', 'src/outputs/iceberg.ts'],
  },
];

interface Offender {
  writes: string;
  file: string;
  line: number;
  code: string;
}

/** Each rule's matches outside its allowed modules. Pure. */
function offenders(files: ReadonlyMap<string, string>): Offender[] {
  const out: Offender[] = [];
  for (const [file, text] of files) {
    text.split('\n').forEach((code, i) => {
      if (/^\s*(\*|\/\/|\/\*)/.test(code)) return;
      for (const rule of RULES)
        if (rule.pattern.test(code) && !rule.allowed.includes(file))
          out.push({ writes: rule.writes, file, line: i + 1, code: code.trim() });
    });
  }
  return out;
}

/** Every TypeScript file under src/, by its path from the repository's root. */
function sourceFiles(): Map<string, string> {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(c|m)?ts$/.test(entry.name)) files.set(relative(root, path).split(sep).join('/'), readFileSync(path, 'utf8'));
    }
  };
  walk(join(root, 'src'));
  return files;
}

describe("a source's progress has one writer per home", () => {
  it('no module but the owners writes the state file, the carried copy or the lake state object, and the sync modules change progress only through checkpoint', () => {
    expect(offenders(sourceFiles())).toEqual([]);
  });

  it('each writer the rules allow is still there (a renamed one would leave a rule guarding nothing)', () => {
    const files = sourceFiles();
    for (const rule of RULES.filter((r) => r.allowed.length > 0)) {
      const found = rule.allowed.filter((file) => (files.get(file) ?? '').split('\n').some((line) => rule.pattern.test(line)));
      expect({ rule: rule.writes, found: found.length > 0 }).toEqual({ rule: rule.writes, found: true });
    }
  });

  it('catches a module that writes progress on its own', () => {
    const files = new Map([
      ['src/outputs/sneaky.ts', 'await store.saveAsync(state, now);\n// store.saveAsync(state) in a comment is fine'],
      [
        'src/sync/dry-run.ts',
        "await warehouse.run('state/carry_update', params);\nawait ctx.state.checkpoint({ stream: 'anomalies', state });",
      ],
    ]);
    expect(offenders(files).map((o) => `${o.file}:${o.line} ${o.writes}`)).toEqual([
      'src/outputs/sneaky.ts:1 the state file (StateStore.saveAsync)',
      "src/sync/dry-run.ts:1 the warehouse's carried copy (its table and SQL)",
      "src/sync/dry-run.ts:2 a source's progress (SourceState.checkpoint)",
    ]);
  });
});
