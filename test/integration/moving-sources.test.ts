import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import type { EmulatorInput } from '../../src/emulator/server.js';
import { stateObjectKey } from '../../src/outputs/lake-seed.js';
import type { SourceConfig } from '../../src/sources.js';
import { runSync, type RunSummary } from '../../src/sync/runner.js';
import type { SyncConfig } from '../../src/config.js';
import { icebergDifferences } from '../iceberg.js';
import { FAST_CLIENT, SPAN, lakeDifferences, memoryLogger, queryDb, testSyncConfig, withEmulator, withTempDir } from '../helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
const key = (k: string, workspace: string) => ({ key: k, scopes: [...SCOPES], plan: 'business' as const, workspace });
const emulatorInput: EmulatorInput = {
  ...SPAN,
  rowsPerDay: 5,
  anomaliesPerDay: 2,
  clock,
  keys: { keys: [key('k-s', 's'), key('k-t', 't')], connections: [] },
  restatement: { days: 5, changeRate: 0.5, deleteRate: 0.2 },
};

type Diff = Record<string, { rows: number; missing: number; extra: number }>;
function expectSame(diff: Diff) {
  for (const [table, d] of Object.entries(diff)) expect({ table, ...d }).toEqual({ table, rows: d.rows, missing: 0, extra: 0 });
  expect(diff.line_items!.rows).toBeGreaterThan(0);
}

/** Two runners (own warehouse and state dir each) sharing one Parquet lake. */
function runners(url: string, dir: string, format: 'parquet' | 'iceberg' = 'parquet') {
  const source = (name: string): SourceConfig => ({ name, baseUrl: url, apiKey: `k-${name}`, rateLimit: 100_000 });
  const lake = join(dir, 'lake');
  const runner = (name: string) => {
    const base = testSyncConfig(url, join(dir, name), { format, out: lake, windowDays: 30 });
    return {
      db: base.db,
      async sync(names: string[], over: Partial<SyncConfig> = {}) {
        const logger = memoryLogger();
        const summary = await runSync({
          config: { ...base, sources: names.map(source), ...over },
          logger,
          clock,
          clientOptions: FAST_CLIENT,
        });
        expect(summary.outcome, logger.lines.join('\n')).toBe('success');
        return { summary, lines: logger.lines };
      },
    };
  };
  return { lake, a: runner('a'), b: runner('b') };
}

const requestsOf = (summary: RunSummary, source: string) => {
  const part = summary.sources.find((s) => s.source === source)!;
  return Object.fromEntries(Object.entries(part.streams).map(([stream, s]) => [stream, s.requests]));
};

/** Every run id the lake's run table holds for `source`. */
async function lakeRuns(db: string, lake: string, source: string): Promise<string[]> {
  const rows = await queryDb<{ run_id: string }>(
    db,
    `SELECT run_id FROM read_parquet('${lake}/sync_runs/source=${source}/data.parquet') ORDER BY run_id`,
  );
  return rows.map((r) => r.run_id);
}

describe('a source moved to another runner sharing the Parquet lake', () => {
  it("resumes where it was: the next run makes a nightly's requests, the lake's rows are unchanged, and the new warehouse holds its history", async () => {
    await withEmulator(emulatorInput, async (emulator) => {
      await withTempDir(async (dir) => {
        const { lake, a, b } = runners(emulator.url, dir);
        await a.sync(['s', 't']);
        const nightly = await a.sync(['s', 't']);
        expect(existsSync(join(lake, stateObjectKey('s')))).toBe(true);
        const runsBefore = await lakeRuns(a.db, lake, 's');

        // B takes s over; A's warehouse still holds s as the lake had it, value for value.
        const moved = await b.sync(['s']);
        expect(requestsOf(moved.summary, 's')).toEqual(requestsOf(nightly.summary, 's'));
        expect(moved.lines.join('\n')).toContain('going on from the state the lake carries');
        expectSame(await lakeDifferences(a.db, lake, ['s']));
        expectSame(await lakeDifferences(b.db, lake, ['s']));
        // The run history follows too: A's runs of s, and B's.
        const runsAfter = await lakeRuns(b.db, lake, 's');
        expect(runsAfter).toEqual(expect.arrayContaining(runsBefore));
        expect(runsAfter.length).toBe(runsBefore.length + 1);

        // Each runner goes on with its own: the lake is the union of both warehouses.
        await a.sync(['t']);
        const again = await b.sync(['s']);
        expect(requestsOf(again.summary, 's')).toEqual(requestsOf(nightly.summary, 's'));
        expectSame(await lakeDifferences(a.db, lake, ['t']));
        expectSame(await lakeDifferences(b.db, lake, ['s']));
        expect(readdirSync(join(lake, 'line_items')).sort()).toEqual(['source=s', 'source=t']);

        // Late data B syncs, then s moves back: A's rows of s are older than the lake's, and are replaced by them.
        emulator.restate();
        await b.sync(['s'], { lookbackDays: 5 });
        const runsOfB = await lakeRuns(b.db, lake, 's');
        // Lookback 0: the return fetches nothing restated, so only the lake can bring A up to date.
        const back = await a.sync(['s', 't'], { lookbackDays: 0 });
        expect(back.lines.join('\n')).toContain("s: its rows here are older than the lake's");
        expectSame(await lakeDifferences(b.db, lake, ['s']));
        expectSame(await lakeDifferences(a.db, lake, ['s', 't']));
        expect(await lakeRuns(a.db, lake, 's')).toEqual(expect.arrayContaining(runsOfB));
      });
    });
  }, 30_000);

  it('a state object listing a partition the lake lacks: the rows that are there are read back, and a backfill with a warning restores the rest', async () => {
    await withEmulator(emulatorInput, async ({ url }) => {
      await withTempDir(async (dir) => {
        const { lake, a, b } = runners(url, dir);
        const backfill = await a.sync(['s']);
        const object = JSON.parse(readFileSync(join(lake, stateObjectKey('s')), 'utf8')) as { tables: Record<string, string[]> };
        const lost = object.tables.line_items![3]!;
        rmSync(join(lake, `line_items/source=s/date=${lost}/data.parquet`));

        const moved = await b.sync(['s']);
        expect(requestsOf(moved.summary, 's')).toEqual(requestsOf(backfill.summary, 's'));
        const warnings = moved.lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'warn');
        expect(warnings.map((w) => w.msg).join('\n')).toContain(`lacks 1 partition(s) its state lists (line_items/${lost})`);
        // Nothing lost: the lake and B's warehouse again hold every row A had.
        expectSame(await lakeDifferences(a.db, lake, ['s']));
        expectSame(await lakeDifferences(b.db, lake, ['s']));
      });
    });
  }, 30_000);

  it('with Iceberg directory tables: the same, from the data files the source has live in each table', async () => {
    await withEmulator(emulatorInput, async ({ url }) => {
      await withTempDir(async (dir) => {
        const { lake, a, b } = runners(url, dir, 'iceberg');
        await a.sync(['s', 't']);
        const nightly = await a.sync(['s', 't']);
        const moved = await b.sync(['s']);
        expect(requestsOf(moved.summary, 's')).toEqual(requestsOf(nightly.summary, 's'));
        expectSame(await icebergDifferences(a.db, pathToFileURL(lake).href, { sources: ['s'] }));
        expectSame(await icebergDifferences(b.db, pathToFileURL(lake).href, { sources: ['s'] }));
        await a.sync(['t']);
        await b.sync(['s']);
        expectSame(await icebergDifferences(a.db, pathToFileURL(lake).href, { sources: ['t'] }));
        expectSame(await icebergDifferences(b.db, pathToFileURL(lake).href, { sources: ['s'] }));
      });
    });
  }, 30_000);
});
