import { expect, it } from 'vitest';
import { pushModelReport, reached, runPushModel } from '../support/push-model.js';

/** The push model for longer, with processes SIGKILLed at the Nth request (COSTSYNC_PUSH_MODEL_SECONDS, default 60). */
// A fixed seed by default, so CI is the same every time; COSTSYNC_PUSH_MODEL_SEED=random explores.
const seed = process.env.COSTSYNC_PUSH_MODEL_SEED === 'random' ? undefined : Number(process.env.COSTSYNC_PUSH_MODEL_SEED ?? 5150);
const seconds = Number(process.env.COSTSYNC_PUSH_MODEL_SECONDS ?? 60);

it(
  'long push sequences with kills keep every invariant',
  async () => {
    const details = await runPushModel({
      seed,
      path: process.env.COSTSYNC_PUSH_MODEL_PATH,
      numRuns: 10_000,
      maxCommands: 14,
      timeLimitMs: seconds * 1000,
      kills: true,
    });
    console.info(pushModelReport(details, 'test/push/push-model.slow.test.ts'));
    expect(details.failed, pushModelReport(details, 'test/push/push-model.slow.test.ts')).toBe(false);
    console.info(`reached: ${[...reached].sort().join('; ')}`);
    // Over a minute the sequences kill pushes, and reach rows sharing a key in every way a user's export has them.
    if (process.env.COSTSYNC_PUSH_MODEL_PATH === undefined)
      expect(
        ['kill', 'identical rows', 'rows told apart by tags only', 'rows sharing a key, other amounts'].filter((k) => !reached.has(k)),
      ).toEqual([]);
  },
  (seconds + 600) * 1000,
);
