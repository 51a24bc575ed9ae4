/**
 * What a new user meets on the first day: a future --until, stops that must be quick, a
 * mistyped host, a failed run's key and URL, errors that name their fix, closed pipes, --dry-run.
 * Commands run in-process through their functions; a process is spawned only for signals and pipes.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { keyFingerprint } from '../../src/fingerprint.js';
import { StateStore } from '../../src/state/store.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { runSync } from '../../src/sync/runner.js';
import {
  CLI,
  FAST_CLIENT,
  memoryLogger,
  tableDigest,
  testSyncConfig,
  withEmulator,
  withTempDir,
  SPAN,
  run as inProcess,
  syncCommand,
  spanFlags,
  startCli,
} from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

/** Runs `command` in-process (the helpers' `run`) with its flags given as an object. */
function run(command: 'sync' | 'status', flags: Record<string, unknown>, env: Record<string, string> = { COSTSYNC_API_KEY: 'demo-key' }) {
  const argv = Object.entries(flags).flatMap(([k, v]) => (v === true ? [`--${k}`] : [`--${k}`, String(v)]));
  return inProcess([command, ...argv], env);
}

/** A spawned sync of SPAN at 600 requests a minute (so a signal or a deadline lands mid-run), then `more`, with JSON logs. */
const rateLimited = (url: string, dir: string, more: string[] = []) =>
  syncCommand(url, dir, [...spanFlags(undefined, { rateLimit: false }), '--rate-limit', '600', ...more, '--log-format', 'json']);

const syncArgs = (url: string, dir: string, over: Record<string, unknown> = {}) => ({
  'base-url': url,
  db: join(dir, 'c.duckdb'),
  'state-dir': join(dir, 'state'),
  'start-date': SPAN.startDate,
  until: SPAN.endDate,
  'rate-limit': 100_000,
  'log-format': 'json',
  ...over,
});

function stateOf(dir: string, url: string, db = join(dir, 'c.duckdb')) {
  const store = new StateStore(
    join(dir, 'state'),
    { name: 'default', baseUrl: url, keyFingerprint: keyFingerprint('demo-key') },
    basename(workingCopyPath(join(dir, 'state'), db), '.duckdb'),
  );
  return { store, state: store.load() };
}

describe('a future --until', () => {
  it('is refused with exit 2 before anything is created', async () => {
    await withTempDir(async (dir) => {
      const result = await run('sync', syncArgs('http://127.0.0.1:9', dir, { until: '2999-01-01', 'log-format': 'pretty' }));
      expect(result.code).toBe(ExitCode.USAGE);
      expect(result.stderr).toMatch(/--until \(2999-01-01\) is after today/);
      expect(readdirSync(dir)).toEqual([]);
    });
  });

  it('recorded by an older costsync is mended on the next run, with a notice, and the lookback is fetched again', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        // An older costsync took --until 2025-06-30 on 2025-06-25 (no check of today).
        const config = testSyncConfig(emulator.url, dir, { streams: ['line_items'], reconcile: 'off' });
        expect((await runSync({ config, logger: memoryLogger(), clientOptions: FAST_CLIENT })).outcome).toBe('success');
        expect(stateOf(dir, emulator.url, config.db).state.streams.line_items!.syncedThrough).toBe('2025-06-30');
        emulator.requestLog.reset();
        const logger = memoryLogger();
        const mended = await runSync({
          config: { ...config, until: '2025-06-25', today: '2025-06-25' },
          logger,
          clientOptions: FAST_CLIENT,
        });
        expect(mended.outcome).toBe('success');
        expect(
          logger.lines.some((l) => /watermark 2025-06-30 is after today \(2025-06-25\)/.test(l)),
          logger.lines.join('\n'),
        ).toBe(true);
        // The three-day lookback, not today alone.
        expect(logger.lines.some((l) => /"line_items: planned 2025-06-23\.\.2025-06-25/.test(l))).toBe(true);
        expect(stateOf(dir, emulator.url, config.db).state.streams.line_items!.syncedThrough).toBe('2025-06-25');
      });
    });
  });
});

describe('stopping is bounded, whatever the stream', () => {
  const many = { ...SPAN, rowsPerDay: 30, anomaliesPerDay: 25, clock };

  it('SIGTERM while anomalies are collected: no request starts after the signal but the ones in flight, exit 4, the next run completes the same tables', async () => {
    let anomalyRequests = 0;
    let total = 0;
    let atSignal = -1;
    let stop: (() => void) | null = null;
    await withEmulator(
      {
        ...many,
        onRequest: (entry) => {
          total += 1;
          if (entry.route === 'anomalies' && ++anomalyRequests === 3) {
            atSignal = total;
            stop?.();
          }
        },
      },
      async (emulator) => {
        await withTempDir(async (dir) => {
          const args = rateLimited(emulator.url, dir);
          const { child, result } = startCli(args, { COSTSYNC_API_KEY: 'demo-key' });
          stop = () => child.kill('SIGTERM');
          const { code, stderr } = await result;
          expect(code, stderr).toBe(ExitCode.STOPPED_EARLY);
          expect(atSignal).toBeGreaterThan(0);
          // At most the request in flight, and one the limiter had just released.
          expect(total - atSignal).toBeLessThanOrEqual(2);

          stop = null;
          anomalyRequests = 0;
          const resumed = await run('sync', syncArgs(emulator.url, dir));
          expect(resumed.code, resumed.stderr).toBe(ExitCode.OK);
          // The collection the stop cut short takes many more requests than were made after the signal.
          expect(anomalyRequests).toBeGreaterThan(10);
          await withTempDir(async (fresh) => {
            expect((await run('sync', syncArgs(emulator.url, fresh))).code).toBe(ExitCode.OK);
            expect(await tableDigest(join(dir, 'c.duckdb'))).toEqual(await tableDigest(join(fresh, 'c.duckdb')));
          });
        });
      },
    );
  });

  it('--max-runtime ends the run at its deadline: no more requests than the rate limit allows in that time', async () => {
    let total = 0;
    await withEmulator(
      {
        ...many,
        onRequest: () => {
          total += 1;
        },
      },
      async (emulator) => {
        await withTempDir(async (dir) => {
          const args = rateLimited(emulator.url, dir, ['--max-runtime', '2s']);
          const { code, stderr, stdout } = await startCli(args, { COSTSYNC_API_KEY: 'demo-key' }).result;
          expect(code, stderr).toBe(ExitCode.STOPPED_EARLY);
          // The summary (on stdout) says why it stopped.
          expect(JSON.parse(stdout)).toMatchObject({ msg: 'sync finished', stopReason: '--max-runtime of 2 s reached' });
          // 600 a minute is one request every 102 ms: about 20 in 2 s, and the ones in flight.
          expect(total).toBeLessThanOrEqual(23);
          total = 0;
          expect((await run('sync', syncArgs(emulator.url, dir))).code).toBe(ExitCode.OK);
          expect(total).toBeGreaterThan(23);
        });
      },
    );
  });
});

/** A run's JSON log says the API is unreachable (`msg`), and made no retry. */
function expectUnreachable(result: { stdout: string; stderr: string }, msg: RegExp): void {
  const lines = `${result.stderr}${result.stdout}`
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines.find((l) => l.level === 'error')).toMatchObject({ code: 'CS_ERR_UNREACHABLE', msg: expect.stringMatching(msg) });
  expect(lines.find((l) => l.msg === 'sync finished')).toMatchObject({ retries: 0 });
}

describe('a mistyped host, and retries said on the log', () => {
  it('a refused connection at the first request is exit 2 at once, naming the host, with no retries', async () => {
    await withTempDir(async (dir) => {
      const result = await run('sync', syncArgs('http://127.0.0.1:9', dir, { 'rate-limit': 60 }));
      expect(result.code).toBe(ExitCode.USAGE);
      expectUnreachable(result, /Cannot reach the API at http:\/\/127\.0\.0\.1:9: nothing accepts connections/);
    });
  });

  it('an https URL on a plain http port is exit 2 at once, with no retries, the hint naming http and https', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 1, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const result = await run('sync', syncArgs(url.replace('http:', 'https:'), dir, { 'rate-limit': 60 }));
        expect(result.code).toBe(ExitCode.USAGE);
        expectUnreachable(result, /does not speak TLS \(an https URL on a plain http port\?\)[\s\S]*a plain http server takes http:\/\//);
      });
    });
  });

  it('a retried request says so at info, with the attempts left', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock, faults: { errorRate: 0.3 } }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const logger = memoryLogger();
        await runSync({ config: testSyncConfig(url, dir), logger, clientOptions: FAST_CLIENT });
        const retry = logger.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l.msg).startsWith('retrying '));
        expect(retry).toMatchObject({
          level: 'info',
          msg: expect.stringMatching(/^retrying GET \/api\/v1\/public\/\S+ \(attempt 2, \d+ more attempt\(s\) before giving up\): /),
        });
      });
    });
  });
});

describe('a failed run leaves what the guard compares', () => {
  it('a run with a wrong key fails (exit 3) without recording its fingerprint: the next right run says nothing changed', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect((await run('sync', syncArgs(url, dir))).code).toBe(ExitCode.OK);
        const wrong = await run('sync', syncArgs(url, dir), { COSTSYNC_API_KEY: 'wrong-key-1234' });
        expect(wrong.code).toBe(ExitCode.AUTH);
        expect(stateOf(dir, url).state.source.keyFingerprint).toBe(keyFingerprint('demo-key'));
        const right = await run('sync', syncArgs(url, dir));
        expect(right.code).toBe(ExitCode.OK);
        expect(right.stderr).not.toMatch(/changed since the last run/);
      });
    });
  });
});

describe('errors that name the setting and the fix', () => {
  it('--db in a directory that takes no files names --db, the directory and the fix', async () => {
    await withTempDir(async (dir) => {
      const result = await run('sync', syncArgs('http://127.0.0.1:9', dir, { db: '/proc/costs.duckdb', 'log-format': 'pretty' }));
      expect(result.code).toBe(ExitCode.FAILED);
      expect(result.stderr).toMatch(
        /Cannot write the lock file costs\.duckdb\.lock in \/proc: .*\(ENOENT\)[\s\S]*hint: .*--db .*--state-dir/,
      );
      expect(result.stderr).not.toMatch(/\.tmp/);
    });
  });

  it('status with a corrupt state file names the file and the fix (move it aside), shows the rest, exit 1', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect((await run('sync', syncArgs(url, dir))).code).toBe(ExitCode.OK);
        const file = stateOf(dir, url).store.path;
        writeFileSync(file, '{"version": 2, "streams": {');
        const status = await run('status', { db: join(dir, 'c.duckdb'), 'state-dir': join(dir, 'state') });
        expect(status.code).toBe(ExitCode.FAILED);
        expect(status.stderr).toContain(`${file} cannot be read`);
        expect(status.stderr).toMatch(/Move it aside \(mv .*\.bad\)[\s\S]*no --full-refresh needed/);
        expect(status.stdout).toMatch(/line_items\s+\d+/);
        // And moving it aside is enough: the next run goes on from the warehouse's carried state.
        const { renameSync } = await import('node:fs');
        renameSync(file, `${file}.bad`);
        expect((await run('sync', syncArgs(url, dir))).code).toBe(ExitCode.OK);
      });
    });
  });
});

describe('a closed pipe', () => {
  it('query | head: ends quietly with exit 0, no EPIPE trace', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        expect((await run('sync', syncArgs(url, dir))).code).toBe(ExitCode.OK);
        const child = spawn(
          process.execPath,
          [CLI, 'query', '--db', join(dir, 'c.duckdb'), '--format', 'csv', 'SELECT * FROM range(2000000)'],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => {
          stderr += d;
        });
        // Like `head -2`: read a little, then close the pipe.
        child.stdout.once('data', () => child.stdout.destroy());
        const [code] = (await once(child, 'exit')) as [number | null];
        expect(stderr).not.toMatch(/EPIPE|at .*\.js/);
        expect(code).toBe(0);
      });
    });
  });
});

describe('sync --dry-run', () => {
  it("prints the plan with its requests, what the lookback re-reads and what the recheck compares, makes the recheck's, one rollups and one anomalies request, writes nothing; the estimate holds", async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 1200, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        expect((await run('sync', syncArgs(emulator.url, dir, { until: '2025-06-20', 'window-days': 10 }))).code).toBe(ExitCode.OK);
        const files = () => [dir, join(dir, 'state')].flatMap((d) => readdirSync(d).map((f) => `${f}:${statSync(join(d, f)).mtimeMs}`));
        const before = {
          files: files(),
          digest: await tableDigest(join(dir, 'c.duckdb')),
          state: readFileSync(stateOf(dir, emulator.url).store.path, 'utf8'),
        };
        emulator.requestLog.reset();
        const dry = await run('sync', syncArgs(emulator.url, dir, { 'dry-run': true, 'window-days': 10, 'log-format': 'pretty' }));
        expect(dry.code, dry.stderr).toBe(ExitCode.OK);
        // The recheck's three (the run makes them too), the estimate's one, the first anomalies request.
        expect(emulator.requestLog.recent().map((e) => e.route)).toEqual(['rollups', 'rollups', 'rollups', 'rollups', 'anomalies']);
        expect(dry.stdout).toMatch(
          /recheck of 2025-06-01\.\.2025-06-17 \(3 rollups request\(s\)\): every date it compared equals the API's rollups \(dates this run syncs anyway are not compared\)/,
        );
        expect(dry.stdout).toMatch(/line_items: 2025-06-18\.\.2025-06-30, 2 window\(s\), about (\d+) request\(s\)/);
        expect(dry.stdout).toMatch(/fetched again \(already stored; restated costs are re-read\): 2025-06-18\.\.2025-06-20 \(3 days\)/);
        expect(dry.stdout).toMatch(/Dry run: nothing was written/);
        expect({
          files: files(),
          digest: await tableDigest(join(dir, 'c.duckdb')),
          state: readFileSync(stateOf(dir, emulator.url).store.path, 'utf8'),
        }).toEqual(before);

        // The real run takes what the dry run said, within a page a window.
        const estimate = Number(/line_items: [^\n]* about (\d+) request/.exec(dry.stdout)![1]);
        emulator.requestLog.reset();
        expect((await run('sync', syncArgs(emulator.url, dir, { 'window-days': 10 }))).code).toBe(ExitCode.OK);
        const actual = emulator.requestLog.count({ route: 'line-items' }) + 2; // and one check a window
        expect(Math.abs(actual - estimate)).toBeLessThanOrEqual(2);
      });
    });
  });

  it("on a first run (no state, no warehouse) prices a sample page and says the whole run's requests, within 15%", async () => {
    // Three windows of 2,300 rows: pages, a check each, the rollups' other views, the progress estimate and the anomalies.
    await withEmulator({ ...SPAN, rowsPerDay: 230, anomaliesPerDay: 2, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const dry = await run('sync', syncArgs(emulator.url, dir, { 'dry-run': true, 'window-days': 10, 'log-format': 'pretty' }));
        expect(dry.code, dry.stderr).toBe(ExitCode.OK);
        expect(readdirSync(dir)).toEqual([]);
        const asked = emulator.requestLog.recent().map((e) => e.route);
        emulator.requestLog.reset();
        expect((await run('sync', syncArgs(emulator.url, dir, { 'window-days': 10 }))).code).toBe(ExitCode.OK);
        const made = emulator.requestLog.count();
        const said = /\n {2}(about|at least) (\d+) request\(s\) in all/.exec(dry.stdout);
        expect(Math.abs(Number(said?.[2]) - made) / made, `${dry.stdout}\nthe run made ${made}`).toBeLessThanOrEqual(0.15);
        // Every stream is known here, so the total is said as an estimate, not a least.
        expect(said![1]).toBe('about');
        expect(dry.stdout).toMatch(/anomalies: [^\n]*about 1 request\(s\) \[\d+ alert\(s\): one response holds them\]/);
        expect(asked).toEqual(['line-items', 'rollups', 'anomalies']);
      });
    });
  });

  it("prices a backfill from its newest window's sample page, and says when the API sent no line items for it", async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        // The first windows predate the emulator's data (June 2025): the newest holds it.
        const earlier = { 'start-date': '2025-03-01', 'window-days': 30, 'dry-run': true, 'log-format': 'pretty' };
        const backfill = await run('sync', syncArgs(emulator.url, dir, earlier));
        expect(backfill.code, backfill.stderr).toBe(ExitCode.OK);
        expect(backfill.stdout).toMatch(/line_items: [^\n]*\$\d+\.\d\d a row \(a sample page of \d+ line items\)/);
        // Nothing in the span at all: the dry run says where it looked.
        const none = { ...earlier, until: '2025-04-30' };
        const empty = await run('sync', syncArgs(emulator.url, dir, none));
        expect(empty.stdout).toMatch(
          /line_items: [^\n]*not known before the run for 61 date\(s\): the API sent no line items for 2025-04-\d\d\.\.2025-04-30, the newest window/,
        );
      });
    });
  });

  it('says "at least" when the first anomalies response is full: how many more the run takes is not known before', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, anomaliesPerDay: 20, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const dry = await run('sync', syncArgs(emulator.url, dir, { 'dry-run': true, 'log-format': 'pretty' }));
        expect(dry.code, dry.stderr).toBe(ExitCode.OK);
        expect(dry.stdout).toMatch(/anomalies: [^\n]*at least 5 request\(s\) \[the first response is full/);
        expect(dry.stdout).toMatch(/\n {2}at least (\d+) request\(s\) in all \(anomalies may take more; see above\): /);
      });
    });
  });
});
