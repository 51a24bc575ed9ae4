// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: Leases on a bucket: unit/lease, lost-answers (a lease's write whose answer is lost), sync-lock.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import {
  CLI,
  IN_OTHER_PID_NAMESPACE,
  SPAN,
  run,
  killRunner,
  startCli,
  withEmulator,
  withTempDir,
  type CliResult,
  backfillFlags,
} from '../support/helpers.js';
import { Bucket } from '../../src/outputs/s3.js';
import { Lease } from '../../src/state/lease.js';
import { faultProxy, useRgw, startS3rver } from '../support/s3.js';
import { bucketSyncCommand } from '../support/lake-bucket.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

const s3 = useRgw();

function args(url: string, dir: string, bucket: string, state: string, more: string[] = []): string[] {
  return bucketSyncCommand(url, bucket, join(dir, state), [...backfillFlags(10, { rateLimit: false }), ...more]);
}

async function getText(bucket: string, key: string): Promise<string> {
  return await (await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString();
}

async function putText(bucket: string, key: string, text: string): Promise<void> {
  await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: text }));
}

describe('a lease keeps runners on different machines apart', () => {
  it('two runners with their own state directories on one s3:// warehouse: one runs, the other exits 5 naming it', async () => {
    await s3.createBucket('lease-a');
    let second: Promise<CliResult> | null = null;
    let startSecond = () => undefined as void;
    await withEmulator({ ...SPAN, rowsPerDay: 50, clock, onRequest: () => startSecond() }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() };
        // The first runner holds the lease before its first API request: the second starts then.
        startSecond = () => {
          second ??= run(args(url, dir, 'lease-a', 'b', ['--rate-limit', '100000']), env);
        };
        const first = await run(args(url, dir, 'lease-a', 'a', ['--rate-limit', '120']), env);
        expect(first.code, first.stderr).toBe(0);
        const other = await second!;
        expect(other.code, other.stderr).toBe(5);
        expect(other.stderr).toContain('CS_ERR_LEASE_HELD');
        const runId = /"runId":"([^"]+)"/.exec(first.stdout + first.stderr)?.[1];
        expect(runId).toBeDefined();
        expect(other.stderr).toContain(`run ${runId}`);
        // The lease is gone once the first run ended: the next run goes ahead.
        const third = await run(args(url, dir, 'lease-a', 'b', ['--rate-limit', '100000']), env);
        expect(third.code, third.stderr).toBe(0);
      });
    });
  });

  it('a runner SIGKILLed while holding the lease on another machine: refused while the lease is fresh, taken over once it is stale, naming the old holder; on this machine, at once', async () => {
    await s3.createBucket('lease-b');
    const runner = killRunner({ COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() }, (e) => e.route === 'line-items');
    await withEmulator({ ...SPAN, rowsPerDay: 50, clock, onRequest: runner.onRequest }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() };
        const killed = await runner.run([CLI, ...args(url, dir, 'lease-b', 'a', ['--rate-limit', '100000', '--lease-ttl', '5m'])], {
          atRequest: 1,
        });
        expect(killed.signal).toBe('SIGKILL');
        // As if the killed runner had been on another machine (on this one, its dead pid frees the lease at once).
        const lease = {
          ...(JSON.parse(await getText('lease-b', 'wh/costs.duckdb.lease')) as { runId: string; renewedAt: string }),
          host: 'another-machine',
        };
        await putText('lease-b', 'wh/costs.duckdb.lease', JSON.stringify(lease));
        const refused = await run(args(url, dir, 'lease-b', 'b', ['--rate-limit', '100000', '--lease-ttl', '5m']), env);
        expect(refused.code, refused.stderr).toBe(5);
        expect(refused.stderr).toContain(`run ${lease.runId}`);
        // Ten minutes later by the bucket's clock (its Date, which decides, moved on; the lease's Last-Modified did not).
        const later = await faultProxy(s3.endpoint, () => null, { shiftDateMs: 10 * 60_000 });
        const taken = await run(args(url, dir, 'lease-b', 'b', ['--rate-limit', '100000', '--lease-ttl', '5m']), {
          ...env,
          ...s3.env(later.endpoint),
        }).finally(() => later.close());
        expect(taken.code, taken.stderr).toBe(0);
        expect(taken.stderr).toContain('took over the stale lease');
        expect(taken.stderr).toContain(`run ${lease.runId}`);
        expect(await s3.keys('lease-b', 'wh/')).toEqual(['wh/costs.duckdb']);

        // Killed on this machine: the next run takes the lease over at once (its process is gone).
        const again = await runner.run(
          [CLI, ...args(url, dir, 'lease-b', 'a', ['--rate-limit', '100000', '--lease-ttl', '5m', '--full-refresh'])],
          { atRequest: 1 },
        );
        expect(again.signal).toBe('SIGKILL');
        const next = await run(args(url, dir, 'lease-b', 'b', ['--rate-limit', '100000']), env);
        expect(next.code, next.stderr).toBe(0);
        expect(next.stderr).toContain('its process on this machine is gone');
      });
    });
  });

  it('a runner whose lease was taken over, and whose warehouse another run published meanwhile, does not overwrite it: exit 5', async () => {
    await s3.createBucket('lease-c');
    let taken = false;
    let takeOver = async () => undefined as void;
    await withEmulator(
      {
        ...SPAN,
        rowsPerDay: 50,
        clock,
        onRequest: () => {
          if (!taken) {
            taken = true;
            void takeOver();
          }
        },
      },
      async ({ url }) => {
        await withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() };
          let done!: () => void;
          const tookOver = new Promise<void>((resolve) => {
            done = resolve;
          });
          // At its first API request, another runner takes the lease over and publishes its warehouse.
          takeOver = async () => {
            await putText(
              'lease-c',
              'wh/costs.duckdb.lease',
              JSON.stringify({
                host: 'elsewhere',
                pid: 1,
                runId: 'other-run',
                startedAt: new Date().toISOString(),
                renewedAt: new Date().toISOString(),
              }),
            );
            await putText('lease-c', 'wh/costs.duckdb', "the other run's warehouse");
            done();
          };
          const run = startCli(
            args(url, dir, 'lease-c', 'a', ['--rate-limit', '600', '--publish-interval', '0', '--lease-ttl', '3s']),
            env,
          ).result;
          await tookOver;
          const result = await run;
          expect(result.code, result.stderr).toBe(5);
          expect(result.stderr).toMatch(/CS_ERR_LEASE_LOST|CS_ERR_WAREHOUSE_CHANGED/);
          expect(await getText('lease-c', 'wh/costs.duckdb')).toBe("the other run's warehouse");
          expect(JSON.parse(await getText('lease-c', 'wh/costs.duckdb.lease')).runId).toBe('other-run');
        });
      },
    );
  });

  it('a server that ignores conditional writes (s3rver) is refused at the start (exit 2) unless --lease off', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const fake = await startS3rver(join(dir, 's3rver'), ['lease-d']);
        try {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...fake.env };
          const refused = await run(args(emulator.url, dir, 'lease-d', 'a', ['--rate-limit', '100000']), env);
          expect(refused.code, refused.stderr).toBe(2);
          expect(refused.stderr).toContain('ignores conditional writes');
          expect(refused.stderr).toContain('--lease off');
          expect(emulator.requestLog.total).toBe(0);
          const off = await run(args(emulator.url, dir, 'lease-d', 'a', ['--rate-limit', '100000', '--lease', 'off']), env);
          expect(off.code, off.stderr).toBe(0);
        } finally {
          await fake.close();
        }
      });
    });
  });

  it('push to an s3:// warehouse holds its lease too: refused (exit 5) while another machine holds it, then publishes', async () => {
    await s3.createBucket('lease-e');
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() };
        const file = join(dir, 'rows.csv');
        writeFileSync(file, 'ChargePeriodStart,BilledCost,ServiceName,ChargeCategory\n2025-06-03,1.25,Gateway,Usage\n');
        const push = [
          'push',
          '--base-url',
          url,
          '--db',
          's3://lease-e/wh/costs.duckdb',
          '--state-dir',
          join(dir, 'state'),
          '--connection',
          'demo-connection',
          '--rate-limit',
          '100000',
          '--log-format',
          'json',
          file,
        ];
        const now = new Date().toISOString();
        await putText(
          'lease-e',
          'wh/costs.duckdb.lease',
          JSON.stringify({ host: 'elsewhere', pid: 1, runId: 'nightly-run', startedAt: now, renewedAt: now }),
        );
        const refused = await run(push, env);
        expect(refused.code, refused.stderr).toBe(5);
        expect(refused.stderr).toContain('run nightly-run on elsewhere');
        await s3.client.send(new DeleteObjectCommand({ Bucket: 'lease-e', Key: 'wh/costs.duckdb.lease' }));
        const pushed = await run(push, env);
        expect(pushed.code, pushed.stderr).toBe(0);
        expect(await s3.keys('lease-e')).toEqual(['wh/costs.duckdb']);
      });
    });
  });
});

/**
 * A holder process of the lease (or of a lock file) started by the test: `wrap` puts it in another PID
 * namespace (`unshare`) or on a clock that runs behind (`faketime`). It prints its identity once it holds,
 * and lets go when its stdin closes.
 */
async function holder(what: 'lease' | 'lock', target: string, wrap: readonly string[], env: Record<string, string> = {}) {
  const dist = new URL('../../dist/', import.meta.url).href;
  const script =
    what === 'lock'
      ? `const { acquireLock } = await import('${dist}state/lock.js');
       const lock = acquireLock(process.env.TARGET, 'holder in the test');
       console.log(JSON.stringify({ pid: process.pid, now: new Date().toISOString() }));
       process.stdin.resume(); process.stdin.on('end', () => { lock.release(); process.exit(0); });`
      : `const { openBucket } = await import('${dist}outputs/s3.js');
       const { Lease } = await import('${dist}state/lease.js');
       const [bucket, key] = process.env.TARGET.split('/');
       await Lease.acquire(openBucket(bucket), key, { ttlMs: 8000, now: () => Date.now(), runId: 'holder-run' });
       console.log(JSON.stringify({ pid: process.pid, now: new Date().toISOString() }));
       process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`;
  const child = spawn(wrap[0]!, [...wrap.slice(1), process.execPath, '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', TARGET: target, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  return {
    ...(JSON.parse(line) as { pid: number; now: string }),
    child,
    stop: async () => {
      child.stdin.end();
      await once(child, 'exit');
    },
  };
}

describe("a holder is known by its machine, boot, PID namespace and process; staleness by the bucket's clock", () => {
  it('a live holder in another PID namespace of this host keeps its lease (it waits for the TTL, not taken at once)', async () => {
    await s3.createBucket('lease-ns');
    const held = await holder('lease', 'lease-ns/costs.duckdb.lease', IN_OTHER_PID_NAMESPACE, s3.env());
    try {
      // Its pid does not exist in this namespace: the previous version concluded "its process is gone".
      expect(held.pid).toBeGreaterThan(32768);
      const taking = Lease.acquire(new Bucket(s3.client, 'lease-ns'), 'costs.duckdb.lease', {
        ttlMs: 8000,
        now: () => Date.now(),
        runId: 'taker',
      });
      await expect(taking).rejects.toMatchObject({
        code: 'CS_ERR_LEASE_HELD',
        message: expect.stringContaining('run holder-run'),
        hint: expect.stringContaining("--lease-ttl (8 s, by the bucket's clock)"),
      });
    } finally {
      await held.stop();
    }
  });

  it('a live holder whose clock runs 60 s behind keeps its fresh lease; once its process is gone (this machine), it is taken at once', async () => {
    await s3.createBucket('lease-clock');
    const started = new Date().toISOString();
    const held = await holder('lease', 'lease-clock/costs.duckdb.lease', ['faketime', '-f', '-60s'], {
      ...s3.env(),
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    });
    const bucket = new Bucket(s3.client, 'lease-clock');
    // Its clock is behind: the time it wrote is before this test started it, by our clock.
    expect(held.now < started, `${held.now} is before ${started}`).toBe(true);
    await expect(Lease.acquire(bucket, 'costs.duckdb.lease', { ttlMs: 8000, now: () => Date.now(), runId: 'taker' })).rejects.toMatchObject(
      { code: 'CS_ERR_LEASE_HELD' },
    );
    // faketime runs node as its child: the holder's own process is killed.
    process.kill(held.pid, 'SIGKILL');
    await once(held.child, 'exit');
    const notices: string[] = [];
    const lease = await Lease.acquire(bucket, 'costs.duckdb.lease', {
      ttlMs: 8000,
      now: () => Date.now(),
      runId: 'taker',
      notice: (m) => notices.push(m),
    });
    expect(notices[0]).toMatch(/took over the stale lease .* of run holder-run .*its process on this machine is gone/);
    await lease.release();
  });
});
