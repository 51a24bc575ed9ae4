import { defineConfig } from 'vitest/config';

/**
 * Two tiers. `npm test` runs the fast one: unit tests, the commands in-process and through one spawn
 * each, every kill test that needs a real process, against one radosgw for the run (global setup).
 * `npm run test:slow` runs the rest: chaos, long kill loops and soaks (CI runs both).
 */
const SLOW = ['test/chaos/**/*.test.ts', 'test/slow/**/*.test.ts'];
/** The kill loops the fast tier runs with 3 kill points; the slow tier runs them again with 12. */
const KILL_LOOPS = ['test/integration/sync-kill.test.ts', 'test/integration/sync-kill-outputs.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Three files at once on these 2-core machines: much of a test is waiting on a spawned process, a
    // socket or a bucket, so a third worker shortens the run (docs/benchmarks.md, "The test suite").
    maxWorkers: 3,
    globalSetup: ['test/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'fast', include: ['test/**/*.test.ts'], exclude: SLOW } },
      { extends: true, test: { name: 'slow', include: [...SLOW, ...KILL_LOOPS], env: { COSTSYNC_SLOW_TIER: '1' } } },
    ],
  },
});
