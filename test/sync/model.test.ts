import { expect, it } from 'vitest';
import { modelReport, runModel } from '../support/model.js';

/**
 * The command surface as users combine it (test/support/model.ts): here, the short sequences that fit in about 3 s;
 * `npm run test:slow` runs longer ones for longer. `COSTSYNC_MODEL_SEED`, `COSTSYNC_MODEL_PATH` and
 * `COSTSYNC_MODEL_REPLAY` (all printed) replay a failure exactly.
 */
// A fixed seed by default, so CI is the same every time; COSTSYNC_MODEL_SEED=random explores.
const seed = process.env.COSTSYNC_MODEL_SEED === 'random' ? undefined : Number(process.env.COSTSYNC_MODEL_SEED ?? 2);
const path = process.env.COSTSYNC_MODEL_PATH;

it('random sequences of syncs, kills, lakes, state directories, new and restated days keep every invariant', async () => {
  const details = await runModel({
    seed,
    path,
    replay: process.env.COSTSYNC_MODEL_REPLAY,
    numRuns: 200,
    maxCommands: 6,
    short: true,
    timeLimitMs: Number(process.env.COSTSYNC_MODEL_SECONDS ?? 3) * 1000,
  });
  console.info(modelReport(details, 'test/sync/model.test.ts'));
  expect(details.failed, modelReport(details, 'test/sync/model.test.ts')).toBe(false);
  expect(details.sequences).toBeGreaterThan(0);
}, 240_000);
