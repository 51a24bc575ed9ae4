import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { inDirectory, run, withTempDir } from '../support/helpers.js';

const BIN = fileURLToPath(new URL('../../dist/bin.cjs', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};

describe('the costsync executable', () => {
  it('is the package bin, runs by its shebang, and starts the CLI', async () => {
    expect(pkg.bin.costsync).toBe('dist/bin.cjs');
    const { stdout } = await promisify(execFile)(BIN, ['--version']);
    expect(stdout.trim()).toBe(pkg.version);
    const help = await promisify(execFile)(BIN, ['--help']);
    for (const command of ['sync', 'push', 'push-otel', 'query', 'verify', 'report', 'status', 'check', 'emulator', 'demo']) {
      expect(help.stdout).toMatch(new RegExp(`costsync ${command}\\b`));
    }
    // Exit codes and the environment variables are in --help, not only in docs/reference/.
    expect(help.stdout).toMatch(
      /Exit codes: 0 done;\s+1 failed[\s\S]*2 bad flags, settings or input, or an API or bucket that never answered[\s\S]*4 stopped early[\s\S]*5 another run holds the lock/,
    );
    expect(help.stdout).toMatch(/COSTSYNC_BASE_URL[\s\S]*COSTSYNC_LOG_FORMAT/);
    expect(help.stdout).toMatch(/COSTSYNC_API_KEY, a file named by COSTSYNC_API_KEY_FILE or\s+--api-key-file/);
    // push's profile version no longer hides costsync's own --version.
    const pushHelp = await promisify(execFile)(BIN, ['push', '--help']);
    expect(pushHelp.stdout).toMatch(/--profile-version/);
    const emulatorHelp = (await promisify(execFile)(BIN, ['emulator', '--help'])).stdout;
    // Every emulator option says what it does.
    for (const line of emulatorHelp.split('\n').filter((l) => /^ {2}--[a-z]/.test(l) && !/--(help|version)\b/.test(l))) {
      expect(
        line
          .replace(/^\s+--[a-z-]+\s*/, '')
          .replace(/\[[^\]]*\]/g, '')
          .trim().length,
        line,
      ).toBeGreaterThan(0);
    }
  });

  it('--version and --help print and exit 0 for every command, with no base URL, key or config file', async () => {
    // In this process (one start per command line costs seconds of CPU); yargs prints with console.log.
    const printed: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      printed.push(args.join(' '));
    });
    try {
      await withTempDir(async (dir) =>
        inDirectory(dir, async () => {
          for (const command of [
            'sync',
            'push',
            'push-otel',
            'query',
            'verify',
            'report',
            'notify',
            'status',
            'check',
            'emulator',
            'demo',
          ]) {
            for (const flag of ['--version', '--help']) {
              printed.length = 0;
              const result = await run([command, flag], {});
              const out = printed.join('\n') + result.stdout;
              expect(result.code, `${command} ${flag}: ${result.stderr}`).toBe(0);
              expect(result.stderr, `${command} ${flag}`).toBe('');
              expect(out.trim(), `${command} ${flag}`).toMatch(
                flag === '--version' ? new RegExp(`^${pkg.version.replaceAll('.', '\\.')}$`) : new RegExp(`^costsync ${command}\\b`),
              );
            }
          }
          // push's --version followed by a number keeps its deprecated meaning, the profile version: a
          // wrong one fails rather than printing a version and pushing nothing.
          const wrong = await run(['push', '--dry-run', '--version', '2', 'costs.csv'], {});
          expect(wrong.code).toBe(2);
          expect(wrong.stderr).toMatch(/--version must be one of 1, 1\.1, 1\.2; got "2"/);
        }),
      );
    } finally {
      log.mockRestore();
    }
  });

  it("runs with one malloc arena (set by its shebang, before Node starts), whatever the caller's environment", async () => {
    const child = spawn(BIN, ['emulator', '--port', '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, MALLOC_ARENA_MAX: '8' },
    });
    try {
      await once(createInterface({ input: child.stdout }), 'line');
      const environ = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
      expect(environ).toContain('MALLOC_ARENA_MAX=1');
      expect(readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0')).toContain('--max-old-space-size=96');
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  it('runs DuckDB and the file I/O on two libuv threads unless the caller sets UV_THREADPOOL_SIZE', async () => {
    // A server that takes the sync's first request and never answers: by then the sync has used the pool.
    const server = createServer(() => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const { UV_THREADPOOL_SIZE: _callers, ...callerEnv } = process.env;
    const workers = async (env: Record<string, string>) =>
      withTempDir(async (dir) => {
        const asked = once(server, 'request');
        const args = ['sync', '--base-url', url, '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state')];
        const child = spawn(BIN, args, { stdio: 'ignore', env: { ...callerEnv, COSTSYNC_API_KEY: 'k', ...env } });
        const exited = once(child, 'exit');
        try {
          // A sync that ends before asking anything fails here at once, not at the test's timeout.
          const ended = exited.then(([code]) => {
            throw new Error(`the sync exited (${String(code)}) before its first request`);
          });
          ended.catch(() => undefined);
          await Promise.race([asked, ended]);
          const tasks = readdirSync(`/proc/${child.pid}/task`);
          return tasks.filter((t) => readFileSync(`/proc/${child.pid}/task/${t}/comm`, 'utf8').trim() === 'libuv-worker').length;
        } finally {
          child.kill('SIGKILL');
          await exited;
        }
      });
    try {
      expect(await workers({})).toBe(2);
      expect(await workers({ UV_THREADPOOL_SIZE: '3' })).toBe(3);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
