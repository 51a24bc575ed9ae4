import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { ExitCode } from '../../src/errors.js';
import { SCOPES } from '../../src/api/types.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { withEmulator, withTempDir, SPAN, cli, run, syncCommand, spanFlags } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

async function readParquet(glob: string, sql: string) {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    const reader = await conn.runAndReadAll(sql.replace('$glob', `read_parquet('${glob}', hive_partitioning = true)`));
    return reader.getRowObjectsJS();
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

describe('status, check and parquet (CLI)', () => {
  it('status shows watermarks, pending windows, rows and the last runs', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const common = ['--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state')];
        const before = await run(['status', ...common]);
        expect(before.code).toBe(0);
        expect(before.stdout).toMatch(/No sync state/);
        const sync = await run(syncCommand(url, dir, [...spanFlags(), '--quiet']), env);
        expect(sync.code).toBe(0);
        const pretty = await cli(['status', ...common]);
        expect(pretty.stdout).toMatch(/line_items\s+2025-06-01\.\.2025-06-30/);
        expect(pretty.stdout).toMatch(/line_items\s+600\s+2025-06-01\s+2025-06-30/);
        const json = JSON.parse((await run(['status', ...common, '--log-format', 'json'])).stdout);
        expect(json.sources[0].streams.map((s: { stream: string }) => s.stream)).toEqual(['line_items', 'rollups', 'anomalies']);
        expect(json.sources[0].streams[0]).toMatchObject({ watermark: '2025-06-01..2025-06-30', windowsPending: 0 });
        expect(json.runs[0]).toMatchObject({ outcome: 'success' });
      });
    });
  });

  it('status after a run killed between a commit and its publish says the working copy holds unpublished work; the next run clears it', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const db = join(dir, 'c.duckdb');
        const common = ['--db', db, '--state-dir', join(dir, 'state')];
        const args = syncCommand(url, dir, [...spanFlags(), '--quiet']);
        // Killed right after its second commit: that much is in the working copy, nothing in --db.
        const killed = await cli(args, { ...env, COSTSYNC_FAILPOINT: 'commit:2' });
        expect(killed.signal).toBe('SIGKILL');
        const after = await run(['status', ...common]);
        expect(after.code).toBe(0);
        expect(after.stdout).toContain(
          `Not yet published: this state directory's working copy (${workingCopyPath(join(dir, 'state'), db)})`,
        );
        expect(after.stdout).toContain(`${db} lacks it until the next sync with this --state-dir.`);
        expect(after.stdout).toContain(`No database at ${db} yet.`);
        const json = JSON.parse((await run(['status', ...common, '--format', 'json'])).stdout);
        expect(json.unpublished).toBe(workingCopyPath(join(dir, 'state'), db));
        // The dry run asks the run's phases what they would do: the start finishes the publish first.
        const plan = await run([...args, '--dry-run'], env);
        expect(plan.code, plan.stderr).toBe(0);
        // Which streams' fetch the kill left unfinished depends on which committed first: the line names those the
        // streams' own lines resume, then the publish.
        const first = plan.stdout.split('\n')[0]!;
        expect(first.startsWith('First, what an earlier run left undone: ')).toBe(true);
        expect(first.endsWith(`a publish of ${db}.`)).toBe(true);
        const named = /the unfinished fetch of ([a-z_, ]+) \(resumed below\); /.exec(first)?.[1]!.split(', ') ?? [];
        const resuming = [...plan.stdout.matchAll(/^ {2}(\w+): .*\(resuming an unfinished plan\)/gm)].map((m) => m[1]);
        expect(named).toEqual(resuming);
        expect(plan.stdout).toContain(`Then written: the published warehouse ${db}.`);
        const planJson = JSON.parse((await run([...args, '--dry-run', '--log-format', 'json'], env)).stdout);
        expect(planJson.phases).toMatchObject({
          seed: [],
          resume: { publishDue: true, partitions: 0 },
          finish: [`the published warehouse ${db}`],
        });
        const resumed = await run(
          args.filter((a) => a !== '--quiet'),
          env,
        );
        expect(resumed.code).toBe(0);
        // The run says the same as it starts.
        expect(resumed.stderr).toContain(`first, what an earlier run left undone: a publish of ${db}`);
        const cleared = await run(['status', ...common]);
        expect(cleared.stdout).not.toContain('Not yet published');
        expect(cleared.stdout).toMatch(/line_items\s+600\s+2025-06-01\s+2025-06-30/);
        expect(JSON.parse((await run(['status', ...common, '--format', 'json'])).stdout).unpublished).toBeNull();
      });
    });
  });

  it('check reports what the key may do, and exits 3 when reads are refused', async () => {
    const keys = {
      keys: [
        { key: 'reader', scopes: ['line_items:read', 'rollups:read', 'anomalies:read'], plan: 'business' },
        { key: 'all', scopes: [...SCOPES], plan: 'enterprise' },
        { key: 'team', scopes: [...SCOPES], plan: 'team' },
      ],
      connections: [],
    };
    await withEmulator({ ...SPAN, clock, keys: keys as never }, async ({ url, dataset }) => {
      const all = await cli(['check', '--base-url', url, '--log-format', 'json'], {
        COSTSYNC_API_KEY: 'all',
        COSTSYNC_RATE_LIMIT: '100000',
      });
      expect(all.code).toBe(0);
      expect(JSON.parse(all.stdout).results.every((r: { ok: boolean }) => r.ok)).toBe(true);
      const reader = await run(['check', '--base-url', url], { COSTSYNC_API_KEY: 'reader', COSTSYNC_RATE_LIMIT: '100000' });
      expect(reader.code).toBe(0);
      expect(reader.stdout).toMatch(/POST ingest\/focus\s+usage:write\s+false\s+INVALID_SCOPE/);
      const team = await run(['check', '--base-url', url], { COSTSYNC_API_KEY: 'team', COSTSYNC_RATE_LIMIT: '100000' });
      expect(team.code).toBe(ExitCode.AUTH);
      expect(team.stdout).toMatch(/no API access/);
      // The key refused once, said once: the other endpoints are not tried, and say so.
      expect(team.stdout.match(/PLAN_RESTRICTED: /g)).toHaveLength(1);
      expect(team.stdout).toMatch(/GET rollups\/daily\s+rollups:read\s+false\s+not tried: the key was refused \(PLAN_RESTRICTED\)/);
      const unknown = await run(['check', '--base-url', url], { COSTSYNC_API_KEY: 'no-such-key', COSTSYNC_RATE_LIMIT: '100000' });
      expect(unknown.code).toBe(ExitCode.AUTH);
      expect(unknown.stdout.match(/UNAUTHORIZED: /g)).toHaveLength(1);
      expect(unknown.stdout.match(/not tried: the key was refused \(UNAUTHORIZED\)/g)).toHaveLength(3);
      expect(dataset.ingestedDays()).toEqual([]);
    });
  });

  it('writes hive-partitioned Parquet, and a later run rewrites only the partitions it changed', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 40, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const out = join(dir, 'pq');
        const args = syncCommand(emulator.url, dir, [...spanFlags(), '--format', 'parquet', '--out', out, '--quiet']);
        expect((await run(args, env)).code).toBe(0);
        expect(readdirSync(join(out, 'line_items'))).toEqual(['source=default']);
        expect(readdirSync(join(out, 'line_items', 'source=default'))).toHaveLength(30);
        const [li] = await readParquet(
          `${out}/line_items/*/*/*.parquet`,
          'SELECT count(*)::INT n, count(DISTINCT date)::INT d, min(date)::VARCHAR lo FROM $glob',
        );
        expect(li).toEqual({ n: 1200, d: 30, lo: '2025-06-01' });
        const [ro] = await readParquet(`${out}/rollups_daily/*/*/*.parquet`, 'SELECT count(DISTINCT group_by)::INT g FROM $glob');
        expect(ro).toEqual({ g: 3 });
        expect(existsSync(join(out, 'anomalies'))).toBe(true);
        expect(existsSync(join(out, 'sync_runs', 'source=default', 'data.parquet'))).toBe(true);
        expect(existsSync(join(out, '_costsync_manifest.default.json'))).toBe(true);

        // A rewritten partition is a new file renamed into place, so it has a new inode.
        const old = statSync(join(out, 'line_items', 'source=default', 'date=2025-06-10', 'data.parquet')).ino;
        const recent = statSync(join(out, 'line_items', 'source=default', 'date=2025-06-29', 'data.parquet')).ino;
        // What an earlier version wrote for the whole lake goes on the next run (per-source files replace it).
        writeFileSync(join(out, '_costsync_manifest.json'), '{}');
        writeFileSync(join(out, 'sync_runs', 'data.parquet'), 'old');
        emulator.restate();
        expect(
          (
            await run(
              args.filter((a) => a !== SPAN.startDate && a !== '--start-date'),
              env,
            )
          ).code,
        ).toBe(0);
        expect(existsSync(join(out, '_costsync_manifest.json'))).toBe(false);
        expect(existsSync(join(out, 'sync_runs', 'data.parquet'))).toBe(false);
        expect(statSync(join(out, 'line_items', 'source=default', 'date=2025-06-10', 'data.parquet')).ino).toBe(old);
        expect(statSync(join(out, 'line_items', 'source=default', 'date=2025-06-29', 'data.parquet')).ino).not.toBe(recent);
        const [after] = await readParquet(`${out}/line_items/*/*/*.parquet`, 'SELECT count(*)::INT n FROM $glob');
        expect(after!.n).toBeLessThan(1200);
      });
    });
  });
});
