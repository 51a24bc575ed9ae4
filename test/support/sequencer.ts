import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The test files that take longest, longest first, as a clean clone measured them (the slow tier's of about 20 s
 * and more, the fast tier's of 5 s and more; docs/benchmarks.md, "The test suite"). Vitest starts its longest
 * files first only once its cache holds their durations; a clean clone has none, so it starts the largest files
 * first, and the benchmark smoke (a minute, in a small file) ran last, alone on the cores: a minute's tail.
 */
export const LONGEST_FIRST: readonly string[] = [
  // The slow tier.
  'test/slow/model.test.ts',
  'test/slow/iceberg-catalog-kill.test.ts',
  'test/slow/lost-answers-runners.test.ts',
  'test/slow/moving-sources.test.ts',
  'test/slow/iceberg-kill.test.ts',
  'test/slow/lake-bucket-kill.test.ts',
  'test/slow/push-model.test.ts',
  'test/slow/stop-lakes.test.ts',
  'test/integration/moving-sources.test.ts',
  'test/slow/lake-memory.test.ts',
  'test/integration/sync-kill-outputs.test.ts',
  'test/integration/lake-catch-up.test.ts',
  'test/integration/recheck.test.ts',
  'test/slow/iceberg-other-writers.test.ts',
  'test/integration/lake-bucket.test.ts',
  'test/integration/iceberg-catalog.test.ts',
  'test/integration/lease.test.ts',
  'test/integration/clean-container.test.ts',
  'test/slow/report-year.test.ts',
  // The fast tier: every file of 5 s and more (on a clean clone vitest would order the rest by size, and a
  // short file of long waits, as stop-hold is, ran last).
  'test/integration/bench-smoke.test.ts',
  'test/integration/iceberg.test.ts',
  'test/integration/query-verify.test.ts',
  'test/integration/first-day.test.ts',
  'test/integration/notify.test.ts',
  'test/integration/push.test.ts',
  'test/integration/cli-sync.test.ts',
  'test/integration/report.test.ts',
  'test/integration/sync-incremental.test.ts',
  'test/integration/views.test.ts',
  'test/integration/stop-hold.test.ts',
  'test/integration/iceberg-catalog-storage.test.ts',
  'test/integration/focus.test.ts',
  'test/integration/push-checks.test.ts',
  'test/integration/cli-commands.test.ts',
  'test/integration/upgrade.test.ts',
  'test/integration/push-model.test.ts',
  'test/integration/sync-lock.test.ts',
  'test/integration/closed-pipe.test.ts',
  'test/integration/sync-kill.test.ts',
  'test/integration/publish-readers.test.ts',
  'test/integration/cli-bad-input.test.ts',
  'test/integration/sync-resume.test.ts',
  'test/integration/sync-anomalies.test.ts',
  'test/integration/sync-hostile.test.ts',
  'test/integration/run-tables-agree.test.ts',
  'test/integration/state-dirs.test.ts',
  'test/integration/bin.test.ts',
  'test/integration/demo.test.ts',
  'test/integration/group-commit.test.ts',
];

/** Vitest's order (its cache's durations, else file sizes), with the files of `LONGEST_FIRST` first in each project. */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = LONGEST_FIRST.indexOf(relative(spec.project.config.root, spec.moduleId));
      return at < 0 ? LONGEST_FIRST.length : at;
    };
    const order = new Map(base.map((spec, i) => [spec, i]));
    // Projects keep vitest's order (they run one after another); within one, the listed files lead.
    return [...base].sort((a, b) =>
      a.project.name !== b.project.name ? order.get(a)! - order.get(b)! : rank(a) - rank(b) || order.get(a)! - order.get(b)!,
    );
  }
}
