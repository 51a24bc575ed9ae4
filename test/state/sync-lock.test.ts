import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { CostsyncError, ExitCode } from '../../src/errors.js';
import { acquireLock } from '../../src/state/lock.js';
import { lockPaths } from '../../src/run-context.js';
import { runSync } from '../../src/sync/runner.js';
import {
  FAST_CLIENT,
  IN_OTHER_PID_NAMESPACE,
  memoryLogger,
  run,
  syncCommand,
  testSyncConfig,
  withEmulator,
  withTempDir,
  SPAN,
} from '../support/helpers.js';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { mkdirSync } from 'node:fs';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };

describe('run lock', () => {
  it('refuses a second run while one holds the lock, naming the holder (exit code 5)', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 10, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const config = testSyncConfig(url, dir);
        mkdirSync(config.stateDir, { recursive: true });
        for (const path of lockPaths(config)) {
          const held = acquireLock(path, 'test holder');
          try {
            const error = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT }).catch((e: unknown) => e);
            expect(error).toBeInstanceOf(CostsyncError);
            expect((error as CostsyncError).exitCode).toBe(ExitCode.LOCKED);
            expect((error as CostsyncError).message).toContain(`pid ${process.pid}`);
            expect((error as CostsyncError).message).toContain('test holder');
          } finally {
            held.release();
          }
        }
        expect((await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
      });
    });
  });

  it('status says a run is under way while one holds a lock (state directory or database), and nothing once the holder is gone', async () => {
    await withTempDir(async (dir) => {
      const stateDir = join(dir, 'state');
      mkdirSync(stateDir);
      const status = async () => (await run(['status', '--state-dir', stateDir, '--db', join(dir, 'c.duckdb')])).stdout;
      expect(await status()).not.toMatch(/Running now/);
      const held = acquireLock(join(stateDir, 'costsync.lock'), 'costsync sync (run r1)');
      try {
        expect(await status()).toMatch(new RegExp(`^Running now: costsync sync \\(run r1\\), pid ${process.pid} on .*, since \\S+Z\\.\\n`));
        const json = JSON.parse((await run(['status', '--state-dir', stateDir, '--db', join(dir, 'c.duckdb'), '--format', 'json'])).stdout);
        expect(json.running).toEqual([expect.objectContaining({ command: 'costsync sync (run r1)', pid: process.pid, alive: 'yes' })]);
      } finally {
        held.release();
      }
      // A lock whose process is gone is the next run's to take over: no run is under way.
      writeFileSync(
        join(stateDir, 'costsync.lock'),
        JSON.stringify({ pid: 2 ** 22 + 17, hostname: hostname(), startedAt: '2025-07-01T06:00:00Z', command: 'costsync sync' }),
      );
      expect(await status()).not.toMatch(/Running now/);
    });
  });

  it('a run refused by the lock (exit 5) still writes --metrics-file: outcome locked, the last success carried over, atomically', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const metrics = join(dir, 'costsync.prom');
        const args = syncCommand(url, dir, ['--start-date', SPAN.startDate, '--until', SPAN.endDate, '--metrics-file', metrics]);
        const env = { COSTSYNC_API_KEY: 'demo-key' };
        expect((await run(args, env)).code).toBe(0);
        const sample = (text: string, name: string, labels: string) => new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text)?.[1];
        const before = readFileSync(metrics, 'utf8');
        const lastSuccess = sample(before, 'costsync_last_success_timestamp_seconds', 'source="default"');
        expect(Number(lastSuccess)).toBeGreaterThan(0);

        const held = acquireLock(join(dir, 'state', 'costsync.lock'), 'test holder');
        try {
          const refused = await run(args, env);
          expect(refused.code).toBe(ExitCode.LOCKED);
          const after = readFileSync(metrics, 'utf8');
          expect(sample(after, 'costsync_last_run_outcome', 'source="default",outcome="locked"')).toBe('1');
          expect(sample(after, 'costsync_last_run_outcome', 'source="default",outcome="success"')).toBe('0');
          expect(sample(after, 'costsync_last_success_timestamp_seconds', 'source="default"')).toBe(lastSuccess);
          // What node_exporter's collector accepts (each metric once, HELP and TYPE first).
          const promtool = spawnSync('promtool', ['check', 'metrics'], { input: after, encoding: 'utf8' });
          expect({ status: promtool.status, out: `${promtool.stdout}${promtool.stderr}` }).toEqual({ status: 0, out: '' });
          // Written by rename: no temporary file is left beside it.
          expect(readdirSync(dir).filter((f) => f.startsWith('costsync.prom'))).toEqual(['costsync.prom']);

          // With no file to carry it from, the last success is read from the published warehouse.
          rmSync(metrics);
          expect((await run(args, env)).code).toBe(ExitCode.LOCKED);
          const fresh = readFileSync(metrics, 'utf8');
          expect(sample(fresh, 'costsync_last_run_outcome', 'source="default",outcome="locked"')).toBe('1');
          expect(sample(fresh, 'costsync_last_success_timestamp_seconds', 'source="default"')).toBe(lastSuccess);
        } finally {
          held.release();
        }
      });
    });
  });

  it('recovers a lock left by a dead process, or left empty or half-written', async () => {
    await withTempDir(async (dir) => {
      const path = `${dir}/x.lock`;
      for (const leftover of [
        JSON.stringify({ pid: 2 ** 22 + 12345, hostname: (await import('node:os')).hostname(), startedAt: 'then', command: 'dead' }),
        '',
        '{"pid": 12',
      ]) {
        writeFileSync(path, leftover);
        const lock = acquireLock(path, 'me');
        expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ pid: process.pid, command: 'me' });
        lock.release();
        expect(existsSync(path)).toBe(false);
      }
    });
  });

  it('lets exactly one of two contenders take a free lock', async () => {
    await withTempDir(async (dir) => {
      const path = `${dir}/y.lock`;
      const first = acquireLock(path, 'one');
      expect(() => acquireLock(path, 'two')).toThrow(/holds the lock/);
      first.release();
      acquireLock(path, 'three').release();
    });
  });

  it('writes its holder with boot id, PID namespace and start time; a lock naming a live pid started at another time (a recycled pid) is stale', async () => {
    await withTempDir(async (dir) => {
      const path = `${dir}/z.lock`;
      const lock = acquireLock(path, 'me');
      const mine = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
      expect(mine).toMatchObject({
        pid: process.pid,
        bootId: expect.any(String),
        pidNs: expect.stringMatching(/^pid:\[\d+\]$/),
        startTicks: expect.any(Number),
      });
      lock.release();
      // This very process's pid, alive, but the lock says it started at another time: it is not the holder.
      writeFileSync(path, JSON.stringify({ ...mine, startTicks: (mine.startTicks as number) - 100, command: 'before a reboot' }));
      acquireLock(path, 'me again').release();
      // The same, with the right start time: a live holder.
      writeFileSync(path, JSON.stringify({ ...mine, command: 'live' }));
      expect(() => acquireLock(path, 'me again')).toThrow(/holds the lock .*live/);
      rmSync(path);
    });
  });

  it('lock files of the previous version (host and pid only) keep working: a dead pid is taken over, a live one refused', async () => {
    await withTempDir(async (dir) => {
      const path = `${dir}/old.lock`;
      const host = (await import('node:os')).hostname();
      writeFileSync(path, JSON.stringify({ pid: 2 ** 22 + 777, hostname: host, startedAt: 'then', command: 'old, dead' }));
      acquireLock(path, 'me').release();
      writeFileSync(path, JSON.stringify({ pid: process.pid, hostname: host, startedAt: 'now', command: 'old, live' }));
      expect(() => acquireLock(path, 'me')).toThrow(/holds the lock .*old, live/);
    });
  });

  it('a live holder in another PID namespace (a container sharing the volume and host name) keeps its lock; the message says why and how to clear it', async () => {
    await withTempDir(async (dir) => {
      const path = `${dir}/ns.lock`;
      const dist = new URL('../../dist/', import.meta.url).href;
      const script = `const { acquireLock } = await import('${dist}state/lock.js');
        const lock = acquireLock(process.env.TARGET, 'holder in a container');
        console.log(process.pid);
        process.stdin.resume(); process.stdin.on('end', () => { lock.release(); process.exit(0); });`;
      const [unshare, ...namespace] = IN_OTHER_PID_NAMESPACE;
      const child = spawn(unshare!, [...namespace, process.execPath, '--input-type=module', '-e', script], {
        env: { PATH: process.env.PATH ?? '', TARGET: path },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      const [pid] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      try {
        // No such pid in this namespace: the previous version took the lock over.
        expect(Number(pid)).toBeGreaterThan(32768);
        expect(() => acquireLock(path, 'me')).toThrow(/holds the lock .*holder in a container.*another PID namespace/);
        expect(() => acquireLock(path, 'me')).toThrow(expect.objectContaining({ hint: expect.stringContaining(`rm ${path}`) }));
      } finally {
        child.stdin.end();
        await once(child, 'exit');
      }
      expect(existsSync(path)).toBe(false);
    });
  });
  it('a run SIGKILLed in a container whose first process reaps nobody (a zombie) holds no lock: the next run takes it over', async () => {
    await withTempDir(async (dir) => {
      const lock = `${dir}/costsync.lock`;
      const lockModule = new URL('../../dist/state/lock.js', import.meta.url).href;
      const script = `${dir}/holder.mjs`;
      writeFileSync(
        script,
        `const m = await import(${JSON.stringify(lockModule)}); m.acquireLock(${JSON.stringify(lock)}, 'zombie to be'); console.log('locked'); setInterval(() => {}, 1000);`,
      );
      // The shell becomes `sleep`, which never waits for its child: killed, the holder stays a zombie.
      const parent = spawn('sh', ['-c', `"$0" "$1" & echo $!; exec sleep 600`, process.execPath, script], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      try {
        const lines = createInterface({ input: parent.stdout });
        const seen: string[] = [];
        for await (const line of lines) {
          seen.push(line);
          if (line === 'locked') break;
        }
        expect(seen.at(-1)).toBe('locked');
        const pid = Number(seen[0]);
        process.kill(pid, 'SIGKILL');
        // Wait for the kernel to mark it exited (an event, not a time): its stat turns to Z.
        while (!/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) await new Promise((r) => setImmediate(r));
        const taken = acquireLock(lock, 'next run');
        expect(JSON.parse(readFileSync(lock, 'utf8')).pid).toBe(process.pid);
        taken.release();
      } finally {
        parent.kill('SIGKILL');
      }
    });
  });
});
