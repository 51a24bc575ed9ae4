// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`: The REST catalog: iceberg-catalog-storage (SigV4, vended credentials), unit/catalog-client and catalog-server.
/**
 * `--format iceberg --catalog URL`: the tables committed through an Iceberg REST catalog (the tests'
 * own, `test/catalog/server.mjs`, which enforces the OpenAPI document's requirements), then loaded
 * through the catalog and read by icebird, an independent reader, against the warehouse.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SUMMARY } from '../../src/iceberg/metadata.js';
import { commitSource, partitionSpec } from '../../src/iceberg/table.js';
import { evolveSchema } from '../../src/iceberg/schema.js';
import { openRestTables } from '../../src/outputs/iceberg-catalog.js';
import { startCatalogServer, type CatalogServer, type CatalogServerOptions } from '../catalog/server.mjs';
import { bareDataFile, catalogLocator, icebergDifferences } from '../support/iceberg.js';
import { run, SPAN, syncCommand, withEmulator, withTempDir, backfillFlags, spanFlags } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const SECRET = 'sEcReT-4f9a1c';
const ENV = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', COSTSYNC_CATALOG_CREDENTIAL: `costsync:${SECRET}` };
const NS = ['finance', 'costs'];

function syncArgs(emulatorUrl: string, catalog: CatalogServer, dir: string, extra: string[] = []): string[] {
  return syncCommand(emulatorUrl, dir, [
    '--catalog',
    catalog.url,
    '--catalog-warehouse',
    'wh',
    '--catalog-namespace',
    NS.join('.'),
    ...backfillFlags(7),
    ...extra,
  ]);
}

async function withCatalog<T>(dir: string, options: Partial<CatalogServerOptions>, fn: (catalog: CatalogServer) => Promise<T>): Promise<T> {
  const catalog = await startCatalogServer({
    root: join(dir, 'warehouse'),
    warehouse: 'wh',
    prefix: 'ws/a1',
    transactions: true,
    idempotencyKeyLifetime: 'PT30M',
    auth: { kind: 'oauth', clients: [{ id: 'costsync', secret: SECRET }], tokenTtlSeconds: 3600 },
    ...options,
  });
  try {
    return await fn(catalog);
  } finally {
    await catalog.close();
  }
}

/** Each table, loaded through the catalog as an engine loads it, against the warehouse. */
async function differences(dir: string, catalog: CatalogServer, prefix = 'ws/a1') {
  const token = await (
    await fetch(`${catalog.url}/v1/oauth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&client_id=costsync&client_secret=${SECRET}&scope=catalog`,
    })
  ).json();
  return icebergDifferences(join(dir, 'c.duckdb'), '', {
    locate: catalogLocator(catalog.url, prefix, NS, { authorization: `Bearer ${(token as { access_token: string }).access_token}` }),
  });
}

function expectEqualToWarehouse(diff: Record<string, { rows: number; missing: number; extra: number }>) {
  expect(Object.keys(diff).length).toBeGreaterThan(3);
  for (const [table, d] of Object.entries(diff)) {
    expect({ table, ...d }).toEqual({ table, rows: d.rows, missing: 0, extra: 0 });
    expect(d.rows, table).toBeGreaterThan(0);
  }
}

/** The field ids a Parquet file carries, by column name (DuckDB's parquet_schema). */
async function parquetFieldIds(file: string): Promise<Record<string, number>> {
  const instance = await DuckDBInstance.create(':memory:');
  const db = await instance.connect();
  try {
    const rows = (
      await db.runAndReadAll(`SELECT name, field_id FROM parquet_schema('${file}') WHERE field_id IS NOT NULL`)
    ).getRowObjectsJS();
    return Object.fromEntries(rows.map((r) => [String(r.name), Number(r.field_id)]));
  } finally {
    db.closeSync();
    instance.closeSync();
  }
}

const commitIdsOf = (catalog: CatalogServer, table: string) =>
  (catalog.table(NS, table)!.metadata.snapshots as { summary: Record<string, string> }[]).map((s) => s.summary[SUMMARY.commitId]);

describe('--format iceberg --catalog (an Iceberg REST catalog)', () => {
  it('creates every table with the ids the catalog assigns and commits through the protocol (a prefix, OAuth2, idempotency keys, line_items and focus in one transaction); each table loaded through the catalog reads equal to the warehouse; a restatement is one overwrite', async () => {
    await withEmulator(
      { ...SPAN, rowsPerDay: 40, anomaliesPerDay: 2, clock, restatement: { days: 5, changeRate: 0.5, deleteRate: 0.1 } },
      async (emulator) => {
        await withTempDir(async (dir) => {
          await withCatalog(dir, {}, async (catalog) => {
            const first = await run(syncArgs(emulator.url, catalog, dir), ENV);
            expect(first).toMatchObject({ code: 0 });
            // The spec deprecates the catalog's own token endpoint: said once.
            expect(first.stderr.match(/deprecat/g)?.length).toBe(1);
            expect(first.stdout + first.stderr).not.toContain(SECRET);
            expectEqualToWarehouse(await differences(dir, catalog));

            // The catalog assigned its own field ids (from 101); the data files carry them.
            const lineItems = catalog.table(NS, 'line_items')!;
            const schema = (lineItems.metadata.schemas as { 'schema-id': number; fields: { id: number; name: string }[] }[]).find(
              (s) => s['schema-id'] === lineItems.metadata['current-schema-id'],
            )!;
            expect(Math.min(...schema.fields.map((f) => f.id))).toBe(101);
            const manifestTable = `${fileURLToPath(String(lineItems.metadata.location))}/data`;
            const files = readdirSync(manifestTable, { recursive: true })
              .map(String)
              .filter((f) => f.endsWith('.parquet'));
            expect(files.length).toBeGreaterThan(0);
            const ids = await parquetFieldIds(join(manifestTable, files[0]!));
            expect(ids).toEqual(Object.fromEntries(schema.fields.map((f) => [f.name, f.id])));

            // Every commit went with an idempotency key; line_items and focus went together.
            const commits = catalog.requests.filter(
              (r) => r.method === 'POST' && /\/tables\/[a-z0-9_]+$|\/transactions\/commit$/.test(r.path),
            );
            expect(commits.length).toBeGreaterThan(0);
            expect(commits.every((r) => typeof r.headers['idempotency-key'] === 'string')).toBe(true);
            expect(commits.every((r) => r.path.startsWith('/v1/ws/a1/'))).toBe(true);
            expect(commits.some((r) => r.path.endsWith('/transactions/commit'))).toBe(true);
            expect(commits.some((r) => /\/tables\/(line_items|focus)$/.test(r.path))).toBe(false);

            emulator.restate();
            expect(await run(syncArgs(emulator.url, catalog, dir, ['--lookback-days', '7']), ENV)).toMatchObject({ code: 0 });
            expectEqualToWarehouse(await differences(dir, catalog));
            const snapshots = catalog.table(NS, 'line_items')!.metadata.snapshots as { summary: Record<string, string> }[];
            expect(snapshots.at(-1)!.summary).toMatchObject({ operation: 'overwrite', [SUMMARY.source]: 'default' });
            // No commit twice.
            expect(new Set(commitIdsOf(catalog, 'line_items')).size).toBe(snapshots.length);

            // Maintenance off: nothing expires, however short the retention.
            emulator.restate();
            const off = await run(
              syncArgs(emulator.url, catalog, dir, ['--lookback-days', '7', '--iceberg-retention', '0s', '--iceberg-maintenance', 'off']),
              ENV,
            );
            expect(off).toMatchObject({ code: 0 });
            const kept = (catalog.table(NS, 'line_items')!.metadata.snapshots as unknown[]).length;
            expect(kept).toBe(snapshots.length + 1);
            // On: the snapshots past the retention expire, and the files only they reached go.
            const dataFiles = () =>
              readdirSync(manifestTable, { recursive: true })
                .map(String)
                .filter((f) => f.endsWith('.parquet')).length;
            const filesBefore = dataFiles();
            const on = await run(syncArgs(emulator.url, catalog, dir, ['--iceberg-retention', '0s']), ENV);
            expect(on).toMatchObject({ code: 0 });
            expect((catalog.table(NS, 'line_items')!.metadata.snapshots as unknown[]).length).toBeLessThan(kept);
            expect(dataFiles()).toBeLessThan(filesBefore);
            expectEqualToWarehouse(await differences(dir, catalog));

            // The run's summary and status name the catalog, the namespace and each table's current snapshot.
            const current = String(catalog.table(NS, 'line_items')!.metadata['current-snapshot-id']);
            const summary = JSON.parse(on.stdout.trim().split('\n').at(-1)!) as {
              lakeSnapshots: { where: string; snapshots: Record<string, number> };
            };
            expect(summary.lakeSnapshots.where).toContain('namespace finance.costs');
            expect(String(summary.lakeSnapshots.snapshots.line_items)).toBe(current);
            const status = await run(['status', '--db', join(dir, 'c.duckdb'), '--state-dir', join(dir, 'state')], ENV);
            expect(status.stdout).toMatch(
              new RegExp(`line_items\\s+iceberg\\s+${catalog.url.replace(/[.]/g, '\\.')}.*namespace finance\\.costs\\s+${current}`),
            );
          });
        });
      },
    );
  });

  it('settles what a catalog leaves unknown: a transaction applied then answered 500, a commit refused with 409, a 503, a token expired mid-run: nothing is committed twice or lost', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 30, anomaliesPerDay: 1, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        await withCatalog(dir, {}, async (catalog) => {
          catalog.faults.push(
            { route: 'transaction', status: 500, when: 'after' },
            { route: 'commit', table: 'rollups_daily', status: 409, when: 'before' },
            { route: 'commit', table: 'anomalies', status: 503, when: 'before' },
          );
          catalog.events.once('commit', () => catalog.expireTokens());
          const result = await run(syncArgs(emulator.url, catalog, dir), ENV);
          expect(result).toMatchObject({ code: 0 });
          expect(catalog.faults).toEqual([]);
          // The expired token was refreshed once (a second token request), not given up on.
          expect(catalog.requests.filter((r) => r.path === '/v1/oauth/tokens' && r.status === 200).length).toBe(2);
          expect(catalog.requests.some((r) => r.status === 419)).toBe(true);
          expectEqualToWarehouse(await differences(dir, catalog));
          for (const table of ['line_items', 'focus', 'rollups_daily', 'anomalies']) {
            const ids = commitIdsOf(catalog, table);
            expect(new Set(ids).size, table).toBe(ids.length);
          }
        });
      });
    });
  });

  it('adopts a directory lake by registering its tables (the upgrade path), then commits on top of them; --out elsewhere than a table is refused', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 30, anomaliesPerDay: 1, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const lake = join(dir, 'lake');
        // First as directory tables, as an earlier costsync wrote them.
        expect(await run(syncCommand(emulator.url, dir, ['--format', 'iceberg', '--out', lake, ...spanFlags()]), ENV)).toMatchObject({
          code: 0,
        });
        const { readFileSync } = await import('node:fs');
        const directorySnapshots = (
          JSON.parse(readFileSync(join(lake, 'line_items', 'metadata', 'v1.metadata.json'), 'utf8')) as {
            snapshots: { 'snapshot-id': number }[];
          }
        ).snapshots.map((s) => s['snapshot-id']);
        await withCatalog(dir, {}, async (catalog) => {
          emulator.restate();
          expect(await run(syncArgs(emulator.url, catalog, dir, ['--out', lake, '--lookback-days', '7']), ENV)).toMatchObject({ code: 0 });
          expect(catalog.requests.filter((r) => r.path.endsWith('/register')).length).toBeGreaterThan(3);
          const table = catalog.table(NS, 'line_items')!;
          expect(table.metadata.location).toBe(pathToFileURL(join(lake, 'line_items')).href);
          const ids = (table.metadata.snapshots as { 'snapshot-id': number }[]).map((s) => s['snapshot-id']);
          expect(ids.slice(0, directorySnapshots.length)).toEqual(directorySnapshots);
          expectEqualToWarehouse(await differences(dir, catalog));

          // Without --catalog, the adopted tables are refused: a directory version would fork them.
          const forked = await run(
            syncCommand(emulator.url, dir, ['--format', 'iceberg', '--out', lake, '--start-date', SPAN.startDate, '--until', SPAN.endDate]),
            ENV,
          );
          expect(forked.code).toBe(2);
          expect(forked.stderr).toContain('is committed through a REST catalog');

          // Another --out than where the catalog's tables are: refused before anything is written.
          const elsewhere = await run(syncArgs(emulator.url, catalog, dir, ['--out', join(dir, 'other')]), ENV);
          expect(elsewhere.code).toBe(2);
          expect(elsewhere.stderr).toContain('not at');
        });
      });
    });
  });

  it('a refused credential ends the run at once (exit 3, before any API request, no secret shown); check probes the catalog', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        await withCatalog(dir, {}, async (catalog) => {
          const wrong = await run(syncArgs(emulator.url, catalog, dir), { ...ENV, COSTSYNC_CATALOG_CREDENTIAL: 'costsync:wrong-one-77' });
          expect(wrong.code).toBe(3);
          expect(wrong.stderr).toContain('CS_ERR_CATALOG_AUTH');
          expect(wrong.stdout + wrong.stderr).not.toContain('wrong-one-77');
          // A warehouse the catalog does not know: the hint names --catalog-warehouse, not --catalog (issue 52 row 11).
          const nope = await run(syncArgs(emulator.url, catalog, dir, ['--catalog-warehouse', 'nope']), ENV);
          expect(nope.code).toBe(1);
          expect(nope.stderr).toContain(
            'Check --catalog-warehouse: the catalog at --catalog answered, but refused the warehouse \\"nope\\"',
          );
          expect(nope.stderr).not.toContain('Check --catalog:');
          // A secret this short is warned about before anything else (it cannot be told from a word in messages).
          const short = await run(syncArgs(emulator.url, catalog, dir), { ...ENV, COSTSYNC_CATALOG_CREDENTIAL: 'costsync:wrong' });
          expect(short.code).toBe(3);
          expect(short.stderr).toContain('The client secret in COSTSYNC_CATALOG_CREDENTIAL is only 5 characters long');
          expect(emulator.requestLog.total).toBe(0);

          const check = await run(
            [
              'check',
              '--base-url',
              emulator.url,
              '--catalog',
              catalog.url,
              '--catalog-warehouse',
              'wh',
              '--catalog-namespace',
              'finance.costs',
              '--state-dir',
              join(dir, 'state'),
            ],
            ENV,
          );
          expect(check.stdout).toContain('Iceberg catalog');
          expect(check.stdout).toMatch(/GET \/v1\/config\s+true/);
          expect(check.stdout).toMatch(/namespace finance\.costs\s+true\s+missing/);
          expect(check.code).toBe(0);
        });
      });
    });
  });

  it('four runners committing to one catalog table at once (in this process, each its own client): every commit lands, lost races rebuilt on the newest snapshot, each source exact', async () => {
    await withTempDir(async (dir) => {
      await withCatalog(dir, {}, async (catalog) => {
        const columns = [
          { name: 'id', type: 'VARCHAR' },
          { name: 'source', type: 'VARCHAR' },
        ];
        const schema = evolveSchema(columns, null, 0).schema;
        const init = () => ({ schema, spec: partitionSpec(schema, { source: 'source', month: null }), properties: {} });
        const clock = { now: () => Date.now(), sleep: () => new Promise<void>((r) => setImmediate(r)) };
        const open = () =>
          openRestTables(
            {
              url: catalog.url,
              warehouse: 'wh',
              namespace: NS,
              oauthUri: undefined,
              oauthScope: 'catalog',
              sigv4: undefined,
              sigv4Region: undefined,
              env: ENV,
            },
            { env: ENV, clock, logger: { warn: () => undefined, addSecret: () => undefined }, out: '', scratchRoot: join(dir, 'scratch') },
          );
        const runners = await Promise.all(['a', 'b', 'c', 'd'].map(async (source) => ({ source, tables: await open() })));
        await runners[0]!.tables.ensure('t', init);
        const commit = async ({ source, tables }: (typeof runners)[number], n: number) => {
          const loaded = await tables.ensure('t', init);
          const key = `t/data/source=${source}/${n}.parquet`;
          await loaded.store.putBytes(key, Buffer.from('not read here'));
          return commitSource(
            tables,
            't',
            {
              source,
              columns,
              partitioning: { source: 'source', month: null },
              add: [bareDataFile(loaded.store.location(key), { source }, n, 13)],
              replaces: () => false,
              summary: { [SUMMARY.commitId]: `${source}.${n}` },
            },
            clock,
          );
        };
        try {
          const results = await Promise.all(runners.flatMap((r) => [1, 2, 3].map((n) => commit(r, n))));
          expect(results.every((r) => r.snapshotId !== null)).toBe(true);
          expect(catalog.requests.filter((r) => r.status === 409).length).toBeGreaterThan(0);
          const metadata = catalog.table(NS, 't')!.metadata as { snapshots: { summary: Record<string, string> }[] };
          expect(metadata.snapshots).toHaveLength(12);
          expect(metadata.snapshots.at(-1)!.summary['total-records']).toBe(String(4 * (1 + 2 + 3)));
          expect(new Set(metadata.snapshots.map((s) => s.summary[SUMMARY.commitId])).size).toBe(12);
        } finally {
          for (const r of runners) await r.tables.close();
        }
      });
    });
  });
});
