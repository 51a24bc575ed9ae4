import { describe, expect, it } from 'vitest';
import { NOTHING_LEFT, leftUndoneText, phasePlan, phasePlanLines } from '../../src/sync/phase-plan.js';

const base = { format: 'duckdb' as const, out: './costs-parquet', catalog: null, db: 'costs.duckdb', notify: [], metricsFile: undefined };
const left = { partitions: 12, runTables: 2, icebergInFlight: 1, publishDue: true, notifications: 3 };

describe('the phases around the sources, as the dry run and the start ask them (no I/O)', () => {
  it('without a lake: no seed, no lake backlog finished (the run that writes the lake does), the published file last', () => {
    const plan = phasePlan(base, [{ name: 'w1' }], new Set(), left);
    expect(plan).toEqual({
      seed: [],
      resume: { partitions: 0, runTables: 0, icebergInFlight: 0, publishDue: true, notifications: 3 },
      finish: ['the published warehouse costs.duckdb'],
    });
    expect(leftUndoneText(plan.resume, 'costs.duckdb')).toBe('a publish of costs.duckdb, 3 notification(s)');
  });

  it('with a lake: the sources the warehouse carries nothing for are looked for in it first; the lake, the file, webhooks and metrics after', () => {
    const plan = phasePlan(
      { ...base, format: 'parquet', notify: ['https://hooks.example/a'], metricsFile: 'm.prom' },
      [{ name: 'w1' }, { name: 'w2', notify: ['https://hooks.example/b'] }],
      new Set(['w1']),
      left,
    );
    expect(plan.seed).toEqual(['w2']);
    expect(plan.finish).toEqual([
      'the lake at ./costs-parquet',
      'the published warehouse costs.duckdb',
      'notifications to 2 webhook(s)',
      'the metrics file m.prom',
    ]);
    expect(phasePlanLines(plan, 'costs.duckdb', 'the lake at ./costs-parquet')).toEqual({
      before: [
        "First, what an earlier run left undone: 12 lake partition(s), the lake's run tables of 2 source(s), 1 Iceberg commit(s) or expiry(ies) in flight, a publish of costs.duckdb, 3 notification(s).",
        'Sources this warehouse holds no state for (w2) are read back from the lake at ./costs-parquet first, if it holds their rows (moved from another runner).',
      ],
      after: [
        'Then written: the lake at ./costs-parquet, the published warehouse costs.duckdb, notifications to 2 webhook(s), the metrics file m.prom.',
      ],
    });
  });

  it("a source's unfinished fetch is said first, with what the outbox holds", () => {
    const plan = phasePlan(base, [{ name: 'w1' }], new Set(['w1']), { ...NOTHING_LEFT, publishDue: true });
    expect(phasePlanLines(plan, 'costs.duckdb', '', ['line_items', 'rollups']).before).toEqual([
      'First, what an earlier run left undone: the unfinished fetch of line_items, rollups (resumed below); a publish of costs.duckdb.',
    ]);
  });

  it('nothing left undone is said so', () => {
    expect(leftUndoneText(NOTHING_LEFT, 'costs.duckdb')).toBeNull();
    expect(phasePlanLines(phasePlan(base, [], new Set(), NOTHING_LEFT), 'costs.duckdb', '').before).toEqual([
      'First, what an earlier run left undone: nothing.',
    ]);
  });
});
