import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withWarehouse, type Warehouse } from '../../src/storage/duckdb.js';
import { warehouseLookups } from '../../src/sync/lookups.js';
import { withTempDir } from '../support/helpers.js';

/** The warehouse, counting the named queries it runs. */
function counting(warehouse: Warehouse): { warehouse: Warehouse; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  return {
    counts,
    warehouse: {
      ...warehouse,
      query: (name, params, names) => {
        counts.set(name, (counts.get(name) ?? 0) + 1);
        return warehouse.query(name, params, names);
      },
    },
  };
}

async function seed(warehouse: Warehouse): Promise<void> {
  await warehouse.sql(`INSERT INTO line_items (id, usage_date, provider_type, net_amount_usd, source)
    SELECT 'li-' || i, DATE '2025-06-01' + (i % 5)::INT, CASE WHEN i % 2 = 0 THEN 'aws' ELSE 'gcp' END, 1.0, 'ws-' || (i % 3)
    FROM range(60) t(i)`);
  await warehouse.sql(`INSERT INTO anomalies (id, provider_type, source) VALUES ('an-1', 'azure', 'ws-2')`);
}

describe('warehouse lookups at a source start', () => {
  it('answers the sources that ask together with one scan each kind, each source its own dates and providers', async () => {
    await withTempDir(async (dir) => {
      await withWarehouse(join(dir, 'w.duckdb'), async (real) => {
        await seed(real);
        const { warehouse, counts } = counting(real);
        const lookups = warehouseLookups(warehouse);
        const [zero, two, twoNarrow, none, providers2, providers0, providersNone] = await Promise.all([
          lookups.lineItemsPerDate('ws-0', '2025-06-01', '2025-06-30'),
          lookups.lineItemsPerDate('ws-2', '2025-06-01', '2025-06-30'),
          lookups.lineItemsPerDate('ws-2', '2025-06-02', '2025-06-03'),
          lookups.lineItemsPerDate('ws-9', '2025-06-01', '2025-06-30'),
          lookups.knownProviders('ws-2'),
          lookups.knownProviders('ws-0'),
          lookups.knownProviders('ws-9'),
        ]);
        const expected = async (source: string, from: string, to: string) =>
          new Map(
            (
              await real.sql<{ date: string; n: number }>(
                `SELECT strftime(usage_date, '%Y-%m-%d') AS date, count(*) AS n FROM line_items WHERE source = $1 AND usage_date BETWEEN $2::DATE AND $3::DATE GROUP BY ALL`,
                [source, from, to],
              )
            ).map((r) => [r.date, Number(r.n)]),
          );
        expect(zero).toEqual(await expected('ws-0', '2025-06-01', '2025-06-30'));
        expect(zero.size).toBe(5);
        expect(two).toEqual(await expected('ws-2', '2025-06-01', '2025-06-30'));
        expect([...twoNarrow.keys()].sort()).toEqual(['2025-06-02', '2025-06-03']);
        expect(twoNarrow).toEqual(await expected('ws-2', '2025-06-02', '2025-06-03'));
        expect(none.size).toBe(0);
        expect(providers2.sort()).toEqual(['aws', 'azure', 'gcp']);
        expect(providers0.sort()).toEqual(['aws', 'gcp']);
        expect(providersNone).toEqual([]);
        expect(Object.fromEntries(counts)).toEqual({ 'sync/line_items_rows_per_date': 1, 'sync/known_providers': 1 });
      });
    });
  });

  it('a lookup asked for after a commit sees that commit', async () => {
    await withTempDir(async (dir) => {
      await withWarehouse(join(dir, 'w.duckdb'), async (warehouse) => {
        const lookups = warehouseLookups(warehouse);
        expect((await lookups.lineItemsPerDate('ws-0', '2025-06-01', '2025-06-30')).size).toBe(0);
        await warehouse.transaction(async () => {
          await seed(warehouse);
        });
        expect((await lookups.lineItemsPerDate('ws-0', '2025-06-01', '2025-06-30')).get('2025-06-01')).toBe(4);
      });
    });
  });
});
