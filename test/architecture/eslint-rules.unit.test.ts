import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import tsParser from '@typescript-eslint/parser';
import { Linter } from 'eslint';
import { describe, expect, it } from 'vitest';
import costsync, { PROGRESS_WRITERS } from './eslint-rules.mjs';

/**
 * The architecture's rules read syntax (test/architecture/eslint-rules.mjs): here they lint src/ as
 * `npm run lint` does, in `npm test`, and each is shown a violation of every form it claims to catch
 * (an alias, a destructuring, a bracket access, an import under another name, SQL in another case) and
 * a comment that must not count.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES = {
  'costsync/one-writer': 'error',
  'costsync/coded-errors': 'error',
  'costsync/async-local-storage-at-module-level': 'error',
} as const;

/** The rule violations in `code` as if it were the file at `path` (from the repository's root), as `rule:line`. */
function lint(path: string, code: string, rules: Linter.RulesRecord = RULES): string[] {
  const linter = new Linter({ cwd: ROOT });
  const messages = linter.verify(
    code,
    [{ files: ['**/*.ts', '**/*.cts'], languageOptions: { parser: tsParser }, plugins: { costsync }, rules }],
    join(ROOT, path),
  );
  // Only these rules' findings (a file's disable comments name rules this linter does not load).
  return messages
    .filter((m) => m.ruleId === null || m.ruleId.startsWith('costsync/'))
    .map((m) => (m.ruleId === null ? `parse error: ${m.message}` : `${m.ruleId.replace('costsync/', '')}:${m.line}`));
}

/** Every TypeScript file under src/, by its path from the repository's root. */
function sourceFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.c?ts$/.test(entry.name)) files.set(relative(ROOT, path).split(sep).join('/'), readFileSync(path, 'utf8'));
    }
  };
  walk(join(ROOT, 'src'));
  return files;
}

describe('the architecture rules, as ESLint rules', () => {
  it('src/ keeps them (the emulator raises its HTTP replies, not coded errors)', () => {
    const found: string[] = [];
    for (const [path, code] of sourceFiles()) {
      const rules = path.startsWith('src/emulator/') ? { ...RULES, 'costsync/coded-errors': 'off' as const } : RULES;
      found.push(...lint(path, code, rules).map((m) => `${path} ${m}`));
    }
    expect(found).toEqual([]);
  });

  it('each writer a rule allows still reaches what it writes (a renamed one would leave the rule guarding nothing)', () => {
    const files = sourceFiles();
    for (const rule of PROGRESS_WRITERS) {
      for (const file of rule.allowed) {
        const reached = lint(file, files.get(file) ?? '', { 'costsync/one-writer': ['error', { ...rule, allowed: [] }] });
        expect({ writes: rule.writes, file, reached: reached.length > 0 }).toEqual({ writes: rule.writes, file, reached: true });
      }
    }
  });

  it('one writer: a module reaching a writer directly, by an alias, a destructuring, a bracket, an import under another name, or in SQL of any case', () => {
    const planted = [
      'await store.saveAsync(state, now);', // 1: a call
      'const save = store.saveAsync;', // 2: an alias
      'const { checkpoint } = ctx.state;', // 3: a destructuring
      "await ctx.state['checkpoint']({ stream: 'anomalies' });", // 4: a bracket
      "import { carriedState as snapshot } from '../state/carried.js';", // 5: an import under another name
      "await wh.sql('delete from _costsync_sync_state where source = $1');", // 6: SQL, lower case
      'await wh.sql(`INSERT OR REPLACE INTO _costsync_sync_state VALUES (${a})`);', // 7: SQL in a template
      "await warehouse.run('state/carry_update', params);", // 8: the SQL file's name
      'const s = new SourceState(loaded, homes);', // 9: a new owner
      '// store.saveAsync(state) in a comment is no write', // 10: nothing
      "import type { SourceState } from '../state/source-state.js';", // 11: a type, nothing
    ].join('\n');
    expect(lint('src/outputs/sneaky.ts', planted, { 'costsync/one-writer': 'error' })).toEqual([
      'one-writer:1',
      'one-writer:2',
      'one-writer:3',
      'one-writer:4',
      'one-writer:5',
      'one-writer:6',
      'one-writer:7',
      'one-writer:8',
      'one-writer:9',
    ]);
    // The same lines in the state file's owner: only what other owners write is reported.
    expect(lint('src/state/source-state.ts', planted, { 'costsync/one-writer': 'error' })).toEqual([
      'one-writer:3',
      'one-writer:4',
      'one-writer:9',
    ]);
  });

  it('coded errors: a built-in error made, called, aliased or subclassed, or a thrown string, template or object', () => {
    const planted = [
      "throw new Error('bare');", // 1
      "throw TypeError('called');", // 2
      'const E = SyntaxError;', // 3: an alias
      'class Mine extends RangeError {}', // 4: a subclass
      "throw 'a string';", // 5
      'throw `a ${template}`;', // 6
      "throw { code: 'X' };", // 7
      'const fail = new globalThis.Error();', // 8
      "throw new CostsyncError('CS_ERR_INTERNAL', 'coded');", // 9: fine
      'if (e instanceof Error) throw e;', // 10: fine
      '// new Error() in a comment', // 11: fine
    ].join('\n');
    expect(lint('src/sync/sneaky.ts', planted, { 'costsync/coded-errors': 'error' })).toEqual([
      'coded-errors:1',
      'coded-errors:2',
      'coded-errors:3',
      'coded-errors:4',
      'coded-errors:5',
      'coded-errors:6',
      'coded-errors:7',
      'coded-errors:8',
    ]);
    // The registry itself declares its classes over Error.
    expect(lint('src/errors.ts', 'export class CostsyncError extends Error {}', { 'costsync/coded-errors': 'error' })).toEqual([]);
  });

  it('an AsyncLocalStorage made anywhere but at module level, under any name', () => {
    const planted = [
      "import { AsyncLocalStorage as Store } from 'node:async_hooks';", // 1
      "import * as hooks from 'node:async_hooks';", // 2
      'export const queue = new Store();', // 3: fine
      'function each() { return new Store(); }', // 4
      'class Q { s = new hooks.AsyncLocalStorage(); }', // 5
      'const later = () => { const s = new Store(); };', // 6
    ].join('\n');
    expect(lint('src/storage/sneaky.ts', planted, { 'costsync/async-local-storage-at-module-level': 'error' })).toEqual([
      'async-local-storage-at-module-level:4',
      'async-local-storage-at-module-level:5',
      'async-local-storage-at-module-level:6',
    ]);
  });
});
