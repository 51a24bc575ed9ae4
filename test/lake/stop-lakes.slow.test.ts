/**
 * Issue 52 rows 1-3 (slow tier): a stop seen while a lake is written, with every output kind. A
 * warehouse is synced without a lake; the same sync with a lake then fills it first, before any API
 * request, and `COSTSYNC_FAILPOINT=lake-put:2:stop` stops it as a SIGTERM seen at its second lake file
 * would (--max-runtime and a closed pipe abort the same signal). From then no file, upload, commit or
 * API request starts: exactly two lake files, exit 4, the run recorded as stopped, nothing temporary
 * left; the next run finishes the lake exactly.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CATALOG_ENV, catalogFlags, expectCatalogEqualsWarehouse, withKillCatalog } from '../support/catalog-kill.js';
import type { CatalogServer } from '../catalog/server.mjs';
import {
  cli,
  lakeDifferences,
  queryDb,
  SPAN,
  temporaryFiles,
  withEmulator,
  withTempDir,
  backfillFlags,
  syncCommand,
} from '../support/helpers.js';
import { icebergDifferences } from '../support/iceberg.js';
import { useRgw } from '../support/s3.js';

const s3 = useRgw();
const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

type Kind = 'parquet directory' | 'parquet bucket' | 'iceberg directory' | 'iceberg catalog';

/** Files under `dir` whose names end with `.parquet`. */
function parquetFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.parquet'));
}

/** The lake's flags and environment for one kind, and how to count its data files and check it against the warehouse. */
function lakeOf(kind: Kind, dir: string, catalog: CatalogServer, bucket: string) {
  const lake = join(dir, 'lake');
  const local = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
  switch (kind) {
    case 'parquet directory':
      return {
        flags: ['--format', 'parquet', '--out', lake],
        env: local,
        files: async () => parquetFiles(lake).length,
        expectExact: async (db: string) => {
          for (const [table, d] of Object.entries(await lakeDifferences(db, lake)))
            expect({ table, ...d }).toMatchObject({ missing: 0, extra: 0 });
        },
      };
    case 'parquet bucket':
      return {
        flags: ['--format', 'parquet', '--out', `s3://${bucket}/costs`],
        env: { ...local, ...s3.env() },
        files: async () => (await s3.keys(bucket, 'costs/')).filter((k) => k.endsWith('.parquet')).length,
        expectExact: async (db: string) => {
          expect(await s3.incompleteUploads(bucket)).toEqual([]);
          await s3.download(bucket, 'costs/', join(dir, 'downloaded'));
          for (const [table, d] of Object.entries(await lakeDifferences(db, join(dir, 'downloaded'))))
            expect({ table, ...d }).toMatchObject({ missing: 0, extra: 0 });
        },
      };
    case 'iceberg directory':
      return {
        flags: ['--format', 'iceberg', '--out', lake],
        env: local,
        files: async () => parquetFiles(lake).length,
        expectExact: async (db: string) => {
          for (const [table, d] of Object.entries(await icebergDifferences(db, pathToFileURL(lake).href)))
            expect({ table, ...d }).toMatchObject({ missing: 0, extra: 0 });
        },
      };
    case 'iceberg catalog':
      return {
        flags: ['--format', 'iceberg', ...catalogFlags(catalog)],
        env: CATALOG_ENV,
        files: async () => parquetFiles(join(dir, 'warehouse')).length,
        expectExact: (db: string) => expectCatalogEqualsWarehouse(catalog, db, kind),
      };
  }
}

describe('a stop while the lake is written (issue 52 rows 1-3)', () => {
  it.each<Kind>(['parquet directory', 'parquet bucket', 'iceberg directory', 'iceberg catalog'])(
    '%s: once the stop is seen no file, upload, commit or API request starts; exit 4, recorded stopped; the next run finishes the lake exactly',
    async (kind) => {
      let requests = 0;
      await withEmulator({ ...SPAN, rowsPerDay: 10, clock, onRequest: () => (requests += 1) }, async (emulator) => {
        await withTempDir(async (dir) => {
          const bucket = `stop-${kind.replace(/ /g, '-')}`;
          if (kind === 'parquet bucket') await s3.createBucket(bucket);
          await withKillCatalog(dir, async (catalog) => {
            const db = join(dir, 'c.duckdb');
            const base = syncCommand(emulator.url, dir);
            const span = backfillFlags();
            const lake = lakeOf(kind, dir, catalog, bucket);
            const first = await cli([...base, ...span], lake.env);
            expect(first.code, first.stderr).toBe(0);

            requests = 0;
            const commitsBefore = catalog.commits;
            const stopped = await cli([...base, ...span, ...lake.flags], { ...lake.env, COSTSYNC_FAILPOINT: 'lake-put:2:stop' });
            expect(stopped.code, stopped.stderr).toBe(4);
            expect(stopped.stderr).toContain('SIGTERM: stopping now');
            // The lake is filled before any request: a stop seen then leaves the API untouched.
            expect(requests).toBe(0);
            expect(await lake.files()).toBe(2);
            // Each batch here is one file, committed after it: the first file's commit may precede the stop, the second's never.
            expect(catalog.commits - commitsBefore).toBeLessThanOrEqual(kind === 'iceberg catalog' ? 1 : 0);
            expect(temporaryFiles(dir)).toEqual([]);
            const scratch = join(dir, 'state', 'lake-scratch');
            expect(existsSync(scratch) ? readdirSync(scratch, { recursive: true }) : []).toEqual([]);
            const runs = await queryDb<{ outcome: string }>(db, 'SELECT outcome FROM sync_runs ORDER BY started_at');
            expect(runs.map((r) => r.outcome)).toEqual(['success', 'stopped']);

            const next = await cli([...base, ...span, ...lake.flags], lake.env);
            expect(next.code, next.stderr).toBe(0);
            await lake.expectExact(db);
          });
        });
      });
    },
    120_000,
  );
});
