import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../dist/bin.cjs', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; bin: Record<string, string> };

describe('the costsync executable', () => {
  it('is the package bin, runs by its shebang, and starts the CLI', async () => {
    expect(pkg.bin.costsync).toBe('dist/bin.cjs');
    const { stdout } = await promisify(execFile)(BIN, ['--version']);
    expect(stdout.trim()).toBe(pkg.version);
    const help = await promisify(execFile)(BIN, ['--help']);
    for (const command of ['sync', 'push', 'push-otel', 'query', 'verify', 'report', 'status', 'check', 'emulator', 'demo']) {
      expect(help.stdout).toMatch(new RegExp(`costsync ${command}\\b`));
    }
  });
});
