/**
 * `--format iceberg --catalog URL` in long kill loops (slow tier), through the tests' catalog server.
 * One runner: a three-month backfill with restatements between runs, faults mixed in (commits applied
 * then answered 500 or 503, refused with 503 or 409, creates and loads failing, tokens expired mid-run),
 * each run SIGKILLed at a seeded random event: a commit the catalog applied, a catalog or API request,
 * a commit left unanswered, costsync's `iceberg-commit` failpoint. Every run that finishes, and the
 * plain run at the end, leaves each table loaded through the catalog equal to the warehouse, with no
 * commit twice. Three runners: their own sources on the same tables at once, one killed each round.
 *
 * COSTSYNC_CATALOG_KILL_SECONDS bounds each loop (default 60); COSTSYNC_KILL_SEED replays one.
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
} from '../support/catalog-kill.js';
import { CLI, cli, killRunner, syncCommand, withEmulator, withTempDir, backfillFlags } from '../support/helpers.js';
import { sourceSyncCommand, sourcesConfig, withKillRig, workspaceKeys } from '../support/kill-loop.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const SECONDS = Number(process.env.COSTSYNC_CATALOG_KILL_SECONDS ?? 60);
const SEED = Number(process.env.COSTSYNC_KILL_SEED ?? 20261126);
const SPAN = { startDate: '2025-04-01', endDate: '2025-06-30' } as const;

/** The restatements both loops meet between runs (the emulator's `restate()`). */
const RESTATEMENT = { days: 20, changeRate: 0.3, deleteRate: 0.05, addRate: 0.1 };

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

/** Both loops' backfill: weekly windows, a lookback over the restated days, `retention`, and `rateLimit` lifted or not. */
const loopFlags = (retention: string, rateLimit: boolean) => [
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
  ...(rateLimit ? ['--rate-limit', '100000'] : []),
  '--log-format',
  'json',
  '--quiet',
];

describe('--catalog in a long kill loop (slow tier)', () => {
  it(
    `a backfill with restatements through a faulty catalog, SIGKILLed at random events for ${SECONDS} s (seed ${SEED}): every finished run and the last leave the tables equal to the warehouse, no commit twice`,
    async () => {
      console.log(`iceberg-catalog-kill: seed ${SEED}, ${SECONDS} s`);
      const rng = createRng(SEED);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
      await withKillRig(
        { ...SPAN, rowsPerDay: 60, anomaliesPerDay: 2, clock, restatement: RESTATEMENT },
        async ({ emulator, dir, runner }) => {
          await withKillCatalog(dir, async (catalog) => {
            const db = join(dir, 'c.duckdb');
            // Retention 0 expires every snapshot but the current ones: the expiry and its file removal get killed too.
            const args = (retention: string) => [
              CLI,
              ...syncCommand(emulator.url, dir, [...catalogFlags(catalog), ...loopFlags(retention, true)]),
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
        },
        { env: CATALOG_ENV },
      );
    },
    (SECONDS + 120) * 1000,
  );

  it(
    `three runners with their own sources sharing the catalog's tables, one of them SIGKILLed at a random point each round for ${SECONDS} s (seed ${SEED + 1}): the others exit 0, and after a plain round each source is exact, no commit twice`,
    async () => {
      const rng = createRng(SEED + 1);
      const names = ['eu', 'us', 'apac'];
      await withEmulator(
        {
          ...SPAN,
          rowsPerDay: 30,
          anomaliesPerDay: 1,
          clock,
          restatement: RESTATEMENT,
          keys: workspaceKeys(names),
        },
        async (emulator) => {
          await withTempDir(async (dir) => {
            await withKillCatalog(dir, async (catalog) => {
              const { config, env } = sourcesConfig(dir, emulator.url, names, {
                COSTSYNC_CATALOG_CREDENTIAL: CATALOG_ENV.COSTSYNC_CATALOG_CREDENTIAL,
              });
              const args = (w: string, retention: string) => [
                CLI,
                ...sourceSyncCommand(config, w, join(dir, w), [...catalogFlags(catalog), ...loopFlags(retention, false)]),
              ];
              const ledger = commitLedger(catalog);
              const deadline = Date.now() + SECONDS * 1000;
              let killed = 0;
              for (let round = 0; round === 0 || Date.now() < deadline; round++) {
                if (round > 0 && rng() < 0.4) emulator.restate();
                const victim = names[Math.floor(rng() * names.length)]!;
                const failpoint = rng() < 0.5;
                const at = 1 + Math.floor(rng() * 12);
                const retention = rng() < 0.3 ? '0' : '7d';
                const label = `round ${round}: ${victim} killed at ${failpoint ? 'its iceberg-commit' : 'the catalog commit'} ${at}, retention ${retention}`;
                const victimRunner = killRunner(failpoint ? { ...env, COSTSYNC_FAILPOINT: `iceberg-commit:${at}` } : env);
                let commits = 0;
                const onCommit = () => {
                  if (!failpoint && ++commits === at) victimRunner.killNow();
                };
                catalog.events.on('commit', onCommit);
                const results = await Promise.all(
                  names.map(async (w) => ({ w, result: await (w === victim ? victimRunner : killRunner(env)).run(args(w, retention)) })),
                );
                catalog.events.off('commit', onCommit);
                for (const { w, result } of results) {
                  if (w === victim && result.signal === 'SIGKILL') killed += 1;
                  else expect({ label, w, code: result.code, stderr: result.stderr }).toEqual({ label, w, code: 0, stderr: result.stderr });
                }
              }
              const last = await Promise.all(names.map((w) => killRunner(env).run(args(w, '7d'))));
              for (const r of last) expect(r.code, r.stderr).toBe(0);
              for (const w of names) await expectCatalogEqualsWarehouse(catalog, join(dir, w, 'c.duckdb'), w, [w]);
              expectNoCommitTwice(catalog, 'the last round');
              expect(ledger.twice()).toEqual([]);
              console.log(
                `iceberg-catalog-kill (three runners): ${killed} killed, ${ledger.count()} snapshots committed, ${catalog.requests.filter((r) => r.status === 409).length} 409s`,
              );
              expect(killed).toBeGreaterThan(0);
            });
          });
        },
      );
    },
    (SECONDS + 120) * 1000,
  );
});

describe('--catalog with runners racing', () => {
  it('four runners, each with its own warehouse and source, committing to the same catalog tables at once: all exit 0, some commits lost a race (409) and were made again, each source exact', async () => {
    const names = ['eu', 'us', 'apac', 'latam'];
    await withEmulator({ ...SPAN, rowsPerDay: 20, anomaliesPerDay: 1, clock, keys: workspaceKeys(names) }, async ({ url }) => {
      await withTempDir(async (dir) => {
        await withKillCatalog(dir, async (catalog) => {
          const { config, env } = sourcesConfig(dir, url, names, { COSTSYNC_CATALOG_CREDENTIAL: CATALOG_ENV.COSTSYNC_CATALOG_CREDENTIAL });
          const runner = (w: string) =>
            sourceSyncCommand(config, w, join(dir, w), [
              ...catalogFlags(catalog),
              ...backfillFlags(10, { span: SPAN, rateLimit: false }),
              '--quiet',
            ]);
          const ledger = commitLedger(catalog);
          const results = await Promise.all(names.map((w) => cli(runner(w), env)));
          for (const r of results) expect(r.code, r.stderr).toBe(0);
          // Seven tables, four runners, all at once: commits built on a base another runner moved are refused.
          expect(catalog.requests.filter((r) => r.status === 409).length).toBeGreaterThan(0);
          for (const w of names) await expectCatalogEqualsWarehouse(catalog, join(dir, w, 'c.duckdb'), w, [w]);
          expectNoCommitTwice(catalog, 'four runners');
          expect(ledger.twice()).toEqual([]);
          // Every runner committed each of its tables: seven each.
          expect(ledger.count()).toBeGreaterThanOrEqual(4 * 7);
        });
      });
    });
  });
});
