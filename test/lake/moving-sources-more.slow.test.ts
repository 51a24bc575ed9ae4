import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { stateObjectKey } from '../../src/outputs/lake-seed.js';
import { startCatalogServer } from '../catalog/server.mjs';
import { SPAN, cli, lakeDifferences, withEmulator, withTempDir, backfillFlags } from '../support/helpers.js';
import { catalogLocator, icebergDifferences } from '../support/iceberg.js';
import { useRgw } from '../support/s3.js';
import { clock, emulatorInput, expectSame, key, requestsOf, runners } from '../support/moving.js';

const s3 = useRgw();

/** A runner's sync of `names`: its own config file, warehouse (`<runner>/c.duckdb`) and state directory, then `args`. */
async function syncAs(
  emulator: { url: string; requestLog: { reset(): void; recent(): readonly { workspace?: string }[] } },
  dir: string,
  runner: string,
  names: string[],
  args: string[],
  env: Record<string, string>,
) {
  mkdirSync(join(dir, runner), { recursive: true });
  const config = join(dir, runner, 'costsync.config.json');
  const sources = names.map((n) => ({ name: n, 'base-url': emulator.url, 'api-key-env': `KEY_${n.toUpperCase()}` }));
  writeFileSync(config, JSON.stringify({ sources, db: join(dir, runner, 'c.duckdb'), 'state-dir': join(dir, runner, 'state') }));
  emulator.requestLog.reset();
  const result = await cli(['sync', '--config', config, ...backfillFlags(10), ...args], { TZ: 'UTC', KEY_S: 'k-s', KEY_T: 'k-t', ...env });
  expect(result.code, result.stderr).toBe(0);
  const requests = (w: string) => emulator.requestLog.recent().filter((r) => r.workspace === w).length;
  return { stderr: result.stderr, requests };
}

describe('a source moved to another runner sharing a lake (slow tier)', () => {
  it("Iceberg tables through a REST catalog: a nightly's requests, the state object a property of sync_runs, each runner's warehouse equal to its part of the tables", async () => {
    await withEmulator(
      { ...SPAN, rowsPerDay: 20, anomaliesPerDay: 2, clock, keys: { keys: [key('k-s', 's'), key('k-t', 't')], connections: [] } },
      async (emulator) => {
        await withTempDir(async (dir) => {
          const catalog = await startCatalogServer({
            root: join(dir, 'warehouse'),
            warehouse: 'wh',
            transactions: true,
            auth: { kind: 'none' },
          });
          try {
            const args = ['--catalog', catalog.url, '--catalog-warehouse', 'wh', '--catalog-namespace', 'costs'];
            const sync = (runner: string, names: string[]) => syncAs(emulator, dir, runner, names, args, {});
            const locate = catalogLocator(catalog.url, null, ['costs']);
            const a = join(dir, 'a', 'c.duckdb');
            const b = join(dir, 'b', 'c.duckdb');
            await sync('a', ['s', 't']);
            const nightly = await sync('a', ['s', 't']);
            const runs = await catalogLocator(catalog.url, null, ['costs'], {}, { withMetadata: true })('sync_runs');
            const properties = (runs?.metadata as { properties: Record<string, string> }).properties;
            expect(Object.keys(properties).filter((k) => k.startsWith('costsync.state.'))).toEqual([
              'costsync.state.s',
              'costsync.state.t',
            ]);
            const moved = await sync('b', ['s']);
            expect(moved.requests('s')).toBe(nightly.requests('s'));
            expect(moved.stderr).toContain('going on from the state the lake carries');
            const stored = ['line_items', 'focus', 'rollups_daily', 'anomaly_status_history'];
            expectSame(await icebergDifferences(a, '', { locate, sources: ['s'], tables: stored }));
            expectSame(await icebergDifferences(b, '', { locate, sources: ['s'] }));
            await sync('a', ['t']);
            const again = await sync('b', ['s']);
            expect(again.requests('s')).toBe(nightly.requests('s'));
            expectSame(await icebergDifferences(a, '', { locate, sources: ['t'] }));
            expectSame(await icebergDifferences(b, '', { locate, sources: ['s'] }));
          } finally {
            await catalog.close();
          }
        });
      },
    );
  }, 300_000);

  it("a Parquet lake in a bucket: a nightly's requests, the bucket's rows unchanged, each runner's warehouse equal to its part of the lake", async () => {
    await s3.createBucket('move-a');
    await withEmulator(
      { ...SPAN, rowsPerDay: 20, anomaliesPerDay: 2, clock, keys: { keys: [key('k-s', 's'), key('k-t', 't')], connections: [] } },
      async (emulator) => {
        await withTempDir(async (dir) => {
          const args = ['--format', 'parquet', '--out', 's3://move-a/costs'];
          const sync = (runner: string, names: string[]) => syncAs(emulator, dir, runner, names, args, s3.env());
          let downloads = 0;
          const lake = async () => {
            const to = join(dir, `lake-${++downloads}`);
            await s3.download('move-a', 'costs/', to);
            return to;
          };
          const a = join(dir, 'a', 'c.duckdb');
          const b = join(dir, 'b', 'c.duckdb');

          await sync('a', ['s', 't']);
          const nightly = await sync('a', ['s', 't']);
          expect(await s3.keys('move-a', `costs/${stateObjectKey('s')}`)).toEqual([`costs/${stateObjectKey('s')}`]);

          const moved = await sync('b', ['s']);
          expect(moved.requests('s')).toBe(nightly.requests('s'));
          expect(moved.requests('s')).toBeGreaterThan(0);
          expect(moved.stderr).toContain('going on from the state the lake carries');
          const afterMove = await lake();
          // Anomalies aside: the CLI runs on the wall clock, and any nightly (A's too) moves their last_seen_at.
          expectSame(await lakeDifferences(a, afterMove, ['s'], ['line_items', 'focus', 'rollups_daily', 'anomaly_status_history']));
          expectSame(await lakeDifferences(b, afterMove, ['s']));

          await sync('a', ['t']);
          const again = await sync('b', ['s']);
          expect(again.requests('s')).toBe(nightly.requests('s'));
          const last = await lake();
          expectSame(await lakeDifferences(a, last, ['t']));
          expectSame(await lakeDifferences(b, last, ['s']));
        });
      },
    );
  }, 300_000);
  it("Iceberg directory tables: a nightly's requests, from the data files the source has live in each table", async () => {
    await withEmulator(emulatorInput, async ({ url }) => {
      await withTempDir(async (dir) => {
        const { lake, a, b } = runners(url, dir, 'iceberg');
        await a.sync(['s', 't']);
        const nightly = await a.sync(['s', 't']);
        const moved = await b.sync(['s']);
        expect(requestsOf(moved.summary, 's')).toEqual(requestsOf(nightly.summary, 's'));
        expectSame(await icebergDifferences(a.db, pathToFileURL(lake).href, { sources: ['s'] }));
        expectSame(await icebergDifferences(b.db, pathToFileURL(lake).href, { sources: ['s'] }));
        await a.sync(['t']);
        await b.sync(['s']);
        expectSame(await icebergDifferences(a.db, pathToFileURL(lake).href, { sources: ['t'] }));
        expectSame(await icebergDifferences(b.db, pathToFileURL(lake).href, { sources: ['s'] }));
      });
    });
  });
});
