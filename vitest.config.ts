import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/support/sequencer.js';
import { EXECUTABLE_PROCESS_ENV } from './test/support/worker-env.js';

/**
 * Tests live by feature (`test/<feature>/`); a file's suffix says its tier. `unit` (`*.unit.test.ts`): the pure
 * tests, with no global setup (`npm run test:unit`, seconds, nothing to install). `fast` (every other
 * `*.test.ts`): the commands in-process and through one spawn each, the kill tests that need a real process,
 * against one radosgw for the run; `npm test` runs it with `unit`. `slow` (`*.slow.test.ts`, `npm run test:slow`):
 * chaos, long kill loops, soaks and the second looks at features the fast tier checks once, each file's first
 * line naming what checks its feature in `npm test` (CI runs every tier). The global setup installs or names the
 * system programs the last two need, then starts the gateway.
 */
const UNIT = ['test/**/*.unit.test.ts'];
const SLOW = ['test/**/*.slow.test.ts'];
/**
 * Files of the fast tier the slow tier runs again with more cases (COSTSYNC_SLOW_TIER): the sync's kill loop,
 * 3 kill points in the fast tier and 12 in the slow; the run tables' agreement, one lake format and both.
 */
const BOTH_TIERS = ['test/sync/sync-kill.test.ts', 'test/outputs/run-tables-agree.test.ts'];
const GLOBAL_SETUP = ['test/support/global-setup.ts'];
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
          exclude: [...UNIT, ...SLOW],
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
          include: [...SLOW, ...BOTH_TIERS],
          env: { COSTSYNC_SLOW_TIER: '1' },
          globalSetup: GLOBAL_SETUP,
        },
      },
    ],
  },
});
