import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXECUTABLE_PROCESS_ENV } from '../support/worker-env.js';

/** The variables `src/bin.cts` sets: its shebang's `NAME=value` words and its `process.env.NAME ??= 'value'` lines. */
function executableEnv(source: string): Record<string, string> {
  const [shebang = ''] = source.split('\n');
  const fromShebang = [...shebang.matchAll(/\b([A-Z_]+)=(\S+)/g)].map(([, name, value]) => [name!, value!]);
  const fromCode = [...source.matchAll(/^process\.env\.([A-Z_]+) \?\?= '([^']*)';$/gm)].map(([, name, value]) => [name!, value!]);
  return Object.fromEntries([...fromShebang, ...fromCode]);
}

describe("the test workers' process settings", () => {
  it('are the ones the executable sets', () => {
    const source = readFileSync(new URL('../../src/bin.cts', import.meta.url), 'utf8');
    expect(EXECUTABLE_PROCESS_ENV).toEqual(executableEnv(source));
  });

  it('reads both forms the executable uses', () => {
    const source = "#!/usr/bin/env -S A_B=1 node --flag\nprocess.env.C ??= 'x:1';\n// process.env.D ??= 'no';\n";
    expect(executableEnv(source)).toEqual({ A_B: '1', C: 'x:1' });
  });
});
