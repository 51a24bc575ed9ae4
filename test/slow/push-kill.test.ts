// A push SIGKILLed and run again, in the slow tier beside the chaos test's push kills and the push model's
// (vitest.config.ts, SLOW_ONLY's reasons); push.test.ts keeps the SIGTERM that cuts a held answer.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { CLI, killRunner, pushArgs, queryDb, withEmulator, withTempDir, SPAN } from '../support/helpers.js';

const SAMPLE = fileURLToPath(new URL('../fixtures/focus_sample_1.0.csv', import.meta.url));
const env = { COSTSYNC_API_KEY: 'demo-key' };

it('SIGKILLed mid-push and re-run, ends with every row stored exactly once and the ledger complete', async () => {
  const runner = killRunner(env, (e) => e.route === 'ingest-focus');
  await withEmulator(
    {
      ...SPAN,
      rowsPerDay: 5,
      onRequest: runner.onRequest,
    },
    async (emulator) => {
      await withTempDir(async (dir) => {
        const args = [CLI, ...pushArgs(emulator.url, dir, ['--connection', 'demo-connection', '--batch-size', '50', '--quiet', SAMPLE])];
        const run = (at: number) => runner.run(args, { atRequest: at });
        // Two fixed points here; the chaos test kills at six random ones, and the push model between its steps.
        for (const at of [3, 1]) expect((await run(at)).signal).toBe('SIGKILL');
        const last = await runner.finish(args);
        expect(last.code).toBe(ExitCode.OK);
        expect(emulator.dataset.ingestedRecords()).toHaveLength(1000);
        const rows = await queryDb<{ first_row: number; last_row: number }>(
          join(dir, 'p.duckdb'),
          'SELECT first_row, last_row FROM ingest_batches',
        );
        // Answered batches cover rows 1..1000 with no gap; a batch re-sent after a kill is recorded again with nothing created.
        const covered = new Set<number>();
        for (const r of rows) for (let i = r.first_row; i <= r.last_row; i++) covered.add(i);
        expect(covered.size).toBe(1000);
      });
    },
  );
});
