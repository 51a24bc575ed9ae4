import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import { ExitCode } from '../../src/errors.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import { backfillFlags, cli, run, tableDigest, withEmulator, withTempDir, SPAN, syncCommand } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

const syncArgs = (url: string, dir: string, extra: string[] = []) => syncCommand(url, dir, [...backfillFlags(), ...extra]);

describe('costsync sync (CLI)', () => {
  it('syncs with JSON logs and exit code 0, the same tables whatever the machine time zone', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 60, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        // In this process, at the machine's own zone; then in processes at zones 14 h east and 8 h west of UTC.
        const here = await run(syncArgs(url, join(dir, 'here')), { COSTSYNC_API_KEY: 'demo-key' });
        expect(here.code).toBe(0);
        const lines = here.stderr
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        expect(lines.every((l) => typeof l.time === 'string' && typeof l.level === 'string')).toBe(true);
        // The summary is the run's output, on stdout: one JSON line.
        expect(
          here.stdout
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l)),
        ).toEqual([expect.objectContaining({ msg: 'sync finished', outcome: 'success' })]);
        for (const tz of ['Pacific/Kiritimati', 'America/Los_Angeles']) {
          const other = await cli(syncArgs(url, join(dir, tz.replace('/', '_'))), { COSTSYNC_API_KEY: 'demo-key', TZ: tz });
          expect(other.code).toBe(0);
          expect(await tableDigest(join(dir, tz.replace('/', '_'), 'c.duckdb'))).toEqual(await tableDigest(join(dir, 'here', 'c.duckdb')));
        }
      });
    });
  });

  it('exits 2 for bad configuration and 3 for a refused key, with messages that name the fix', async () => {
    const keys = { keys: [{ key: 'team-key', scopes: [...SCOPES], plan: 'team' }], connections: [] };
    await withEmulator({ ...SPAN, clock, keys: keys as never }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const noKey = await run(syncArgs(url, dir));
        expect(noKey.code).toBe(ExitCode.USAGE);
        // --log-format json: the error before the run is a JSON line too, with its code and hint.
        expect(JSON.parse(noKey.stderr.trim())).toMatchObject({
          level: 'error',
          msg: 'No API key.',
          code: 'CS_ERR_CONFIG',
          hint: expect.stringContaining('COSTSYNC_API_KEY'),
        });
        const badSince = await run(syncArgs(url, dir, ['--since', '2025-07-05']), { COSTSYNC_API_KEY: 'k' });
        expect(badSince.code).toBe(ExitCode.USAGE);
        expect(badSince.stderr).toMatch(/--since \(2025-07-05\) is after the last date 2025-06-30/);
        const badStream = await run(syncArgs(url, dir, ['--streams', 'line_items,invoices']), { COSTSYNC_API_KEY: 'k' });
        expect(badStream.code).toBe(ExitCode.USAGE);
        expect(badStream.stderr).toMatch(/unknown stream\(s\): invoices/);
        const http = await run(syncArgs('http://example.com', dir), { COSTSYNC_API_KEY: 'k' });
        expect(http.code).toBe(ExitCode.USAGE);
        expect(http.stderr).toMatch(/must use https/);
        const plan = await run(syncArgs(url, dir), { COSTSYNC_API_KEY: 'team-key' });
        expect(plan.code).toBe(ExitCode.AUTH);
        expect(plan.stderr).toMatch(/Business plan or above/);
      });
    });
  });

  it('reads settings from the config file, env over file and flags over env', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const configFile = join(dir, 'costsync.config.json');
        writeFileSync(
          configFile,
          JSON.stringify({
            'base-url': 'http://127.0.0.1:1',
            streams: 'rollups',
            'start-date': SPAN.startDate,
            until: SPAN.endDate,
            db: join(dir, 'file.duckdb'),
            'state-dir': join(dir, 'state'),
            'log-format': 'json',
          }),
        );
        const synced = await run(['sync', '--config', configFile, '--db', join(dir, 'flag.duckdb')], {
          COSTSYNC_API_KEY: 'demo-key',
          COSTSYNC_BASE_URL: url,
        });
        expect(synced.code).toBe(0);
        const digest = await tableDigest(join(dir, 'flag.duckdb'));
        expect(digest.rollups_daily!.rows).toBeGreaterThan(0);
        expect(digest.line_items!.rows).toBe(0);
      });
    });
  });

  it('never lets the key into output, logs, state files or the database', async () => {
    const secret = 'sk-live-0123456789abcdef-SECRET';
    const keys = { keys: [{ key: secret, scopes: [...SCOPES], plan: 'business' }], connections: [{ id: 'c1', provider_type: 'custom' }] };
    await withEmulator({ ...SPAN, rowsPerDay: 30, clock, keys: keys as never, faults: { errorRate: 0.2 } }, async ({ url }) => {
      await withTempDir(async (dir) => {
        writeFileSync(join(dir, 'key.txt'), `${secret}\n`);
        // JSON logs at the most verbose level, with retries logged; a refused key with a stack trace; a push.
        const ok = await run(syncArgs(url, dir, ['--api-key-file', join(dir, 'key.txt'), '--verbose']));
        expect(ok.code).toBe(0);
        expect(ok.stderr).toMatch(/"level":"debug"/);
        const wrong = await run(syncArgs(url, join(dir, 'w'), ['--log-format', 'pretty', '--verbose']), { COSTSYNC_API_KEY: `${secret}x` });
        expect(wrong.code, wrong.stderr).toBe(ExitCode.AUTH);
        expect(wrong.stderr).toMatch(/stack=.*at /s);
        const wrongJson = await run(syncArgs(url, join(dir, 'w2'), ['--verbose']), { COSTSYNC_API_KEY: `${secret}x` });
        expect(wrongJson.stderr).toMatch(/"stack":"ApiError: /);
        const pushed = await run([
          'push',
          '--base-url',
          url,
          '--db',
          join(dir, 'c.duckdb'),
          '--state-dir',
          join(dir, 'state'),
          '--connection',
          'c1',
          '--api-key-file',
          join(dir, 'key.txt'),
          '--verbose',
          '--log-format',
          'json',
          fileURLToPath(new URL('../fixtures/focus-1.2-ai-gateway.csv', import.meta.url)),
        ]);
        expect(pushed.code, pushed.stderr).toBe(0);
        for (const text of [ok.stdout, ok.stderr, wrong.stdout, wrong.stderr, wrongJson.stderr, pushed.stdout, pushed.stderr])
          expect(text).not.toContain(secret);
        const stateFiles = readdirSync(join(dir, 'state')).filter((f) => f.endsWith('.json'));
        expect(stateFiles.length).toBe(1);
        for (const f of stateFiles) {
          expect(readFileSync(join(dir, 'state', f), 'utf8')).not.toContain(secret);
          expect(statSync(join(dir, 'state', f)).mode & 0o077).toBe(0);
        }
        const wh = await openReadOnly(join(dir, 'c.duckdb'));
        try {
          const tables = await wh.sql<{ name: string }>(
            "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'main'",
          );
          for (const { name } of tables) {
            const [hit] = await wh.sql<{ n: number }>(`SELECT count(*) n FROM "${name}" t WHERE t::VARCHAR LIKE '%' || $1 || '%'`, [
              secret,
            ]);
            expect(hit!.n).toBe(0);
          }
        } finally {
          wh.close();
        }
      });
    });
  });

  it('lets one of two runs started together proceed; the other exits 5', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 200, clock, faults: { latencyMs: 20 } }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key' };
        const [a, b] = await Promise.all([run(syncArgs(url, dir), env), run(syncArgs(url, dir), env)]);
        expect([a.code, b.code].sort()).toEqual([0, ExitCode.LOCKED]);
        expect((a.code === 5 ? a : b).stderr).toMatch(/holds the lock/);
        expect((await tableDigest(join(dir, 'c.duckdb'))).line_items!.rows).toBe(200 * 30);
      });
    });
  });
});
