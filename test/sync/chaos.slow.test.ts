/**
 * The chaos suite. `npm test` runs it bounded (one round of each part); `npm run test:chaos` runs it
 * for COSTSYNC_CHAOS_SECONDS with COSTSYNC_CHAOS_SEED, and more kill points (COSTSYNC_KILLS). Every
 * failure message carries the seed and round, so a failing run can be replayed exactly.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/emulator/rng.js';
import type { Emulator } from '../../src/emulator/server.js';
import { ExitCode } from '../../src/errors.js';
import { runSync } from '../../src/sync/runner.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import {
  CLI,
  cli,
  fakeClock,
  killRunner,
  memoryLogger,
  tableDigest,
  testSyncConfig,
  withEmulator,
  withTempDir,
  SPAN,
  type KillPoint,
  syncCommand,
  spanFlags,
} from '../support/helpers.js';

const SEED = Number(process.env.COSTSYNC_CHAOS_SEED ?? 20251121);
const SECONDS = Number(process.env.COSTSYNC_CHAOS_SECONDS ?? 0);
const KILLS = Number(process.env.COSTSYNC_KILLS ?? 6);
const PAIRS = Number(process.env.COSTSYNC_CHAOS_PAIRS ?? (SECONDS > 0 ? 20 : 3));
/** Parts run until this much time has passed (at least one round each). */
const budgetMs = (SECONDS * 1000) / 3;
const timeout = SECONDS * 1000 + 120_000;
const fixed = Date.parse('2025-07-01T06:00:00Z');
const SAMPLE = fileURLToPath(new URL('../fixtures/focus_sample_1.0.csv', import.meta.url));
const data = { ...SPAN, rowsPerDay: 150, anomaliesPerDay: 3 };

/** The digest of a fault-free sync of `data`: what every chaotic run must end with. */
async function cleanDigest() {
  const clock = fakeClock(fixed);
  return withEmulator({ ...data, clock: { now: () => fixed } }, async ({ url }) =>
    withTempDir(async (dir) => {
      const config = testSyncConfig(url, dir);
      expect(
        (
          await runSync({
            config,
            logger: memoryLogger(),
            clock,
            clientOptions: { retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 2 } },
          })
        ).outcome,
      ).toBe('success');
      return tableDigest(config.db);
    }),
  );
}

describe(`chaos (seed ${SEED}, ${SECONDS} s)`, () => {
  it(
    "faults: seeded mixes of 500s, 429 bursts, dropped connections, cut-off and malformed bodies and latency spikes end with a fault-free run's tables",
    { timeout },
    async () => {
      const expected = await cleanDigest();
      const started = Date.now();
      let round = 0;
      do {
        round += 1;
        const rng = createRng(SEED * 1000 + round);
        const faults = {
          errorRate: rng() * 0.2,
          dropRate: rng() * 0.08,
          truncateRate: rng() * 0.08,
          malformedRate: rng() * 0.08,
          latencyMs: 0,
          latencyJitterMs: rng() < 0.5 ? 0 : 25,
          seed: SEED + round,
        };
        const burstEvery = 4 + Math.floor(rng() * 15);
        const burstLength = 1 + Math.floor(rng() * 4);
        const clock = fakeClock(fixed);
        const label = `seed ${SEED} round ${round}: ${JSON.stringify({ ...faults, burstEvery, burstLength })}`;
        let requests = 0;
        let current: Emulator | null = null;
        // The emulator's clock stays put (its data depends on "now"); the sync's moves as it waits out 429s.
        await withEmulator(
          {
            ...data,
            clock: { now: () => fixed },
            faults,
            // A burst of 429s every few requests, as a shared key's neighbours would cause.
            // (Counted over answered requests, so bursts stay bursts and never become a permanent refusal.)
            onRequest: (entry) => {
              if (entry.status !== 429 && ++requests % burstEvery === 0)
                current?.faults.script(...Array.from({ length: burstLength }, () => 'rateLimit' as const));
            },
          },
          async (e) => {
            current = e;
            await withTempDir(async (dir) => {
              const config = testSyncConfig(e.url, dir, { windowDays: 1 + Math.floor(rng() * 10) });
              const summary = await runSync({
                config,
                logger: memoryLogger(),
                clock,
                clientOptions: { retry: { retries: 12, minTimeoutMs: 1, maxTimeoutMs: 2 } },
              });
              expect(summary.outcome, `${label}: ${String(summary.error)}`).toBe('success');
              expect(summary.rateLimited, label).toBeGreaterThan(0);
              expect(await tableDigest(config.db), label).toEqual(expected);
            });
          },
        );
      } while (Date.now() - started < budgetMs);
    },
  );

  it(
    `kill: a push SIGKILLed at ${KILLS} random points (request counts and delays), then re-run, stores every row exactly once`,
    { timeout },
    async () => {
      const rng = createRng(SEED);
      const runner = killRunner({ COSTSYNC_API_KEY: 'demo-key' }, (e) => e.route === 'ingest-focus');
      await withEmulator(
        {
          ...SPAN,
          rowsPerDay: 5,
          faults: { latencyMs: 5 },
          onRequest: runner.onRequest,
        },
        async (emulator) => {
          await withTempDir(async (dir) => {
            const args = [
              CLI,
              'push',
              '--base-url',
              emulator.url,
              '--db',
              join(dir, 'p.duckdb'),
              '--state-dir',
              join(dir, 'state'),
              '--connection',
              'demo-connection',
              '--batch-size',
              '40',
              '--rate-limit',
              '100000',
              '--quiet',
              SAMPLE,
            ];
            const run = (point: KillPoint) => runner.run(args, point);
            let killed = 0;
            for (let i = 0; i < KILLS; i++) {
              // At a request, or at a ledger's commit (an event, never a delay).
              const point = i % 2 === 0 ? { atRequest: 1 + Math.floor(rng() * 6) } : { failpoint: `commit:${1 + Math.floor(rng() * 8)}` };
              const result = await run(point);
              if (result.signal === 'SIGKILL') killed += 1;
              else expect(result.code, `seed ${SEED} kill ${i} ${JSON.stringify(point)}`).toBe(ExitCode.OK);
            }
            expect((await run({})).code).toBe(ExitCode.OK);
            expect(killed).toBeGreaterThan(0);
            expect(emulator.dataset.ingestedRecords(), `seed ${SEED}`).toHaveLength(1000);
            const wh = await openReadOnly(join(dir, 'p.duckdb'));
            try {
              const rows = await wh.sql<{ first_row: number; last_row: number }>('SELECT first_row, last_row FROM ingest_batches');
              const covered = new Set<number>();
              for (const r of rows) for (let i = r.first_row; i <= r.last_row; i++) covered.add(i);
              expect(covered.size).toBe(1000);
            } finally {
              wh.close();
            }
          });
        },
      );
    },
  );

  it(
    `concurrency: ${PAIRS} pairs of syncs started together: one proceeds, the other exits 5, the tables are never damaged`,
    { timeout },
    async () => {
      const clock = { now: () => fixed };
      await withEmulator({ ...SPAN, rowsPerDay: 120, clock, faults: { latencyMs: 15 } }, async ({ url }) => {
        let expected: Awaited<ReturnType<typeof tableDigest>> | null = null;
        const started = Date.now();
        let pair = 0;
        do {
          pair += 1;
          await withTempDir(async (dir) => {
            const args = syncCommand(url, dir, [...spanFlags(), '--quiet']);
            const [a, b] = await Promise.all([cli(args, { COSTSYNC_API_KEY: 'demo-key' }), cli(args, { COSTSYNC_API_KEY: 'demo-key' })]);
            expect([a.code, b.code].sort(), `pair ${pair}: ${a.stderr}${b.stderr}`).toEqual([ExitCode.OK, ExitCode.LOCKED]);
            const digest = await tableDigest(join(dir, 'c.duckdb'));
            expected ??= digest;
            expect(digest, `pair ${pair}`).toEqual(expected);
            expect(digest.duplicate_line_item_ids!.rows).toBe(0);
            expect(digest.line_items!.rows).toBe(120 * 30);
          });
        } while (pair < PAIRS || Date.now() - started < budgetMs);
      });
    },
  );
});
