/**
 * `--format iceberg --catalog URL` in a long kill loop (slow tier): a three-month backfill with
 * restatements between runs, through the tests' catalog server with faults mixed in (commits applied
 * then answered 500 or 503, refused with 409 or 503, tokens expired mid-run), each run SIGKILLed at a
 * seeded random event: a commit the catalog applied, a catalog or API request, a commit left
 * unanswered, costsync's `iceberg-commit` failpoint. Every run that finishes, and the plain run at the
 * end, leaves each table loaded through the catalog equal to the warehouse, with no commit twice.
 *
 * COSTSYNC_CATALOG_KILL_SECONDS bounds the loop (default 120); COSTSYNC_KILL_SEED replays one.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/emulator/rng.js';
import type { CatalogFault, CatalogRequestRecord } from '../catalog/server.mjs';
import {
  CATALOG_ENV,
  catalogFlags,
  commitLedger,
  expectCatalogEqualsWarehouse,
  expectNoCommitTwice,
  withKillCatalog,
} from '../catalog-kill.js';
import { CLI, killRunner, syncCommand, withEmulator, withTempDir } from '../helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const SECONDS = Number(process.env.COSTSYNC_CATALOG_KILL_SECONDS ?? 120);
const SEED = Number(process.env.COSTSYNC_KILL_SEED ?? 20261126);
const SPAN = { startDate: '2025-04-01', endDate: '2025-06-30' } as const;

type KillKind = 'commit' | 'catalog-request' | 'api-request' | 'unanswered' | 'failpoint';
const KINDS: readonly KillKind[] = ['commit', 'catalog-request', 'api-request', 'unanswered', 'failpoint'];

/** Faults a run may meet: applied then answered 500 or 503 (left unknown), refused with 503 or 409; a create or a load failing. */
const FAULTS: readonly CatalogFault[] = [
  { route: 'transaction', status: 500, when: 'after' },
  { route: 'commit', status: 500, when: 'after' },
  { route: 'commit', status: 503, when: 'after' },
  { route: 'transaction', status: 503, when: 'before' },
  { route: 'commit', status: 503, when: 'before' },
  { route: 'commit', status: 409, when: 'before' },
  { route: 'transaction', status: 409, when: 'before' },
  { route: 'create', status: 500, when: 'after' },
  { route: 'create', status: 503, when: 'before' },
  { route: 'load', status: 503, when: 'before' },
];

describe('--catalog in a long kill loop (slow tier)', () => {
  it(
    `a backfill with restatements through a faulty catalog, SIGKILLed at random events for ${SECONDS} s (seed ${SEED}): every finished run and the last leave the tables equal to the warehouse, no commit twice`,
    async () => {
      console.log(`iceberg-catalog-kill: seed ${SEED}, ${SECONDS} s`);
      const rng = createRng(SEED);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
      const runner = killRunner(CATALOG_ENV);
      await withEmulator(
        {
          ...SPAN,
          rowsPerDay: 60,
          anomaliesPerDay: 2,
          clock,
          restatement: { days: 20, changeRate: 0.3, deleteRate: 0.05, addRate: 0.1 },
          onRequest: runner.onRequest,
        },
        async (emulator) => {
          await withTempDir(async (dir) => {
            await withKillCatalog(dir, async (catalog) => {
              const db = join(dir, 'c.duckdb');
              // Retention 0 expires every snapshot but the current ones: the expiry and its file removal get killed too.
              const args = (retention: string) => [
                CLI,
                ...syncCommand(emulator.url, dir, [
                  ...catalogFlags(catalog),
                  '--start-date',
                  SPAN.startDate,
                  '--until',
                  SPAN.endDate,
                  '--window-days',
                  '7',
                  '--lookback-days',
                  '25',
                  '--iceberg-retention',
                  retention,
                  '--rate-limit',
                  '100000',
                  '--log-format',
                  'json',
                  '--quiet',
                ]),
              ];
              const ledger = commitLedger(catalog);
              const deadline = Date.now() + SECONDS * 1000;
              const tally = { killed: 0, finished: 0 };
              for (let i = 0; i === 0 || Date.now() < deadline; i++) {
                if (i > 0 && rng() < 0.4) emulator.restate();
                const kind = pick(KINDS);
                const at = 1 + Math.floor(rng() * (kind === 'catalog-request' ? 60 : kind === 'api-request' ? 30 : 10));
                const retention = rng() < 0.3 ? '0' : '7d';
                const faults: CatalogFault[] = [];
                for (let f = Math.floor(rng() * 4); f > 0; f--) faults.push({ ...pick(FAULTS) });
                if (kind === 'unanswered')
                  faults.splice(Math.floor(rng() * (faults.length + 1)), 0, {
                    route: pick(['commit', 'transaction'] as const),
                    status: 200,
                    when: 'hang-after',
                  });
                const expireAt = rng() < 0.5 ? 1 + Math.floor(rng() * 8) : 0;
                const label = `run ${i}: kill at ${kind} ${at}, retention ${retention}, faults ${JSON.stringify(faults)}, tokens expire at commit ${expireAt}`;
                catalog.faults.splice(0, catalog.faults.length, ...faults);
                let commits = 0;
                let requests = 0;
                const onCommit = () => {
                  commits += 1;
                  if (commits === expireAt) catalog.expireTokens();
                  if (kind === 'commit' && commits === at) runner.killNow();
                };
                const onRequest = (r: CatalogRequestRecord) => {
                  requests += 1;
                  if ((kind === 'catalog-request' && requests === at) || (kind === 'unanswered' && r.status === 0)) runner.killNow();
                };
                catalog.events.on('commit', onCommit);
                catalog.events.on('request', onRequest);
                const killer = kind === 'failpoint' ? killRunner({ ...CATALOG_ENV, COSTSYNC_FAILPOINT: `iceberg-commit:${at}` }) : runner;
                const result = await killer.run(args(retention), kind === 'api-request' ? { atRequest: at } : {});
                catalog.events.off('commit', onCommit);
                catalog.events.off('request', onRequest);
                if (result.signal === 'SIGKILL') tally.killed += 1;
                else {
                  expect({ label, code: result.code, stderr: result.stderr }).toEqual({ label, code: 0, stderr: result.stderr });
                  tally.finished += 1;
                  await expectCatalogEqualsWarehouse(catalog, db, label);
                  expectNoCommitTwice(catalog, label);
                }
              }
              catalog.faults.splice(0);
              const last = await runner.run(args('7d'));
              expect(last.code, last.stderr).toBe(0);
              await expectCatalogEqualsWarehouse(catalog, db, 'the last run');
              expectNoCommitTwice(catalog, 'the last run');
              expect(ledger.twice()).toEqual([]);
              console.log(
                `iceberg-catalog-kill: ${JSON.stringify(tally)}, ${ledger.count()} snapshots committed, ${catalog.requests.filter((r) => r.status === 409).length} 409s`,
              );
              expect(tally.killed).toBeGreaterThan(0);
            });
          });
        },
      );
    },
    (SECONDS + 120) * 1000,
  );
});
