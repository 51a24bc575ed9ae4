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
  'test/sync/model.slow.test.ts',
  'test/lake/iceberg-catalog-kill-more.slow.test.ts',
  'test/outputs/lost-answers-runners.slow.test.ts',
  'test/lake/moving-sources-more.slow.test.ts',
  'test/lake/iceberg-kill.slow.test.ts',
  'test/lake/lake-bucket-kill.slow.test.ts',
  'test/push/push-model.slow.test.ts',
  'test/lake/stop-lakes.slow.test.ts',
  'test/lake/moving-sources.slow.test.ts',
  'test/lake/lake-memory.slow.test.ts',
  'test/outputs/sync-kill-outputs.slow.test.ts',
  'test/lake/lake-catch-up.slow.test.ts',
  'test/sync/recheck.slow.test.ts',
  'test/lake/iceberg-other-writers.slow.test.ts',
  'test/lake/lake-bucket.slow.test.ts',
  'test/lake/iceberg-catalog.slow.test.ts',
  'test/state/lease.slow.test.ts',
  'test/state/clean-container.slow.test.ts',
  'test/report/report-year.slow.test.ts',
  // The fast tier: every file of 5 s and more (on a clean clone vitest would order the rest by size, and a
  // short file of long waits, as stop-hold is, ran last).
  'test/docs/bench-smoke.test.ts',
  'test/lake/iceberg.test.ts',
  'test/readers/query-verify.test.ts',
  'test/sync/first-day.test.ts',
  'test/outputs/notify.test.ts',
  'test/push/push.test.ts',
  'test/cli/cli-sync.test.ts',
  'test/report/report.test.ts',
  'test/sync/sync-incremental.test.ts',
  'test/readers/views.test.ts',
  'test/sync/stop-hold.test.ts',
  'test/lake/iceberg-catalog-storage.test.ts',
  'test/readers/focus.test.ts',
  'test/push/push-checks.test.ts',
  'test/cli/cli-commands.test.ts',
  'test/state/upgrade.test.ts',
  'test/push/push-model.test.ts',
  'test/state/sync-lock.test.ts',
  'test/cli/closed-pipe.test.ts',
  'test/sync/sync-kill.test.ts',
  'test/outputs/publish-readers.test.ts',
  'test/cli/cli-bad-input.test.ts',
  'test/sync/sync-resume.test.ts',
  'test/sync/sync-anomalies.test.ts',
  'test/sync/sync-hostile.test.ts',
  'test/outputs/run-tables-agree.test.ts',
  'test/state/state-dirs.test.ts',
  'test/cli/bin.test.ts',
  'test/cli/demo.test.ts',
  'test/sync/group-commit.test.ts',
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
