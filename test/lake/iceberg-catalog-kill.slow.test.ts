// Slow tier only (`.slow.test.ts`), kept out of `npm test` for its time; what checks this in `npm test`:
/**
 * `--format iceberg --catalog URL` under SIGKILL, and runners racing on one catalog table: real
 * processes (the built CLI) against the tests' catalog server and the emulator, both in this process,
 * killed on the catalog's own events (a commit applied, a commit left unanswered) or at costsync's
 * `iceberg-commit` failpoint. After each kill a plain run finishes, every table loaded through the
 * catalog equals the warehouse, and no commit landed twice. Runners racing as processes are in the slow
 * tier (`test/lake/iceberg-catalog-kill-more.slow.test.ts`); in this process, in `iceberg-catalog.test.ts`.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CatalogRequestRecord, CatalogServer } from '../catalog/server.mjs';
import {
  CATALOG_ENV,
  catalogFlags,
  commitLedger,
  expectCatalogEqualsWarehouse,
  expectNoCommitTwice,
  withKillCatalog,
} from '../support/catalog-kill.js';
import { CLI, SPAN, killRunner, syncCommand, withEmulator, withTempDir, backfillFlags } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };

interface Arming {
  /** Extra environment for the killed run (a failpoint). */
  env?: Record<string, string>;
  /** Arms the kill on the catalog's events; returns its disarm. */
  arm?: (catalog: CatalogServer, killNow: () => void) => () => void;
}

/**
 * A backfill through the catalog, SIGKILLed where `arming` says, then run again plainly: the rerun exits
 * 0, every table equals the warehouse, and no commit landed twice. `killed` checks the catalog after the kill.
 */
async function killThenRerun(label: string, arming: Arming, killed: (catalog: CatalogServer) => void = () => undefined) {
  await withEmulator({ ...SPAN, rowsPerDay: 20, anomaliesPerDay: 1, clock }, async (emulator) => {
    await withTempDir(async (dir) => {
      await withKillCatalog(dir, async (catalog) => {
        const args = [CLI, ...syncCommand(emulator.url, dir, [...catalogFlags(catalog), ...backfillFlags(10), '--quiet'])];
        const ledger = commitLedger(catalog);
        const runner = killRunner({ ...CATALOG_ENV, ...arming.env });
        const disarm = arming.arm?.(catalog, () => runner.killNow()) ?? (() => undefined);
        const first = await runner.run(args);
        disarm();
        expect(first.signal, first.stderr).toBe('SIGKILL');
        killed(catalog);
        const again = await killRunner(CATALOG_ENV).run(args);
        expect(again.code, again.stderr).toBe(0);
        await expectCatalogEqualsWarehouse(catalog, join(dir, 'c.duckdb'), label);
        expectNoCommitTwice(catalog, label);
        expect(ledger.count()).toBeGreaterThan(3);
        expect(ledger.twice()).toEqual([]);
      });
    });
  });
}

/** Kills at the first commit the catalog applies to `table` (line_items goes with focus, in one transaction). */
const atCommit = (table: string) => (catalog: CatalogServer, killNow: () => void) => {
  const listener = (e: { table: string }) => {
    if (e.table === table) killNow();
  };
  catalog.events.on('commit', listener);
  return () => catalog.events.off('commit', listener);
};

// Concurrent: each test mostly waits on its processes.
describe.concurrent('--catalog under SIGKILL', () => {
  it('killed right after the catalog applied line_items and focus in one transaction, before its answer left (the run never learned it landed): the rerun exits 0, the tables equal the warehouse, no commit twice', async () => {
    await killThenRerun('after a transaction applied', { arm: atCommit('line_items') });
  });

  it('killed while a table commit the catalog applied is left unanswered: the rerun exits 0, the tables equal the warehouse, no commit twice', async () => {
    await killThenRerun(
      'while a commit was unanswered',
      {
        arm: (catalog, killNow) => {
          catalog.faults.push({ route: 'commit', status: 200, when: 'hang-after' });
          const listener = (r: CatalogRequestRecord) => {
            if (r.status === 0) killNow();
          };
          catalog.events.on('request', listener);
          return () => catalog.events.off('request', listener);
        },
      },
      (catalog) => expect(catalog.faults).toEqual([]),
    );
  });

  it('killed between a commit the catalog answered and its record in the warehouse (the iceberg-commit failpoint): the rerun exits 0, the tables equal the warehouse, no commit twice', async () => {
    await killThenRerun('between a commit and its record', { env: { COSTSYNC_FAILPOINT: 'iceberg-commit:3' } }, (catalog) =>
      // Each batch of a backfill commits: the third was applied before the kill.
      expect(catalog.commits).toBeGreaterThanOrEqual(3),
    );
  });
});
