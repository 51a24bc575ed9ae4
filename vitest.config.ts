import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/support/sequencer.js';

/**
 * Three projects. `unit`: the pure tests, with no global setup (`npm run test:unit`, seconds, nothing to
 * install). `fast`: the commands in-process and through one spawn each, every kill test that needs a real
 * process, against one radosgw for the run; `npm test` runs it with `unit`. `slow` (`npm run test:slow`):
 * chaos, long kill loops and soaks (CI runs every tier). The global setup installs or names the system
 * programs the last two need, then starts the gateway.
 */
const UNIT = ['test/unit/**/*.test.ts'];
const SLOW = ['test/chaos/**/*.test.ts', 'test/slow/**/*.test.ts'];
/** The kill loops the fast tier runs with 3 kill points (but those SLOW_ONLY lists); the slow tier runs them again with 12. */
const KILL_LOOPS = ['test/integration/sync-kill.test.ts', 'test/integration/sync-kill-outputs.test.ts'];
const GLOBAL_SETUP = ['test/support/global-setup.ts'];
/**
 * Files of test/integration/ the slow tier runs and the fast tier not at all: the output kill loops (12 kill
 * points), and two whose cases the slow tier's own files cover again at more points (test/slow/moving-sources,
 * test/slow/iceberg-catalog-kill), kept out of `npm test` for its 3 minutes.
 */
const SLOW_ONLY = [
  'test/integration/sync-kill-outputs.test.ts',
  'test/integration/moving-sources.test.ts',
  'test/integration/iceberg-catalog-kill.test.ts',
];

export default defineConfig({
  test: {
    // A guard against a hang, never the thing measured: a spawned run's test takes 2-30 s alone, and up to
    // 4 times that with three files at once on a loaded 2-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
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
          include: [...SLOW, ...KILL_LOOPS, ...SLOW_ONLY],
          env: { COSTSYNC_SLOW_TIER: '1' },
          globalSetup: GLOBAL_SETUP,
        },
      },
    ],
  },
});
