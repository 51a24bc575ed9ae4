import { expect, it } from 'vitest';
import { pushModelReport, runPushModel } from '../support/push-model.js';

/**
 * `costsync push` as users combine it (test/support/push-model.ts): here, the short sequences that fit in about 3 s
 * (as the sync model's), with no process kills; `npm run test:slow` runs them for a minute, with kills. `COSTSYNC_PUSH_MODEL_SEED` and
 * `COSTSYNC_PUSH_MODEL_PATH` (printed) replay a failure.
 */
// A fixed seed by default, so CI is the same every time; COSTSYNC_PUSH_MODEL_SEED=random explores.
const seed = process.env.COSTSYNC_PUSH_MODEL_SEED === 'random' ? undefined : Number(process.env.COSTSYNC_PUSH_MODEL_SEED ?? 7);

it('random exports, edits, formats, ingest modes, lost answers and fresh ledgers: no row doubled, every row accounted for', async () => {
  const details = await runPushModel({
    seed,
    path: process.env.COSTSYNC_PUSH_MODEL_PATH,
    numRuns: 100,
    maxCommands: 8,
    timeLimitMs: Number(process.env.COSTSYNC_PUSH_MODEL_SECONDS ?? 3) * 1000,
    kills: false,
  });
  console.info(pushModelReport(details, 'test/integration/push-model.test.ts'));
  expect(details.failed, pushModelReport(details, 'test/integration/push-model.test.ts')).toBe(false);
  expect(details.sequences).toBeGreaterThan(0);
}, 240_000);
