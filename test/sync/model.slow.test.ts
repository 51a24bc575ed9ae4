import { expect, it } from 'vitest';
import { modelReport, runModel } from '../support/model.js';

/** The model-based test for longer: more and longer sequences (COSTSYNC_MODEL_SECONDS, default 240). */
// A fixed seed by default, so CI is the same every time; COSTSYNC_MODEL_SEED=random explores.
const seed = process.env.COSTSYNC_MODEL_SEED === 'random' ? undefined : Number(process.env.COSTSYNC_MODEL_SEED ?? 1081567426);
const seconds = Number(process.env.COSTSYNC_MODEL_SECONDS ?? 240);

it(
  'long random sequences keep every invariant',
  async () => {
    const details = await runModel({
      seed,
      path: process.env.COSTSYNC_MODEL_PATH,
      replay: process.env.COSTSYNC_MODEL_REPLAY,
      numRuns: 10_000,
      maxCommands: 16,
      timeLimitMs: seconds * 1000,
    });
    console.info(modelReport(details, 'test/sync/model.slow.test.ts'));
    expect(details.failed, modelReport(details, 'test/sync/model.slow.test.ts')).toBe(false);
    expect(details.sequences).toBeGreaterThan(0);
  },
  (Number(process.env.COSTSYNC_MODEL_SECONDS ?? 240) + 600) * 1000,
);
