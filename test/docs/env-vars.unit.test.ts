import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli-app.js';
import { readConfigFile, resolveSyncConfig } from '../../src/config.js';
import { ConfigError, ExitCode } from '../../src/errors.js';
import { knownVariables, unknownVariableText, unknownVariables } from '../../src/env-vars.js';

describe('the registry of COSTSYNC_* variables', () => {
  it("holds each setting's variable, the others costsync reads and the tests' own, once each", () => {
    const known = knownVariables();
    expect(known).toEqual(expect.arrayContaining(['COSTSYNC_SINCE', 'COSTSYNC_API_KEY', 'COSTSYNC_DUCKDB_THREADS', 'COSTSYNC_MODEL_SEED']));
    expect(new Set(known).size).toBe(known.length);
  });

  it('names each unknown COSTSYNC_* variable with the known one it is closest to, and leaves the rest of the environment alone', () => {
    const unknown = unknownVariables({
      COSTSYNC_SINSE: '2025-01-01',
      COSTSYNC_NO_SUCH_THING: '1',
      COSTSYNC_SINCE: '2025-01-01',
      COSTSYNC_KILLS: '3',
      HOME: '/root',
      COSTSYNC: '1',
    });
    expect(unknown).toEqual([
      { name: 'COSTSYNC_NO_SUCH_THING', meant: null },
      { name: 'COSTSYNC_SINSE', meant: 'COSTSYNC_SINCE' },
    ]);
    expect(unknownVariableText(unknown[1]!)).toBe(
      'COSTSYNC_SINSE is not a variable costsync reads, so it is ignored (did you mean COSTSYNC_SINCE?); see docs/reference/settings.md.',
    );
  });

  it('a command warns of an unknown variable at start-up, in JSON with --log-format json', async () => {
    const lines: string[] = [];
    const io = { env: { COSTSYNC_SINSE: 'x' }, stdout: () => undefined, stderr: (t: string) => lines.push(t), isTTY: false, now: Date.now };
    await runCli(['sync', '--config', '/nonexistent/costsync.json', '--log-format', 'json'], io);
    const warning = JSON.parse(lines[0]!) as { level: string; msg: string };
    expect(warning).toMatchObject({ level: 'warn', msg: expect.stringContaining('did you mean COSTSYNC_SINCE?') });
  });
});

describe('the config file', () => {
  const withFile = (text: string | null, fn: (path: string) => void) => {
    const dir = mkdtempSync(join(tmpdir(), 'costsync-config-'));
    try {
      const path = join(dir, 'costsync.config.json');
      if (text !== null) writeFileSync(path, text);
      fn(path);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('that does not exist: "not found", exit 2, not how JSON parsing failed', () => {
    withFile(null, (path) => {
      expect(() => readConfigFile(path)).toThrow(ConfigError);
      expect(() => readConfigFile(path)).toThrow(`The config file ${path} was not found.`);
      expect(() => readConfigFile(path)).not.toThrow(/JSON|ENOENT/);
    });
  });

  it('with a misspelt key: refused (exit 2), naming the key it is closest to, in either spelling', () => {
    withFile('{"sinse": "2025-01-01"}', (path) => {
      expect(() => readConfigFile(path)).toThrow(`unknown setting "sinse" (did you mean "since"?)`);
    });
    withFile('{"lookbackDay": 3}', (path) => {
      expect(() => readConfigFile(path)).toThrow(`unknown setting "lookbackDay" (did you mean "lookback-days"?)`);
    });
    withFile('{"frobnicate": 3}', (path) => {
      expect(() => readConfigFile(path)).toThrow(/unknown setting "frobnicate"\.$/);
    });
  });

  it("a source's misspelt field names the field meant", () => {
    const c = () =>
      resolveSyncConfig({
        flags: {},
        env: {},
        file: {},
        fileSources: [{ name: 'eu', 'base-url': 'https://eu.example.com', 'api-key-fil': '/k', colour: 'red' }],
        nowMs: Date.parse('2025-07-01T00:00:00Z'),
      });
    expect(c).toThrow('has unknown field(s): api-key-fil (did you mean "api-key-file"?), colour.');
  });

  it('the same through the command line: exit 2 and the words', async () => {
    let err = '';
    const io = { env: {}, stdout: () => undefined, stderr: (t: string) => (err += t), isTTY: false, now: Date.now };
    const code = await runCli(['sync', '--config', '/nonexistent/costsync.json'], io);
    expect(code).toBe(ExitCode.USAGE);
    expect(err).toContain('The config file /nonexistent/costsync.json was not found.');
  });
});
