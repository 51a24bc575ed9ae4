/** What the tests of a source moved between runners share: two in-process runners on one lake, and the checks. */
import { join } from 'node:path';
import { expect } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import type { SyncConfig } from '../../src/config.js';
import type { EmulatorInput } from '../../src/emulator/server.js';
import type { SourceConfig } from '../../src/sources.js';
import { runSync, type RunSummary } from '../../src/sync/runner.js';
import { FAST_CLIENT, SPAN, memoryLogger, testSyncConfig } from './helpers.js';

export const clock = { now: () => Date.parse('2025-07-01T06:00:00Z'), sleep: async () => undefined };
export const key = (k: string, workspace: string) => ({ key: k, scopes: [...SCOPES], plan: 'business' as const, workspace });
export const emulatorInput: EmulatorInput = {
  ...SPAN,
  rowsPerDay: 5,
  anomaliesPerDay: 2,
  clock,
  keys: { keys: [key('k-s', 's'), key('k-t', 't')], connections: [] },
  restatement: { days: 5, changeRate: 0.5, deleteRate: 0.2 },
};

export type Diff = Record<string, { rows: number; missing: number; extra: number }>;
export function expectSame(diff: Diff) {
  for (const [table, d] of Object.entries(diff))
    expect({ table, missing: d.missing, extra: d.extra }).toEqual({ table, missing: 0, extra: 0 });
  expect(diff.line_items!.rows).toBeGreaterThan(0);
}

/** Two runners (own warehouse and state dir each) sharing one lake. */
export function runners(url: string, dir: string, format: 'parquet' | 'iceberg' = 'parquet') {
  const source = (name: string): SourceConfig => ({ name, baseUrl: url, apiKey: `k-${name}`, rateLimit: 100_000 });
  const lake = join(dir, 'lake');
  const runner = (name: string) => {
    const base = testSyncConfig(url, join(dir, name), { format, out: lake, windowDays: 30 });
    return {
      db: base.db,
      /** A run of `names` that ends with `outcome` (with `signal`: one stopped as SIGTERM stops it). */
      async sync(names: string[], over: Partial<SyncConfig> = {}, how: { outcome?: RunSummary['outcome']; signal?: AbortSignal } = {}) {
        const logger = memoryLogger();
        const summary = await runSync({
          config: { ...base, sources: names.map(source), ...over },
          logger,
          clock,
          clientOptions: FAST_CLIENT,
          signal: how.signal,
        });
        expect(summary.outcome, logger.lines.join('\n')).toBe(how.outcome ?? 'success');
        return { summary, lines: logger.lines };
      },
    };
  };
  return { lake, a: runner('a'), b: runner('b') };
}

export const requestsOf = (summary: RunSummary, source: string) => {
  const part = summary.sources.find((s) => s.source === source)!;
  return Object.fromEntries(Object.entries(part.streams).map(([stream, s]) => [stream, s.requests]));
};
