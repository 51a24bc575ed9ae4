import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/emulator/rng.js';
import {
  CLI,
  SPAN,
  cli,
  killRunner,
  tableDigest,
  withEmulator,
  withTempDir,
  type KillPoint,
  syncCommand,
  backfillFlags,
  watchTree,
} from '../support/helpers.js';
import { icebergDifferences, icebergFileCheck } from '../support/iceberg.js';
import {
  alternatingPoint,
  killCount,
  killRuns,
  sourceSyncCommand,
  sourcesConfig,
  withKillRig,
  workspaceKeys,
} from '../support/kill-loop.js';
import { faultProxy, useRgw } from '../support/s3.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const s3 = useRgw();
const KILLS = killCount(8);

function expectExact(diff: Record<string, { rows: number; missing: number; extra: number }>, label: string) {
  for (const [table, d] of Object.entries(diff))
    expect({ label, table, ...d }).toEqual({ label, table, rows: d.rows, missing: 0, extra: 0 });
}

describe('--format iceberg under SIGKILL (slow tier)', () => {
  it(
    `a directory lake, SIGKILLed at ${KILLS} points (random ones, and right after a data file or a metadata file appears): the tables equal the warehouse, no referenced file missing, no unreferenced file left`,
    async () => {
      await withKillRig({ ...SPAN, rowsPerDay: 200, clock, anomaliesPerDay: 4 }, async ({ url, dir, runner }) => {
        const args = (sub: string) => [
          CLI,
          ...syncCommand(url, join(dir, sub), ['--format', 'iceberg', '--out', join(dir, sub, 'lake'), ...backfillFlags(3), '--quiet']),
        ];
        const run = (sub: string, point: KillPoint = {}) => runner.run(args(sub), point);
        expect(await run('clean')).toMatchObject({ code: 0 });
        const expected = await tableDigest(join(dir, 'clean', 'c.duckdb'));
        const rng = createRng(20261124);
        let killed: number;
        // A third of the kills land right after a file appears in the lake: a data file (written, not
        // yet committed) or a metadata file (committed, not yet recorded in the outbox).
        mkdirSync(join(dir, 'crashy', 'lake'), { recursive: true });
        let watchFor: RegExp | null = null;
        const unwatch = watchTree(join(dir, 'crashy', 'lake'), (name) => {
          if (watchFor !== null && watchFor.test(name)) runner.killNow();
        });
        try {
          killed = await killRuns(KILLS, (i) => {
            watchFor = i % 3 === 1 ? /data\/.*\.parquet$/ : i % 3 === 2 ? /\/v\d+\.metadata\.json$/ : null;
            return run(
              'crashy',
              i % 3 === 0
                ? alternatingPoint(
                    rng,
                    i,
                    [1, 20],
                    [
                      ['open', 1],
                      ['commit', 10],
                      ['lake-put', 30],
                      ['iceberg-commit', 12],
                      ['publish', 2],
                    ],
                  )
                : {},
            );
          });
        } finally {
          unwatch();
        }
        expect(killed).toBeGreaterThan(KILLS / 2);
        const last = await run('crashy');
        expect(last.code, last.stderr).toBe(0);
        const db = join(dir, 'crashy', 'c.duckdb');
        expect(await tableDigest(db)).toEqual(expected);
        const lake = join(dir, 'crashy', 'lake');
        expectExact(await icebergDifferences(db, pathToFileURL(lake).href), 'directory');
        expect(await icebergFileCheck(lake, pathToFileURL(lake).href)).toEqual({ missing: [], unreferenced: [] });
      });
    },
    60_000 + KILLS * 10_000,
  );

  it('a bucket lake (radosgw through a fault proxy), SIGKILLed at random bucket requests and right after a metadata file is created: exact, nothing missing, nothing left over', async () => {
    await s3.createBucket('ice-a');
    const rng = createRng(20261125);
    let onRequest = (_entry: { route: string }) => undefined as void;
    let killAfterMetadata = false;
    let metadataPut = false;
    let killNow = () => undefined as void;
    const proxy = await faultProxy(s3.endpoint, (req) => {
      // The request after a metadata file's PUT: the commit has landed, nothing after it has run.
      if (killAfterMetadata && metadataPut) killNow();
      metadataPut = req.method === 'PUT' && /\/v\d+\.metadata\.json$/.test(req.path);
      onRequest({ route: `s3 ${req.method}` });
      return null;
    });
    try {
      await withEmulator({ ...SPAN, rowsPerDay: 100, clock, anomaliesPerDay: 3 }, async ({ url }) => {
        await withTempDir(async (dir) => {
          const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', ...s3.env(proxy.endpoint) };
          const args = syncCommand(url, dir, ['--format', 'iceberg', '--out', 's3://ice-a/costs', ...backfillFlags(5)]);
          const runner = killRunner(env);
          onRequest = runner.onRequest;
          killNow = () => runner.killNow();
          let killed = 0;
          for (let i = 0; i < 6; i++) {
            killAfterMetadata = i % 3 === 2;
            metadataPut = false;
            const child = await runner.run([CLI, ...args], killAfterMetadata ? {} : { atRequest: 5 + Math.floor(rng() * 80) });
            if (child.signal === 'SIGKILL') killed += 1;
          }
          killAfterMetadata = false;
          expect(killed).toBeGreaterThan(2);
          const last = await cli(args, env);
          expect(last.code, last.stderr).toBe(0);
          await s3.download('ice-a', 'costs/', join(dir, 'lake'));
          expectExact(await icebergDifferences(join(dir, 'c.duckdb'), 's3://ice-a/costs', { s3: s3.client }), 'bucket');
          expect(await icebergFileCheck(join(dir, 'lake'), 's3://ice-a/costs')).toEqual({ missing: [], unreferenced: [] });
        });
      });
    } finally {
      await proxy.close();
    }
  }, 240_000);

  it('four shards commit to the same bucket tables at once, one killed and restarted: every run exits 0, each source exact', async () => {
    await s3.createBucket('ice-b');
    const names = ['eu', 'us', 'apac', 'latam'];
    const proxy = await faultProxy(s3.endpoint);
    try {
      await withEmulator({ ...SPAN, rowsPerDay: 60, clock, anomaliesPerDay: 2, keys: workspaceKeys(names) }, async ({ url }) => {
        await withTempDir(async (dir) => {
          const { config, env } = sourcesConfig(dir, url, names, s3.env(proxy.endpoint));
          const shard = (w: string) =>
            sourceSyncCommand(config, w, join(dir, w), [
              '--format',
              'iceberg',
              '--out',
              's3://ice-b/costs',
              ...backfillFlags(5, { rateLimit: false }),
            ]);
          const runner = killRunner(env, () => false);
          const killed = runner.run([CLI, ...shard('latam')], { failpoint: 'iceberg-commit:2' });
          const results = await Promise.all(names.slice(0, 3).map((w) => cli(shard(w), env)));
          for (const r of results) expect(r.code, r.stderr).toBe(0);
          await killed;
          const again = await cli(shard('latam'), env);
          expect(again.code, again.stderr).toBe(0);
          for (const w of names) {
            expectExact(await icebergDifferences(join(dir, w, 'c.duckdb'), 's3://ice-b/costs', { sources: [w], s3: s3.client }), w);
          }
          await s3.download('ice-b', 'costs/', join(dir, 'lake'));
          expect(await icebergFileCheck(join(dir, 'lake'), 's3://ice-b/costs')).toEqual({ missing: [], unreferenced: [] });
        });
      });
    } finally {
      await proxy.close();
    }
  }, 240_000);
});
