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
    expect(details.failed, modelReport(details, 'test/sync/model.slow.test.ts', 16)).toBe(false);
    // What ran, not a count: minutes of sequences reach at least a run, a kill, a stop, a lake, verify --api and the readers
    // (the fast tier's fixed seeds reach every kind, verify --api's exit 1 among them).
    expect(
      ['sync', 'sync killed', 'sync stopped', 'lake ice', 'lake s3', 'verify --api exit 0', 'readers'].filter(
        (k) => !details.reached.has(k),
      ),
    ).toEqual([]);
  },
  (Number(process.env.COSTSYNC_MODEL_SECONDS ?? 240) + 600) * 1000,
);
