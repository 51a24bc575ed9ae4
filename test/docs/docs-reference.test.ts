import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { knownVariables } from '../../src/env-vars.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe('docs/reference/', () => {
  it('is what docs/generate.mjs writes from the code now (npm run docs rewrites it)', async () => {
    const checked = await promisify(execFile)(process.execPath, ['docs/generate.mjs', '--check'], { cwd: ROOT }).then(
      (r) => ({ code: 0, output: r.stdout + r.stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
    );
    // The output names the pages that differ and the command that writes them.
    expect(checked, checked.output).toMatchObject({ code: 0 });
  });

  it('names every COSTSYNC_ variable src/ and test/ read, each in the one registry (src/env-vars.ts)', () => {
    const page = readFileSync(join(ROOT, 'docs/reference/settings.md'), 'utf8');
    const read = new Set<string>();
    for (const file of [...filesUnder(join(ROOT, 'src')), ...filesUnder(join(ROOT, 'test'))]) {
      if (file.includes(`${join('test', 'fixtures')}`)) continue;
      for (const m of readFileSync(file, 'utf8').matchAll(/COSTSYNC_[A-Z0-9_]*[A-Z0-9]/g)) read.add(m[0]);
    }
    // `COSTSYNC_FLAG` and `COSTSYNC_<NAME>` are how comments and messages write the settings' variables;
    // the others are names tests make up to show they are warned about.
    for (const madeUp of ['COSTSYNC_FLAG', 'COSTSYNC_SINSE', 'COSTSYNC_NO_SUCH_THING']) read.delete(madeUp);
    expect(read.size).toBeGreaterThan(20);
    expect([...read].filter((name) => !knownVariables().includes(name))).toEqual([]);
    expect([...read].filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });
});
