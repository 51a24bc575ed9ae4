import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/runner.js';
import type { StatusReport } from '../../src/commands/status.js';
import { FAST_CLIENT, memoryLogger, queryDb, run, SPAN, testSyncConfig, withEmulator, withTempDir } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };

describe('two state directories on one --db', () => {
  it('a working copy never publishes over a newer file: it adopts it, with its state, and refetches only what it alone held', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const a = testSyncConfig(emulator.url, dir, { startDate: '2025-06-20' });
        const b = { ...a, stateDir: join(dir, 'b'), since: '2025-06-01' };
        const sync = async (c: typeof a) => {
          const logger = memoryLogger();
          expect((await runSync({ config: c, logger, clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
          return logger.lines.join('\n');
        };
        await sync(a);
        await sync(b);
        const dates = async () =>
          queryDb<{ lo: string; n: number; runs: number }>(
            a.db,
            'SELECT min(usage_date)::VARCHAR AS lo, count(*)::INT AS n, (SELECT count(DISTINCT run_id)::INT FROM sync_runs) AS runs FROM line_items',
          );
        expect(await dates()).toEqual([{ lo: '2025-06-01', n: 30 * 20, runs: 2 }]);
        const before = emulator.requestLog.count({ route: 'line-items' });
        const log = await sync(a);
        expect(log).toMatch(
          /changed since this working copy last matched it \(a run with another --state-dir published it, or it was changed by hand\)/,
        );
        // The backfilled days and the other directory's run are still there.
        expect(await dates()).toEqual([{ lo: '2025-06-01', n: 30 * 20, runs: 3 }]);
        // A nightly's requests: the lookback, not the backfill again.
        const lineItemRequests = emulator.requestLog.count({ route: 'line-items' }) - before;
        expect(lineItemRequests).toBeLessThanOrEqual(2);
        // Nothing published since: the same directory goes on quietly; the other adopts this run's file in turn.
        expect(await sync(a)).not.toMatch(/changed since this working copy last matched it/);
        expect(await sync(b)).toMatch(/changed since this working copy last matched it/);
        expect(await dates()).toEqual([{ lo: '2025-06-01', n: 30 * 20, runs: 5 }]);
      });
    });
  });
});

describe('status reads the state as sync takes it', () => {
  it("an empty state directory shows the warehouse's carried state; a shared one shows only this --db's sources and names the others", async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5, clock }, async (emulator) => {
      await withTempDir(async (dir) => {
        const a = testSyncConfig(emulator.url, dir, { startDate: '2025-06-20' });
        const b = { ...a, db: join(dir, 'other.duckdb'), startDate: '2025-06-25' };
        for (const config of [a, b])
          expect((await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT })).outcome).toBe('success');
        const status = async (stateDir: string) => {
          const text = await run(['status', '--db', a.db, '--state-dir', stateDir]);
          const json = await run(['status', '--db', a.db, '--state-dir', stateDir, '--format', 'json']);
          expect(text.code, text.stderr).toBe(0);
          return { text: text.stdout, json: JSON.parse(json.stdout) as StatusReport };
        };
        const shared = await status(a.stateDir);
        // One source block, this warehouse's (from 2025-06-20), never the other's (from 2025-06-25).
        expect(shared.text.match(/^Source /gm)).toHaveLength(1);
        expect(shared.json.sources.map((s) => [s.name, s.stateFrom, s.streams[0]!.watermark])).toEqual([
          ['default', 'file', '2025-06-20..2025-06-30'],
        ]);
        expect(shared.text).toContain(', which agrees with the warehouse.');
        expect(shared.json.otherStateFiles).toHaveLength(1);
        expect(shared.text).toContain('also holds the state of 1 file(s) of other warehouses, not shown');
        // This warehouse's source first (`status | head -1`), the others' note after it.
        expect(shared.text.split('\n')[0]).toMatch(/^Source default: /);
        // An empty state directory (a clean container): the warehouse's state, said so, not "no sync state".
        const empty = join(dir, 'empty');
        mkdirSync(empty);
        const clean = await status(empty);
        expect(clean.text).not.toContain('No sync state');
        expect(clean.json.sources.map((s) => [s.name, s.stateFrom, s.streams.map((st) => st.watermark)])).toEqual([
          ['default', 'warehouse', ['2025-06-20..2025-06-30', '2025-06-20..2025-06-30', expect.any(String)]],
        ]);
        expect(clean.text).toContain(`State from the warehouse (no state file of this warehouse in ${empty}; the next sync goes on from the warehouse's).`);
      });
    });
  });
});
