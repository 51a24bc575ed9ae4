import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import { runSync } from '../../src/sync/runner.js';
import {
  CLI,
  FAST_CLIENT,
  cli,
  killRunner,
  memoryLogger,
  run,
  testSyncConfig,
  withEmulator,
  withTempDir,
  SPAN,
  queryDb,
  FAST_SEND,
  syncCommand,
  spanFlags,
} from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-06-30T12:00:00Z'), sleep: async () => undefined };
const source = { ...SPAN, rowsPerDay: 20, anomaliesPerDay: 12, clock };

interface Receiver {
  url: string;
  bodies: { text: string; events: { event_id: string; kind: string; severity?: string; exit_code?: number; reason?: string }[] }[];
  /** How the next requests are answered: a status, or 'hang' (never answer); the last one repeats. */
  replies: (number | 'hang')[];
  hits: number;
  onHit?: () => void;
}

/** A real webhook receiver on a loopback port 0, recording each JSON body. */
async function withReceiver<T>(path: string, fn: (receiver: Receiver) => Promise<T>): Promise<T> {
  const receiver: Receiver = { url: '', bodies: [], replies: [200], hits: 0 };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d;
    });
    req.on('end', () => {
      const reply = receiver.replies[Math.min(receiver.hits, receiver.replies.length - 1)]!;
      receiver.hits += 1;
      receiver.onHit?.();
      if (reply === 'hang') return;
      if (reply >= 200 && reply < 300) receiver.bodies.push(JSON.parse(body));
      res.writeHead(reply, { 'content-type': 'text/plain' }).end(reply < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as { port: number }).port}${path}`;
  try {
    return await fn(receiver);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const events = (r: Receiver) => r.bodies.flatMap((b) => b.events);

/** Anomalies the rules say to send: high or critical, detected within 48 hours of the clock. */
const EXPECTED =
  "SELECT count(*)::INT AS n FROM anomalies WHERE severity IN ('high', 'critical') AND detected_date >= TIMESTAMPTZ '2025-06-28 12:00:00+00'";

describe('notifications', () => {
  it('new high anomalies arrive once, in one message with a text and events; a re-run sends nothing new; old ones are stored, not sent', async () => {
    await withEmulator(source, async ({ url }) => {
      await withReceiver('/hook', async (receiver) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(url, dir, { notify: [receiver.url] });
          const first = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, sendOptions: FAST_SEND });
          expect(first.outcome).toBe('success');
          const [{ n }] = (await queryDb<{ n: number }>(config.db, EXPECTED)) as [{ n: number }];
          const [{ all }] = (await queryDb<{ all: number }>(
            config.db,
            "SELECT count(*)::INT AS all FROM anomalies WHERE severity IN ('high', 'critical')",
          )) as [{ all: number }];
          expect(n).toBeGreaterThan(0);
          expect(all).toBeGreaterThan(n);
          expect(receiver.bodies).toHaveLength(1);
          expect(events(receiver)).toHaveLength(n);
          expect(new Set(events(receiver).map((e) => e.event_id)).size).toBe(n);
          expect(events(receiver).every((e) => e.kind === 'anomaly' && ['high', 'critical'].includes(e.severity!))).toBe(true);
          expect(receiver.bodies[0]!.text).toMatch(
            /^costsync: \d+ events?\n• \[default\] (HIGH|CRITICAL) anomaly \(new\): \w+ \/ .+: \$[\d,.]+ vs \$[\d,.]+ expected \([+-]\d+\.\d%\), detected 2025-06-/,
          );
          const [run] = await queryDb<{ sent: number; failures: number }>(
            config.db,
            'SELECT notifications_sent AS sent, notification_failures AS failures FROM sync_runs',
          );
          expect(run).toEqual({ sent: n, failures: 0 });

          await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, sendOptions: FAST_SEND });
          expect(receiver.bodies).toHaveLength(1);
        });
      });
    });
  });

  it('a receiver answering 500 then 200 gets the message once; one that never answers is given up on in bounded time and the events wait for the next run', async () => {
    await withEmulator(source, async ({ url }) => {
      await withReceiver('/hook', async (receiver) => {
        await withTempDir(async (dir) => {
          receiver.replies = [500, 200];
          const config = testSyncConfig(url, dir, { notify: [receiver.url] });
          await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, sendOptions: FAST_SEND });
          expect(receiver.hits).toBe(2);
          expect(receiver.bodies).toHaveLength(1);
        });
        await withTempDir(async (dir) => {
          receiver.replies = ['hang'];
          receiver.hits = 0;
          receiver.bodies = [];
          const config = testSyncConfig(url, dir, { notify: [receiver.url] });
          const logger = memoryLogger();
          const down = await runSync({ config, logger, clock, clientOptions: FAST_CLIENT, sendOptions: FAST_SEND });
          expect(down.outcome).toBe('success');
          expect(receiver.hits).toBe(1 + FAST_SEND.retries);
          expect(logger.lines.join('\n')).toMatch(/notification not sent \(\d+ event\(s\) wait for the next run\)/);
          const [run] = await queryDb<{ failures: number }>(config.db, 'SELECT notification_failures AS failures FROM sync_runs');
          expect(run!.failures).toBeGreaterThan(0);
          receiver.replies = [200];
          await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, sendOptions: FAST_SEND });
          expect(events(receiver).length).toBe(run!.failures);
        });
      });
    });
  });

  it('SIGKILLed while sending (after the anomaly commit), a re-run sends exactly the missed events, and a third run nothing', async () => {
    const runner = killRunner({ COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' });
    await withEmulator({ rowsPerDay: 20, anomaliesPerDay: 12 }, async ({ url }) => {
      await withReceiver('/hook', async (receiver) => {
        await withTempDir(async (dir) => {
          const args = [
            CLI,
            ...syncCommand(url, dir, ['--rate-limit', '100000', '--notify', receiver.url, '--notify-severity', 'low', '--quiet']),
          ];
          // The receiver takes the first message and never answers: the sync is killed mid-send.
          receiver.replies = ['hang', 200];
          let killed: (() => void) | null = null;
          receiver.onHit = () => killed?.();
          const run = runner.run(args);
          killed = () => runner.killNow();
          const first = await run;
          expect(first.signal).toBe('SIGKILL');
          receiver.onHit = undefined;
          const again = await runner.finish(args);
          expect(again).toMatchObject({ code: 0 });
          const [{ n }] = (await queryDb<{ n: number }>(
            join(dir, 'c.duckdb'),
            'SELECT count(*)::INT AS n FROM _costsync_notifications WHERE sent_at IS NOT NULL',
          )) as [{ n: number }];
          expect(n).toBeGreaterThan(0);
          expect(events(receiver)).toHaveLength(n);
          expect(new Set(events(receiver).map((e) => e.event_id)).size).toBe(n);
          expect((await runner.finish(args)).code).toBe(0);
          expect(events(receiver)).toHaveLength(n);
        });
      });
    });
  });

  it('a failed run notifies with its exit code, reason and fix', async () => {
    const keys = { keys: [{ key: 'gone', scopes: [...SCOPES], plan: 'business' as const, revoked: true }], connections: [] };
    await withEmulator({ ...source, keys }, async ({ url }) => {
      await withReceiver('/hook', async (receiver) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(url, dir, { apiKey: 'gone', notify: [receiver.url] });
          const failed = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT, sendOptions: FAST_SEND });
          expect(failed.outcome).toBe('failed');
          expect(events(receiver)).toEqual([
            expect.objectContaining({ kind: 'run_failed', exit_code: 3, reason: expect.stringMatching(/revoked/) }),
          ]);
          expect(receiver.bodies[0]!.text).toMatch(/\[default\] costsync run .* failed \(exit 3\): .*revoked.* Fix: /);
        });
      });
    });
  });

  it('the webhook URL never appears in any output, file or table; the metrics file passes promtool and matches sync_runs', async () => {
    const token = 'T0SECRET/B0SECRET/XyZ-webhook-token-123';
    await withEmulator(source, async ({ url }) => {
      await withReceiver(`/services/${token}`, async (receiver) => {
        await withTempDir(async (dir) => {
          const metrics = join(dir, 'costsync.prom');
          const base = ['--base-url', url, '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state')];
          const sync = [
            'sync',
            ...base,
            ...spanFlags(),
            '--notify',
            receiver.url,
            '--notify-max-age',
            '1000d',
            '--metrics-file',
            metrics,
            '--log-format',
            'json',
            '--verbose',
          ];
          // A failed send first (its error must not carry the URL either), then the message.
          receiver.replies = [500, 200];
          const results = [
            await run(sync, { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' }),
            await run(sync, { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' }),
          ];
          results.push(await cli(['notify', '--test', '--notify', receiver.url]));
          results.push(await run(['notify', '--test', '--notify', 'http://example.com/hook/secret-in-error']));
          results.push(await run(['status', ...base, '--format', 'json']));
          expect(
            results.map((r) => r.code),
            results[2]!.stdout,
          ).toEqual([0, 0, 0, 2, 0]);
          expect(results[3]!.stderr).toMatch(/must use https/);
          for (const r of results) expect(`${r.stdout}${r.stderr}`).not.toMatch(/SECRET|webhook-token|secret-in-error/);
          const walk = (d: string): string[] =>
            readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
          for (const file of walk(dir))
            expect({ file, leaked: readFileSync(file).includes('webhook-token') }).toEqual({ file, leaked: false });
          expect(receiver.bodies.length).toBeGreaterThan(0);

          const text = readFileSync(metrics, 'utf8');
          const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
          if (promtool.error) console.warn("promtool missing: install Debian's prometheus package (.ci/run does)");
          expect({ status: promtool.status, out: `${promtool.stdout}${promtool.stderr}` }).toEqual({ status: 0, out: '' });
          const value = (name: string, labels: string) => Number(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text)?.[1]);
          const [last] = await queryDb<{ requests: number; rate_limited: number; sent: number }>(
            join(dir, 'c.duckdb'),
            'SELECT requests, rate_limited, notifications_sent AS sent FROM sync_runs ORDER BY started_at DESC LIMIT 1',
          );
          const requestSamples = [...text.matchAll(/^costsync_last_run_requests\{.*\} (\d+)$/gm)].reduce((s, m) => s + Number(m[1]), 0);
          expect(requestSamples).toBe(last!.requests);
          expect(value('costsync_last_run_rate_limited', 'source="default"')).toBe(last!.rate_limited);
          expect(value('costsync_last_run_outcome', 'source="default",outcome="success"')).toBe(1);
          const streams = await queryDb<{ stream: string; inserted: number }>(
            join(dir, 'c.duckdb'),
            'SELECT stream, rows_inserted AS inserted FROM sync_run_streams WHERE run_id = (SELECT max(run_id) FROM sync_runs) ORDER BY stream',
          );
          for (const s of streams)
            expect(value('costsync_last_run_rows', `source="default",stream="${s.stream}",change="inserted"`)).toBe(s.inserted);
          const open = await queryDb<{ n: number }>(
            join(dir, 'c.duckdb'),
            "SELECT count(*)::INT AS n FROM anomalies WHERE status IN ('new', 'acknowledged') AND severity = 'high'",
          );
          expect(value('costsync_open_anomalies', 'source="default",severity="high"')).toBe(open[0]!.n);
          const status = JSON.parse(results[4]!.stdout);
          expect(status.metrics.runs[0]).toMatchObject({ source: 'default', outcome: 'success', requests: last!.requests });
          expect(existsSync(`${metrics}.tmp`)).toBe(false);
        });
      });
    });
  });
});
