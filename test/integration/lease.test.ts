import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, SPAN, cli, killRunner, withEmulator, withTempDir, type CliResult } from '../helpers.js';
import { startRgw, startS3rver, type S3Server } from '../s3.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

let s3: S3Server;
beforeAll(() => {
  s3 = startRgw();
});
afterAll(() => s3?.stop());

function args(url: string, dir: string, bucket: string, state: string, more: string[] = []): string[] {
  return [
    'sync', '--base-url', url, '--db', `s3://${bucket}/wh/costs.duckdb`, '--state-dir', join(dir, state),
    '--start-date', SPAN.startDate, '--until', SPAN.endDate, '--window-days', '10', '--log-format', 'json', ...more,
  ];
}

async function getText(bucket: string, key: string): Promise<string> {
  return (await (await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString());
}

async function putText(bucket: string, key: string, text: string): Promise<void> {
  await s3.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: text }));
}

/** Starts the CLI and returns its result once it exits. */
function start(argv: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...argv], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { stdout += d; });
  child.stderr.on('data', (d: Buffer) => { stderr += d; });
  return once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as string | null, stdout, stderr }));
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
          second ??= cli(args(url, dir, 'lease-a', 'b', ['--rate-limit', '100000']), env);
        };
        const first = await cli(args(url, dir, 'lease-a', 'a', ['--rate-limit', '120']), env);
        expect(first.code, first.stderr).toBe(0);
        const other = await second!;
        expect(other.code, other.stderr).toBe(5);
        expect(other.stderr).toContain('CS_ERR_LEASE_HELD');
        const runId = /"runId":"([^"]+)"/.exec(first.stderr)?.[1];
        expect(runId).toBeDefined();
        expect(other.stderr).toContain(`run ${runId}`);
        // The lease is gone once the first run ended: the next run goes ahead.
        const third = await cli(args(url, dir, 'lease-a', 'b', ['--rate-limit', '100000']), env);
        expect(third.code, third.stderr).toBe(0);
      });
    });
  }, 120_000);

  it('a runner SIGKILLed while holding the lease on another machine: refused while the lease is fresh, taken over once it is stale, naming the old holder; on this machine, at once', async () => {
    await s3.createBucket('lease-b');
    const runner = killRunner({ COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() }, (e) => e.route === 'line-items');
    await withEmulator({ ...SPAN, rowsPerDay: 50, clock, onRequest: runner.onRequest }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() };
        const killed = await runner.run([CLI, ...args(url, dir, 'lease-b', 'a', ['--rate-limit', '100000', '--lease-ttl', '5m'])], { atRequest: 1 });
        expect(killed.signal).toBe('SIGKILL');
        // As if the killed runner had been on another machine (on this one, its dead pid frees the lease at once).
        const lease = { ...JSON.parse(await getText('lease-b', 'wh/costs.duckdb.lease')) as { runId: string; renewedAt: string }, host: 'another-machine' };
        await putText('lease-b', 'wh/costs.duckdb.lease', JSON.stringify(lease));
        const refused = await cli(args(url, dir, 'lease-b', 'b', ['--rate-limit', '100000', '--lease-ttl', '5m']), env);
        expect(refused.code, refused.stderr).toBe(5);
        expect(refused.stderr).toContain(`run ${lease.runId}`);
        // Ten minutes without a renewal (as if the TTL had passed since the kill).
        await putText('lease-b', 'wh/costs.duckdb.lease', JSON.stringify({ ...lease, renewedAt: new Date(Date.parse(lease.renewedAt) - 10 * 60_000).toISOString() }));
        const taken = await cli(args(url, dir, 'lease-b', 'b', ['--rate-limit', '100000', '--lease-ttl', '5m']), env);
        expect(taken.code, taken.stderr).toBe(0);
        expect(taken.stderr).toContain('took over the stale lease');
        expect(taken.stderr).toContain(`run ${lease.runId}`);
        expect(await s3.keys('lease-b', 'wh/')).toEqual(['wh/costs.duckdb']);

        // Killed on this machine: the next run takes the lease over at once (its process is gone).
        const again = await runner.run([CLI, ...args(url, dir, 'lease-b', 'a', ['--rate-limit', '100000', '--lease-ttl', '5m', '--full-refresh'])], { atRequest: 1 });
        expect(again.signal).toBe('SIGKILL');
        const next = await cli(args(url, dir, 'lease-b', 'b', ['--rate-limit', '100000']), env);
        expect(next.code, next.stderr).toBe(0);
        expect(next.stderr).toContain('its process on this machine is gone');
      });
    });
  }, 120_000);

  it('a runner whose lease was taken over, and whose warehouse another run published meanwhile, does not overwrite it: exit 5', async () => {
    await s3.createBucket('lease-c');
    let taken = false;
    let takeOver = async () => undefined as void;
    await withEmulator({ ...SPAN, rowsPerDay: 50, clock, onRequest: () => { if (!taken) { taken = true; void takeOver(); } } }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() };
        let done!: () => void;
        const tookOver = new Promise<void>((resolve) => { done = resolve; });
        // At its first API request, another runner takes the lease over and publishes its warehouse.
        takeOver = async () => {
          await putText('lease-c', 'wh/costs.duckdb.lease', JSON.stringify({ host: 'elsewhere', pid: 1, runId: 'other-run', startedAt: new Date().toISOString(), renewedAt: new Date().toISOString() }));
          await putText('lease-c', 'wh/costs.duckdb', 'the other run\'s warehouse');
          done();
        };
        const run = start(args(url, dir, 'lease-c', 'a', ['--rate-limit', '600', '--publish-interval', '0', '--lease-ttl', '3s']), env);
        await tookOver;
        const result = await run;
        expect(result.code, result.stderr).toBe(5);
        expect(result.stderr).toMatch(/CS_ERR_LEASE_LOST|CS_ERR_WAREHOUSE_CHANGED/);
        expect(await getText('lease-c', 'wh/costs.duckdb')).toBe('the other run\'s warehouse');
        expect(JSON.parse(await getText('lease-c', 'wh/costs.duckdb.lease')).runId).toBe('other-run');
      });
    });
  }, 120_000);

  it('a server that ignores conditional writes (s3rver) is refused at the start (exit 2) unless --lease off', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const fake = await startS3rver(join(dir, 's3rver'), ['lease-d']);
        try {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...fake.env };
          const refused = await cli(args(emulator.url, dir, 'lease-d', 'a', ['--rate-limit', '100000']), env);
          expect(refused.code, refused.stderr).toBe(2);
          expect(refused.stderr).toContain('ignores conditional writes');
          expect(refused.stderr).toContain('--lease off');
          expect(emulator.requestLog.total).toBe(0);
          const off = await cli(args(emulator.url, dir, 'lease-d', 'a', ['--rate-limit', '100000', '--lease', 'off']), env);
          expect(off.code, off.stderr).toBe(0);
        } finally {
          await fake.close();
        }
      });
    });
  }, 120_000);

  it('push to an s3:// warehouse holds its lease too: refused (exit 5) while another machine holds it, then publishes', async () => {
    await s3.createBucket('lease-e');
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env() };
        const file = join(dir, 'rows.csv');
        writeFileSync(file, 'ChargePeriodStart,BilledCost,ServiceName,ChargeCategory\n2025-06-03,1.25,Gateway,Usage\n');
        const push = ['push', '--base-url', url, '--db', 's3://lease-e/wh/costs.duckdb', '--state-dir', join(dir, 'state'), '--connection', 'demo-connection', '--rate-limit', '100000', '--log-format', 'json', file];
        const now = new Date().toISOString();
        await putText('lease-e', 'wh/costs.duckdb.lease', JSON.stringify({ host: 'elsewhere', pid: 1, runId: 'nightly-run', startedAt: now, renewedAt: now }));
        const refused = await cli(push, env);
        expect(refused.code, refused.stderr).toBe(5);
        expect(refused.stderr).toContain('run nightly-run on elsewhere');
        await s3.client.send(new DeleteObjectCommand({ Bucket: 'lease-e', Key: 'wh/costs.duckdb.lease' }));
        const pushed = await cli(push, env);
        expect(pushed.code, pushed.stderr).toBe(0);
        expect(await s3.keys('lease-e')).toEqual(['wh/costs.duckdb']);
      });
    });
  }, 60_000);
});
