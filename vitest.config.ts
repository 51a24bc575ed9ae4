import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/support/sequencer.js';
import { EXECUTABLE_PROCESS_ENV } from './test/support/worker-env.js';

/**
 * Three projects. `unit`: the pure tests, with no global setup (`npm run test:unit`, seconds, nothing to
 * install). `fast`: the commands in-process and through one spawn each, the kill tests that need a real
 * process, against one radosgw for the run; `npm test` runs it with `unit`. `slow` (`npm run test:slow`):
 * chaos, long kill loops, soaks and the second looks at features SLOW_ONLY names (CI runs every tier). The
 * global setup installs or names the system programs the last two need, then starts the gateway.
 */
const UNIT = ['test/unit/**/*.test.ts'];
const SLOW = ['test/chaos/**/*.test.ts', 'test/slow/**/*.test.ts'];
/**
 * Files both tiers run, the slow tier with more cases (COSTSYNC_SLOW_TIER): the kill loops, 3 kill points in the fast
 * tier (but those SLOW_ONLY lists) and 12 in the slow; the run tables' agreement, one lake format and both.
 */
const BOTH_TIERS = [
  'test/integration/sync-kill.test.ts',
  'test/integration/sync-kill-outputs.test.ts',
  'test/integration/run-tables-agree.test.ts',
];
const GLOBAL_SETUP = ['test/support/global-setup.ts'];
/**
 * Files of test/integration/ the slow tier runs and the fast tier not at all, kept out of `npm test` for its 3
 * minutes on a 2-core machine (docs/testing.md, "The slow tier"). Each names what checks its feature in `npm test`.
 */
const SLOW_ONLY = [
  // The output kill loops at 12 kill points: sync-kill at 3.
  'test/integration/sync-kill-outputs.test.ts',
  // Run again at more points by test/slow/moving-sources and test/slow/iceberg-catalog-kill.
  'test/integration/moving-sources.test.ts',
  'test/integration/iceberg-catalog-kill.test.ts',
  // A lake that missed runs: iceberg's "a warehouse pointed at a new --out", cli-commands' Parquet lake rewrites.
  'test/integration/lake-catch-up.test.ts',
  // Older dates restated: unit/recheck, first-day's dry run (the recheck's requests and what it compares).
  'test/integration/recheck.test.ts',
  // The REST catalog: iceberg-catalog-storage (SigV4, vended credentials), unit/catalog-client and catalog-server.
  'test/integration/iceberg-catalog.test.ts',
  // Leases on a bucket: unit/lease, lost-answers (a lease's write whose answer is lost), sync-lock.
  'test/integration/lease.test.ts',
  // Empty state directories: state-dirs (a second state directory adopts the published file and its state).
  'test/integration/clean-container.test.ts',
  // The bucket lake: iceberg-catalog-storage's tables in radosgw, lost-answers, the bucket benchmark's smoke.
  'test/integration/lake-bucket.test.ts',
  // The compacting publish: unit/publish-compact-decision.
  'test/integration/publish-compact.test.ts',
  // The ETA: unit/progress.
  'test/integration/progress-estimate.test.ts',
  // A SIGKILL's refetch: sync-kill.
  'test/integration/kill-refetch.test.ts',
  // Restatements between pages and the rollups check: unit/reconcile, check-totals, sync-incremental.
  'test/integration/sync-reconcile.test.ts',
  // A push's row identity: the push model (random exports, spellings, formats, ingest modes), push.
  'test/integration/push-identity.test.ts',
  // A stop with every answer held: closed-pipe, first-day's bounded stops, stop-hold, sync-resume.
  'test/integration/stop-abort.test.ts',
  // Faulty servers: client (500s, drops, cut-off and malformed bodies, 429 holds), sync-hostile, stop-hold.
  'test/integration/sync-faults.test.ts',
  // Several sources: shards (four runners sharing sources), the sources benchmark's smoke.
  'test/integration/sources.test.ts',
  // Lake outboxes an older version wrote: upgrade (its warehouse, state file and spool picked up as they are).
  'test/integration/outbox-upgrade.test.ts',
  // What each entry loads (the emulator's, a command's modules): bin (the package bin, --help of every command).
  'test/integration/emulator-entry.test.ts',
];
export default defineConfig({
  test: {
    // A guard against a hang, never the thing measured: a spawned run's test takes 2-30 s alone, and up to
    // 4 times that with three files at once on a loaded 2-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // The workers run costsync in-process: they start with the process settings its executable gives itself
    // (src/bin.cts), so DuckDB and malloc work there as in a user's run. Without them, memory DuckDB's threads
    // took from glibc's per-thread arenas and the main thread freed went back to the kernel a piece at a time
    // (madvise, then page faults again; docs/benchmarks.md, "The test suite").
    env: { ...EXECUTABLE_PROCESS_ENV },
    // The longest files first, even on a clean clone with no durations cached (test/support/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    // Three files at once on these 2-core machines: much of a test is waiting on a spawned process, a
    // socket or a bucket, so a third worker shortens the run (docs/benchmarks.md, "The test suite").
    maxWorkers: 3,
    projects: [
      // Pure tests share their workers' modules (no isolation): they hold no state between files.
      { extends: true, test: { name: 'unit', include: UNIT, isolate: false } },
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['test/**/*.test.ts'],
          exclude: [...UNIT, ...SLOW, ...SLOW_ONLY],
          globalSetup: GLOBAL_SETUP,
          // A worker's files share its modules, as the unit tests do: importing costsync, DuckDB and the
          // emulator again for each file cost about a sixth of the tier's CPU (docs/benchmarks.md, "The test suite").
          // The tests keep no state in modules: each opens its own emulator, directories and databases.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'slow',
          include: [...SLOW, ...BOTH_TIERS, ...SLOW_ONLY],
          env: { COSTSYNC_SLOW_TIER: '1' },
          globalSetup: GLOBAL_SETUP,
        },
      },
    ],
  },
});
