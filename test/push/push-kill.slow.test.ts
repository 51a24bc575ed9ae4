// A push SIGKILLed and run again, in the slow tier beside the chaos test's push kills and the push model's
// (a `.slow.test.ts`); push.test.ts keeps the SIGTERM that cuts a held answer.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { CLI, killRunner, pushArgs, pushSummary, queryDb, withEmulator, withTempDir, SPAN } from '../support/helpers.js';
import { exportCsv, exportJsonl, providerExport } from '../support/provider-export.js';

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

it("a provider's export (no ids, repeated charges, rows sharing a key, tags, four date spellings) pushed with kills leaves exactly its valid rows; again, or reordered as JSON Lines, adds nothing", async () => {
  const rows = providerExport({ seed: 78, rows: 2600, repeatEvery: 65, shared: 0, invalid: 5 });
  const valid = rows.filter((r) => !r.invalid);
  expect(valid).toHaveLength(2640);
  const runner = killRunner(env, (e) => e.route === 'ingest-focus');
  await withEmulator({ ...SPAN, rowsPerDay: 1, ingestDuplicateRows: 'skip', onRequest: runner.onRequest }, async (emulator) => {
    await withTempDir(async (dir) => {
      const csv = join(dir, 'export.csv');
      writeFileSync(csv, exportCsv(rows));
      const args = (file: string) => [
        CLI,
        ...pushArgs(emulator.url, dir, ['--connection', 'demo-connection', '--batch-size', '100', '--skip-invalid', file]),
      ];
      for (const at of [2, 5, 1]) expect((await runner.run(args(csv), { atRequest: at })).signal).toBe('SIGKILL');
      const last = await runner.finish(args(csv));
      expect(last.code, last.stderr).toBe(ExitCode.OK);
      // The 40 repeats make 40 groups of two; rows of one key drawn apart add more.
      const shared = Number(pushSummary(last.stderr).sharedKey);
      console.info(`${shared} valid row(s) share a key with another row`);
      expect(shared).toBeGreaterThan(80);
      // Every valid row is one charge on the server, with its date, service, category, amount and tag.
      const canonical = (c: string) =>
        ({ usage: 'Usage', fee: 'Usage', credit: 'Credit', discount: 'Credit', refund: 'Credit', tax: 'Tax' })[c.toLowerCase()];
      const want = valid
        .map(
          (r) =>
            `${r.ChargePeriodStart.slice(0, 10)}|${r.ServiceName}|${canonical(r.ChargeCategory)}|${Number(r.BilledCost).toFixed(6)}|${r.Tags?.user_email ?? ''}`,
        )
        .sort();
      const held = () =>
        emulator.dataset
          .ingestedRecords()
          .map((r) => `${r.usage_date}|${r.provider_service}|${String(r.charge_category)}|${r.net_amount_usd.toFixed(6)}|${r.user_email}`)
          .sort();
      expect(held()).toEqual(want);
      const again = await runner.finish(args(csv));
      expect(pushSummary(again.stderr)).toMatchObject({ sent: 0, alreadyDelivered: 2640, invalid: 5 });
      const jsonl = join(dir, 'export.jsonl');
      writeFileSync(jsonl, exportJsonl([...rows].reverse()));
      const reordered = await runner.finish(args(jsonl));
      expect(pushSummary(reordered.stderr)).toMatchObject({ sent: 0, alreadyDelivered: 2640, invalid: 5 });
      expect(held()).toEqual(want);
    });
  });
}, 300_000);
