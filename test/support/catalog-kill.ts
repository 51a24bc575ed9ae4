/**
 * What the catalog kill tests share: the tests' catalog server as they start it (a prefix, OAuth2,
 * transactions, idempotency keys), the check of every table loaded through it against a warehouse, and
 * a ledger of the commits it applied, so a commit made twice is caught even after its snapshot expired.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { SUMMARY } from '../../src/iceberg/metadata.js';
import { ICEBERG_TABLES } from '../../src/storage/tables.js';
import { startCatalogServer, type CatalogCommitEvent, type CatalogServer } from '../catalog/server.mjs';
import { catalogLocator, icebergDifferences } from './iceberg.js';

const SECRET = 'kIlL-sEcReT-51';
const PREFIX = 'ws/k1';
/** costsync's default namespace. */
const NS = ['costsync'];

/** The environment a sync through the catalog needs (the emulator's demo key, the catalog's client). */
export const CATALOG_ENV = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC', COSTSYNC_CATALOG_CREDENTIAL: `costsync:${SECRET}` };

export async function withKillCatalog<T>(dir: string, fn: (catalog: CatalogServer) => Promise<T>): Promise<T> {
  const catalog = await startCatalogServer({
    root: join(dir, 'warehouse'),
    warehouse: 'wh',
    prefix: PREFIX,
    transactions: true,
    idempotencyKeyLifetime: 'PT30M',
    auth: { kind: 'oauth', clients: [{ id: 'costsync', secret: SECRET }] },
  });
  try {
    return await fn(catalog);
  } finally {
    await catalog.close();
  }
}

/** A sync's flags for the catalog. */
export const catalogFlags = (catalog: CatalogServer) => ['--catalog', catalog.url, '--catalog-warehouse', 'wh'];

/** Each table (of `sources`' rows), loaded through the catalog as an engine loads it, equals the warehouse `db`. */
export async function expectCatalogEqualsWarehouse(catalog: CatalogServer, db: string, label: string, sources?: readonly string[]) {
  const token = (await (
    await fetch(`${catalog.url}/v1/oauth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&client_id=costsync&client_secret=${SECRET}&scope=catalog`,
    })
  ).json()) as { access_token: string };
  const locate = catalogLocator(catalog.url, PREFIX, NS, { authorization: `Bearer ${token.access_token}` });
  const diff = await icebergDifferences(db, '', { locate, ...(sources !== undefined && { sources }) });
  expect(Object.keys(diff).length).toBeGreaterThan(3);
  for (const [table, d] of Object.entries(diff))
    expect({ label, table, ...d }).toEqual({ label, table, rows: d.rows, missing: 0, extra: 0 });
  expect(diff.line_items!.rows, label).toBeGreaterThan(0);
}

/** In each table the catalog holds now, every snapshot carries a commit id, and no id twice. */
export function expectNoCommitTwice(catalog: CatalogServer, label: string) {
  for (const table of Object.keys(ICEBERG_TABLES)) {
    const snapshots = (catalog.table(NS, table)?.metadata.snapshots ?? []) as { summary: Record<string, string> }[];
    const ids = snapshots.map((s) => s.summary[SUMMARY.commitId]);
    expect({ label, table, twice: ids.filter((id, i) => id === undefined || ids.indexOf(id) !== i) }).toEqual({ label, table, twice: [] });
  }
}

/**
 * Records the commit id of every snapshot the catalog adds, per table, from now on. `twice()`: the ids
 * that landed more than once (none, when costsync settles every commit it could not see answered).
 */
export function commitLedger(catalog: CatalogServer) {
  const seen = new Map<string, number>();
  const listener = (e: CatalogCommitEvent) => {
    const snapshots = (catalog.table(NS, e.table)?.metadata.snapshots ?? []) as {
      'snapshot-id': number;
      summary: Record<string, string>;
    }[];
    for (const id of e.snapshotIds) {
      const commitId = snapshots.find((s) => s['snapshot-id'] === id)?.summary[SUMMARY.commitId];
      const key = `${e.table} ${commitId ?? `(no commit id: snapshot ${id})`}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
  };
  catalog.events.on('commit', listener);
  return {
    /** Snapshots recorded. */
    count: () => [...seen.values()].reduce((a, b) => a + b, 0),
    twice: () => [...seen].filter(([key, n]) => n > 1 || key.includes('(no commit id')).map(([key]) => key),
    stop: () => catalog.events.off('commit', listener),
  };
}
