/**
 * A runner's Iceberg commits grow with its runs, not with its sources (issue 83): every source's months of
 * a table go in one snapshot, and the run tables of every source in one commit each.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import { SUMMARY } from '../../src/iceberg/metadata.js';
import { startCatalogServer } from '../catalog/server.mjs';
import { catalogLocator, icebergDifferences } from '../support/iceberg.js';
import { SPAN, run, spanFlags, withEmulator, withTempDir } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
const NAMES = ['s1', 's2', 's3', 's4', 's5', 's6'];
const NS = ['costsync'];

/** The catalog's table commits of a backfill and then a nightly of `count` sources in one runner, and what the tables hold. */
async function commitsOf(count: number) {
  const names = NAMES.slice(0, count);
  const keys = names.map((n) => ({ key: `k-${n}`, scopes: [...SCOPES], plan: 'business' as const, workspace: n }));
  return withEmulator({ ...SPAN, rowsPerDay: 6, anomaliesPerDay: 1, clock, keys: { keys, connections: [] } }, (emulator) =>
    withTempDir(async (dir) => {
      const catalog = await startCatalogServer({ root: join(dir, 'warehouse'), transactions: true });
      try {
        const configFile = join(dir, 'costsync.config.json');
        writeFileSync(
          configFile,
          JSON.stringify({ sources: names.map((n) => ({ name: n, 'base-url': emulator.url, 'api-key-env': `KEY_${n.toUpperCase()}` })) }),
        );
        const env = { TZ: 'UTC', ...Object.fromEntries(names.map((n) => [`KEY_${n.toUpperCase()}`, `k-${n}`])) };
        const db = join(dir, 'c.duckdb');
        const sync = async () => {
          const before = catalog.commits;
          const result = await run(
            [
              'sync',
              '--config',
              configFile,
              '--db',
              db,
              '--state-dir',
              join(dir, 'state'),
              '--catalog',
              catalog.url,
              ...spanFlags(30),
              '--quiet',
            ],
            env,
            clock,
          );
          expect(result.code, result.stderr).toBe(0);
          return catalog.commits - before;
        };
        const backfill = await sync();
        const nightly = await sync();
        const diff = await icebergDifferences(db, '', { locate: catalogLocator(catalog.url, null, NS, {}) });
        for (const [table, d] of Object.entries(diff))
          expect({ table, missing: d.missing, extra: d.extra }).toEqual({ table, missing: 0, extra: 0 });
        const lineItems = catalog.table(NS, 'line_items')!.metadata.snapshots as { summary: Record<string, string> }[];
        return { backfill, nightly, sources: lineItems.map((s) => s.summary[SUMMARY.sources] ?? s.summary[SUMMARY.source]) };
      } finally {
        await catalog.close();
      }
    }),
  );
}

describe('Iceberg commits per runner, not per source', () => {
  it('two sources or six: the same number of table commits for a backfill and for a nightly, each snapshot naming every source', async () => {
    const two = await commitsOf(2);
    const six = await commitsOf(6);
    expect(six.backfill).toBe(two.backfill);
    expect(six.nightly).toBe(two.nightly);
    // One snapshot of line items for the backfill, every source in it.
    expect(six.sources).toEqual([NAMES.join(',')]);
    expect(two.sources).toEqual(['s1,s2']);
  });
});
