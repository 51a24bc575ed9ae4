/**
 * A REST catalog as AWS's are (SigV4 under a base path, no multi-table transactions) and one that vends
 * the storage credentials of its tables in a bucket (Ceph's radosgw), with real costsync processes: the
 * environment is all a process has, so nothing else lends a credential.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startCatalogServer, type CatalogServer } from '../catalog/server.mjs';
import { icebergDifferences } from '../support/iceberg.js';
import { backfillFlags, cli, run, SPAN, syncCommand, withEmulator, withTempDir } from '../support/helpers.js';
import { useRgw } from '../support/s3.js';

const s3 = useRgw();
const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const NS = ['costsync'];

function args(emulatorUrl: string, dir: string, catalogUrl: string, extra: string[]): string[] {
  return syncCommand(emulatorUrl, dir, ['--catalog', catalogUrl, ...backfillFlags(), ...extra]);
}

/** Each table as the catalog's loadTable holds it (its metadata, wherever its file is). */
const locate = (catalog: CatalogServer) => async (table: string) => {
  const t = catalog.table(NS, table);
  if (t === null) return null;
  return {
    tableUrl: String(t.metadata.location).replace(/\/+$/, ''),
    metadataFileName: t.metadataLocation.slice(t.metadataLocation.lastIndexOf('/') + 1),
    metadata: t.metadata,
  };
};

function expectEqual(diff: Record<string, { rows: number; missing: number; extra: number }>) {
  for (const [table, d] of Object.entries(diff)) {
    expect({ table, ...d }).toEqual({ table, rows: d.rows, missing: 0, extra: 0 });
    expect(d.rows, table).toBeGreaterThan(0);
  }
}

describe('Iceberg REST catalogs: SigV4, no transactions, vended credentials', () => {
  it("signs every request with SigV4 (Glue's form, under /iceberg); without transactions line_items and focus commit one after the other; a wrong secret is refused (exit 3)", async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, anomaliesPerDay: 1, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const keys = { accessKeyId: 'AKIDCOSTSYNCTEST', secretAccessKey: 'c2VjcmV0LWtleS1mb3ItdGVzdHM' };
        const catalog = await startCatalogServer({
          root: join(dir, 'warehouse'),
          basePath: '/iceberg',
          auth: { kind: 'sigv4', service: 'glue', region: 'eu-west-1', ...keys },
        });
        try {
          const env = {
            COSTSYNC_API_KEY: 'demo-key',
            TZ: 'UTC',
            AWS_ACCESS_KEY_ID: keys.accessKeyId,
            AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
            AWS_EC2_METADATA_DISABLED: 'true',
          };
          const sigv4 = ['--catalog-sigv4', 'glue', '--catalog-sigv4-region', 'eu-west-1'];
          const result = await cli(args(emulator.url, dir, `${catalog.url}/iceberg`, sigv4), env);
          expect(result.code).toBe(0);
          expect(result.stderr).not.toContain('"level":"warn"');
          expectEqual(await icebergDifferences(join(dir, 'c.duckdb'), '', { locate: locate(catalog) }));
          // Signed (the server checked each signature; it keeps the Authorization header to itself).
          expect(catalog.requests.every((r) => typeof r.headers['x-amz-date'] === 'string' && r.status !== 401 && r.status !== 403)).toBe(
            true,
          );
          expect(catalog.requests.some((r) => r.path.includes('/transactions/'))).toBe(false);
          expect(
            catalog.requests.filter((r) => r.method === 'POST' && /\/tables\/(line_items|focus)$/.test(r.path)).length,
          ).toBeGreaterThanOrEqual(2);

          const wrong = await cli(args(emulator.url, join(dir, 'b'), `${catalog.url}/iceberg`, sigv4), {
            ...env,
            AWS_SECRET_ACCESS_KEY: 'bm90LXRoZS1yaWdodC1rZXk',
          });
          expect(wrong.code).toBe(3);
          expect(wrong.stderr).toContain('CS_ERR_CATALOG_AUTH');
          expect(wrong.stdout + wrong.stderr).not.toContain('bm90LXRoZS1yaWdodC1rZXk');
        } finally {
          await catalog.close();
        }
      });
    });
  });

  it('writes the tables in a bucket with the credentials the catalog vends (the process has none of its own); none is shown', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, anomaliesPerDay: 1, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        await s3.createBucket('catvend');
        const rgw = s3.env();
        const catalog = await startCatalogServer({
          root: join(dir, 'warehouse'),
          auth: { kind: 'bearer', token: 'catalog-token-31415' },
          transactions: true,
          vendedCredentials: {
            's3.access-key-id': rgw.AWS_ACCESS_KEY_ID!,
            's3.secret-access-key': rgw.AWS_SECRET_ACCESS_KEY!,
            's3.endpoint': rgw.AWS_ENDPOINT_URL_S3!,
            's3.region': 'us-east-1',
            's3.path-style-access': 'true',
          },
        });
        try {
          const env = {
            COSTSYNC_API_KEY: 'demo-key',
            TZ: 'UTC',
            COSTSYNC_CATALOG_TOKEN: 'catalog-token-31415',
            AWS_EC2_METADATA_DISABLED: 'true',
          };
          const result = await run(args(emulator.url, dir, catalog.url, ['--out', 's3://catvend/tables']), env);
          expect(result.stderr.split('\n').filter((l) => l.includes('"level":"error"') || l.includes('"level":"warn"'))).toEqual([]);
          expect(result.code).toBe(0);
          expect(result.stdout + result.stderr).not.toContain(rgw.AWS_SECRET_ACCESS_KEY!);
          expect(result.stdout + result.stderr).not.toContain('catalog-token-31415');
          expect(catalog.table(NS, 'line_items')!.metadata.location).toBe('s3://catvend/tables/line_items');
          expect((await s3.keys('catvend', 'tables/line_items/data/')).length).toBeGreaterThan(0);
          const tableReads = catalog.requests.filter(
            (r) => (r.method === 'GET' && /\/tables\/[a-z0-9_]+$/.test(r.path)) || (r.method === 'POST' && r.path.endsWith('/tables')),
          );
          expect(tableReads.length).toBeGreaterThan(0);
          expect(tableReads.every((r) => r.headers['x-iceberg-access-delegation'] === 'vended-credentials')).toBe(true);
          expectEqual(await icebergDifferences(join(dir, 'c.duckdb'), '', { locate: locate(catalog), s3: s3.client }));
        } finally {
          await catalog.close();
        }
      });
    });
  });
});
