// Issue 52 row 11: each hint names the real cause and the real flag; secrets are redacted as whole tokens.
import { describe, expect, it } from 'vitest';
import { hintFor } from '../../src/api/client.js';
import { resolveSyncConfig, type ConfigSources } from '../../src/config.js';
import { ConfigError, redact, shortSecretWarnings } from '../../src/errors.js';
import { configFailureHint } from '../../src/iceberg/rest-client.js';
import { warnShortSecrets } from '../../src/commands/common.js';
import { createLogger } from '../../src/log.js';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { runCli } from '../../src/cli-app.js';

const keyFiles: Record<string, string> = { '/keys/eu': 'k-eu\n', '/keys/empty': '\n', '/keys/two': 'k-1 k-2\n' };
const sources = (over: Partial<ConfigSources> = {}): ConfigSources => ({
  flags: {},
  env: {},
  file: {},
  nowMs: Date.parse('2025-07-01T12:00:00Z'),
  readKeyFile: (p) => keyFiles[p]!,
  ...over,
});

describe('a refused key: the hint names where that key came from', () => {
  it("a config source's key file or variable, not COSTSYNC_API_KEY", () => {
    const c = resolveSyncConfig(
      sources({
        fileSources: [
          { name: 'eu', 'base-url': 'https://eu.example.com', 'api-key-file': '/keys/eu' },
          { name: 'us', 'base-url': 'https://us.example.com', 'api-key-env': 'US_KEY' },
        ],
        env: { US_KEY: 'k-us' },
      }),
    );
    const [eu, us] = c.sources!.map((s) => hintFor('UNAUTHORIZED', 'GET', '/v1/line-items', undefined, s.keyFrom)!);
    expect(eu).toMatch(/^Check the key in the key file \/keys\/eu \(source "eu"'s "api-key-file" in the config file\)/);
    expect(us).toMatch(/^Check the key in the environment variable US_KEY \(source "us"'s "api-key-env" in the config file\)/);
    expect(`${eu}${us}`).not.toContain('COSTSYNC_API_KEY');
  });

  it('the one key of a run without sources: the variable or the file it came from', () => {
    const fromEnv = resolveSyncConfig(sources({ env: { COSTSYNC_API_KEY: 'k', COSTSYNC_BASE_URL: 'https://a.example.com' } }));
    expect(fromEnv.apiKeyFrom).toBe('COSTSYNC_API_KEY');
    const fromFlag = resolveSyncConfig(sources({ flags: { 'api-key-file': '/keys/eu', 'base-url': 'https://a.example.com' } }));
    expect(hintFor('UNAUTHORIZED', 'GET', '/v1/line-items', undefined, fromFlag.apiKeyFrom)).toMatch(
      /^Check the key in the key file \/keys\/eu \(--api-key-file\)/,
    );
  });
});

describe('a key file that does not hold one key', () => {
  const run = (path: string) => () => resolveSyncConfig(sources({ flags: { 'api-key-file': path, 'base-url': 'https://a.example.com' } }));
  it('empty: says it is empty, not that it must hold the key alone', () => {
    expect(run('/keys/empty')).toThrow(ConfigError);
    expect(run('/keys/empty')).toThrow('--api-key-file: the key file /keys/empty is empty.');
    expect(run('/keys/empty')).toThrow(
      expect.objectContaining({ hint: 'Write the API key into /keys/empty (the key alone, on one line).' }),
    );
  });
  it('more than one word: says so', () => {
    expect(run('/keys/two')).toThrow(/holds more than one word; it must hold the key alone/);
  });
});

describe("a catalog's refused configuration: the hint names the flag at fault", () => {
  it('an Iceberg error once --catalog-warehouse was given names --catalog-warehouse, not --catalog', () => {
    expect(configFailureHint(404, 'NoSuchWarehouseException', 'nope')).toMatch(/^Check --catalog-warehouse: .*"nope"/);
    expect(configFailureHint(400, 'BadRequestException', 'nope')).toMatch(/^Check --catalog-warehouse/);
    expect(configFailureHint(403, 'ForbiddenException', 'nope')).toMatch(/^Check --catalog-warehouse/);
  });
  it('a 404 that is no Iceberg answer names --catalog; a catalog asking for a warehouse says to pass one', () => {
    expect(configFailureHint(404, undefined, 'nope')).toMatch(/^Check --catalog: /);
    expect(configFailureHint(404, undefined, undefined)).toMatch(/^Check --catalog: /);
    expect(configFailureHint(400, 'BadRequestException', undefined)).toMatch(/^Pass --catalog-warehouse/);
  });
});

describe('secrets in messages', () => {
  it('are redacted as whole tokens, never inside longer words', () => {
    expect(redact('Unknown client or wrong secret', ['wrong'])).toBe('Unknown client or [REDACTED] secret');
    expect(redact('wrongly configured; a wrong-headed wrong_ness', ['wrong'])).toBe('wrongly configured; a [REDACTED]-headed wrong_ness');
    expect(redact('key=sk-123456789 and sk-1234567890', ['sk-123456789'])).toBe('key=[REDACTED] and sk-1234567890');
    expect(redact('https://hooks.example.com/T0/B1/abc.def?x=1', ['https://hooks.example.com/T0/B1/abc.def'])).toBe('[REDACTED]?x=1');
    // A secret holding characters special to regular expressions is matched as it is.
    expect(redact('token a+b(c)*', ['a+b(c)*'])).toBe('token [REDACTED]');
  });

  it('under 8 characters: one warning each at start-up, naming where it came from and never the value', () => {
    const warnings = shortSecretWarnings([
      { what: 'COSTSYNC_CATALOG_TOKEN', value: 'wrong' },
      { what: 'The API key from COSTSYNC_API_KEY', value: 'abc' },
      { what: 'a long one', value: 'long-enough-secret' },
    ]);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/^COSTSYNC_CATALOG_TOKEN is only 5 characters long: use a secret of 8 or more/);
    expect(warnings[1]).toMatch(/is not hidden at all/);
    for (const w of warnings) expect(w).not.toMatch(/\bwrong\b|\babc\b/);
  });

  it("a run's settings: the catalog credential's secret and the API key are checked", () => {
    const lines: string[] = [];
    const logger = createLogger({ format: 'pretty', write: (l) => lines.push(l) });
    const config = resolveSyncConfig(
      sources({
        env: { COSTSYNC_API_KEY: 'k-123', COSTSYNC_CATALOG_CREDENTIAL: 'client:wrong', COSTSYNC_BASE_URL: 'https://a.example.com' },
        flags: { catalog: 'https://catalog.example.com' },
      }),
    );
    warnShortSecrets(config, logger);
    expect(lines).toEqual([
      expect.stringMatching(/^WARN The API key from COSTSYNC_API_KEY is only 5 characters long/),
      expect.stringMatching(/^WARN The client secret in COSTSYNC_CATALOG_CREDENTIAL is only 5 characters long/),
    ]);
  });
});

describe('a failed notify --test', () => {
  it('does not promise the events go again next run: it says to run notify --test again', async () => {
    // A receiver that refuses every message (HTTP 500): one retry, then the failure is reported.
    const server = createServer((_req, res) => res.writeHead(500).end()).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
      let out = '';
      const io = { env: {}, stdout: (t: string) => (out += t), stderr: () => undefined, isTTY: false, now: Date.now };
      expect(await runCli(['notify', '--test', '--notify', url], io)).toBe(1);
      expect(out).toContain('answered HTTP 500');
      expect(out).toContain('run costsync notify --test again once it is fixed');
      expect(out).not.toContain('sent again on the next run');
    } finally {
      server.close();
    }
  });
});
