import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERRORS, ExitCode } from '../../src/errors.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe('the error registry', () => {
  it('holds every CS_ERR_ code written anywhere in src/, the README and docs/', () => {
    const written = new Set<string>();
    for (const file of [...filesUnder(join(ROOT, 'src')), join(ROOT, 'README.md'), ...filesUnder(join(ROOT, 'docs'))]) {
      for (const m of readFileSync(file, 'utf8').matchAll(/CS_ERR_[A-Z0-9_]*[A-Z0-9]/g)) written.add(m[0]);
    }
    const unknown = [...written].filter((code) => !(code in ERRORS));
    expect(unknown).toEqual([]);
  });

  it('is where every error src/ raises gets its code: no bare Error outside the emulator (whose errors are its HTTP replies)', () => {
    const bare = filesUnder(join(ROOT, 'src'))
      .filter((file) => !file.startsWith(join(ROOT, 'src', 'emulator')))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, i) =>
            /\b(?:new\s+)?(?:Error|TypeError|RangeError)\(/.test(line) ? [`${file.slice(ROOT.length)}:${i + 1}: ${line.trim()}`] : [],
          ),
      );
    expect(bare).toEqual([]);
  });

  it('the reference page docs/reference/errors.md lists every code with its exit code and summary', () => {
    const page = readFileSync(join(ROOT, 'docs/reference/errors.md'), 'utf8');
    const rows = new Map(
      [...page.matchAll(/^\| `(CS_ERR_[A-Z0-9_]+)` \| (\d) \| (.+) \|$/gm)].map((m) => [m[1]!, { exit: Number(m[2]), summary: m[3]! }]),
    );
    for (const [code, entry] of Object.entries(ERRORS)) {
      expect(rows.get(code), code).toEqual({ exit: entry.exit, summary: entry.summary });
    }
    expect(rows.size).toBe(Object.keys(ERRORS).length);
    expect(Object.values(ERRORS).every((e) => Object.values(ExitCode).includes(e.exit))).toBe(true);
  });
});
