import { watch, writeFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDemo } from '../../src/commands/demo.js';
import { run, startCli, withTempDir } from '../support/helpers.js';

const quiet = { env: {}, stdout: () => undefined, stderr: () => undefined, isTTY: false, now: () => Date.now() };

describe('an export stopped half way (Ctrl-C)', () => {
  it('leaves no temporary file and keeps the earlier export and its metadata as they were; a killed one is cleaned by the next', async () => {
    await withTempDir(async (dir) => {
      const db = join(dir, 'demo.duckdb');
      expect(await runDemo({ db, stateDir: join(dir, 'state'), days: 90, rowsPerDay: 500, report: join(dir, 'r.html') }, quiet)).toBe(0);
      const out = join(dir, 'out');
      const file = join(out, 'focus.jsonl');
      const first = await run(['export', '--db', db, '--focus-version', '1.3', '--out', file]);
      expect(first.code, first.stderr).toBe(0);
      const before = readdirSync(out).sort();
      expect(before).toEqual(['focus.jsonl', 'focus.jsonl.metadata.json']);
      // A temporary file of an export killed earlier (a process that is gone).
      writeFileSync(join(out, '.focus.jsonl.999999999.tmp'), 'partial');

      // The next export is stopped as soon as its temporary file appears.
      const appeared = new Promise<void>((resolve) => {
        const watcher = watch(out, (_event, name) => {
          if (name !== null && name.startsWith('.focus.jsonl.') && !name.includes('999999999')) {
            watcher.close();
            resolve();
          }
        });
      });
      const { child, result } = startCli(['export', '--db', db, '--focus-version', '1.4', '--out', file]);
      await appeared;
      child.kill('SIGINT');
      const stopped = await result;
      expect(stopped.signal ?? stopped.code, stopped.stderr).not.toBe(0);
      // Nothing half-written, the killed one's leftover gone, the earlier pair untouched.
      expect(readdirSync(out).sort()).toEqual(before);
      expect(existsSync(join(out, '.focus.jsonl.999999999.tmp'))).toBe(false);
    });
  });
});
