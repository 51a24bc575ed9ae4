// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: What each entry loads (the emulator's, a command's modules): bin (the package bin, --help of every command).
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SPAN, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'dist', 'bin.cjs');
const DIST = new URL('../../dist/', import.meta.url).href;

/**
 * Runs the executable with a module hook that writes the URL of every module Node loads to a file,
 * and returns those under dist/ (relative to it): the command's real module graph, dynamic imports included.
 */
async function loadedModules(
  dir: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; modules: string[] }> {
  const log = join(dir, 'loaded.txt');
  writeFileSync(log, '');
  writeFileSync(
    join(dir, 'hook.mjs'),
    `import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function load(url, context, next) { appendFileSync(log, url + '\\n'); return next(url, context); }
`,
  );
  writeFileSync(
    join(dir, 'register.mjs'),
    `import { register } from 'node:module';\nregister('./hook.mjs', import.meta.url, { data: { log: ${JSON.stringify(log)} } });\n`,
  );
  const child = spawn(process.execPath, ['--import', join(dir, 'register.mjs'), BIN, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  expect(code, stderr).toBe(0);
  const modules = readFileSync(log, 'utf8')
    .split('\n')
    .filter((url) => url.startsWith(DIST))
    .map((url) => url.slice(DIST.length));
  return { code, modules };
}

describe('the emulator is an entry of its own, beside the product', () => {
  it("a sync, and the emulator command's --help, load no module of the emulator; a command loads no other command's module", async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5 }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const sync = await loadedModules(dir, syncCommand(url, dir, ['--start-date', SPAN.startDate, '--until', SPAN.endDate]), {
          COSTSYNC_API_KEY: 'demo-key',
        });
        // The hook saw the sync's own modules (so an empty list below is not a hook that saw nothing).
        expect(sync.modules).toContain('cli.js');
        expect(sync.modules).toContain('sync/runner.js');
        expect(sync.modules.filter((m) => m.startsWith('emulator/'))).toEqual([]);
        expect(sync.modules).not.toContain('commands/demo.js');
        // Each command's module loads when it runs, not with the others: a sync loads no push, report or query.
        expect(sync.modules.filter((m) => /^(push|report)\/|^commands\/(push|report|query|verify|status|check)\.js$/.test(m))).toEqual([]);
        const version = await loadedModules(dir, ['--version'], {});
        expect(version.modules).toContain('cli-app.js');
        expect(version.modules.filter((m) => m.startsWith('commands/') && m !== 'commands/common.js')).toEqual([]);

        const help = await loadedModules(dir, ['emulator', '--help'], {});
        expect(help.modules.filter((m) => m.startsWith('emulator/'))).toEqual([]);
      });
    });
  });

  it('is imported as costsync/emulator; deep imports into dist/ are closed by the exports map', () => {
    const node = (code: string) => spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd: ROOT, encoding: 'utf8' });
    const entry = node(
      `const m = await import('costsync/emulator'); const e = await m.startEmulator({ port: 0, rowsPerDay: 1 }); console.log(typeof m.startEmulator, m.DEMO_KEY, e.url.startsWith('http://127.0.0.1:')); await e.close();`,
    );
    expect(entry.stderr).toBe('');
    expect(entry.stdout.trim()).toBe('function demo-key true');
    const deep = node(`await import('costsync/dist/emulator/server.js');`);
    expect(deep.status).not.toBe(0);
    expect(deep.stderr).toMatch(/ERR_PACKAGE_PATH_NOT_EXPORTED/);
    // The main entry is the library without the emulator: it is only `costsync/emulator`.
    const main = node(`const m = await import('costsync'); console.log(typeof m.createApiClient, typeof m.startEmulator);`);
    expect(main.stdout.trim()).toBe('function undefined');
  });

  it("checks ingested rows with rules of its own, not with the push command's (which it is there to test)", () => {
    const src = join(ROOT, 'src', 'emulator');
    for (const file of readdirSync(src)) {
      const imports = [...readFileSync(join(src, file), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => m[1]!);
      expect(
        imports.filter((i) => /^\.\.\/(focus|push)\//.test(i)),
        file,
      ).toEqual([]);
    }
  });
});
