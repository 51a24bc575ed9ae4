import { describe, expect, it } from 'vitest';
import { CostsyncError, FencedError } from '../../src/errors.js';
import { derivedOutputs, type OutputSteps } from '../../src/outputs/derived.js';
import { finishOutputs, settleParts, type OutputsVerdict, type SourceSummary } from '../../src/sync/runner.js';
import type { OutputTarget } from '../../src/outputs/target.js';
import type { Warehouse } from '../../src/storage/duckdb.js';
import { memoryLogger } from '../support/helpers.js';

/** Outputs with every step faked: what ran, in order; a step named in `failing` throws. */
function outputs(
  failing: Partial<Record<keyof OutputSteps, Error>> = {},
  options: { interval?: number; now?: () => number; signal?: AbortSignal; during?: Partial<Record<keyof OutputSteps, () => void>> } = {},
) {
  const calls: string[] = [];
  const fake = <K extends keyof OutputSteps>(name: K, result: unknown) =>
    (async () => {
      calls.push(name);
      options.during?.[name]?.();
      const error: Error | undefined = failing[name];
      if (error) throw error;
      return result;
    }) as unknown as OutputSteps[K];
  // The notify step records its counts in a transaction: a warehouse that only takes that.
  const warehouse = {
    transaction: async (fn: () => Promise<void>) => {
      calls.push('record notifications');
      await fn();
    },
    run: async () => undefined,
  } as unknown as Warehouse;
  const out = derivedOutputs({
    warehouse,
    runId: 'r1',
    clock: { now: options.now ?? (() => 0), sleep: async () => undefined },
    logger: memoryLogger(),
    sources: ['default'],
    lake: {
      url: 'file:///lake',
      removeLeftovers: async () => {
        calls.push('lake leftovers');
        return 0;
      },
    } as unknown as OutputTarget,
    db: { kind: 'file', path: '/db/costs.duckdb' } as never,
    publishIntervalMs: options.interval ?? 600_000,
    webhooks: [{ id: 'w1', url: 'https://hooks.example/x' }],
    notifyFormat: 'json',
    metricsFile: '/m.prom',
    secrets: [],
    signal: options.signal,
    steps: {
      fillLake: fake('fillLake', undefined),
      drainLake: fake('drainLake', 0),
      finishLake: fake('finishLake', undefined),
      finishRunTables: fake('finishRunTables', undefined),
      publish: fake('publish', null),
      drainNotifications: fake('drainNotifications', new Map()),
      writeMetrics: fake('writeMetrics', undefined),
    },
  });
  return { out, calls };
}

/** A finish's first steps when nothing fails: the lake (filled first when the run has not yet), the notifications, the publish. */
const FINISH_UP_TO_PUBLISH = ['fillLake', 'finishLake', 'drainNotifications', 'record notifications', 'publish'];

describe('the order of the derived outputs (no I/O)', () => {
  it("resume: the lake's leftovers and partitions, then the publish; after a commit: the lake, and a publish when the interval passed", async () => {
    const { out, calls } = outputs({}, { interval: 0 });
    await out.resume();
    expect(calls).toEqual(['lake leftovers', 'fillLake', 'drainLake', 'publish']);
    calls.length = 0;
    await out.afterCommit();
    expect(calls).toEqual(['drainLake', 'publish']);
  });

  it("finish: the lake's last partitions and manifests, the notifications, the publish, the lake's run tables (after the publish records itself in them), the metrics; nothing behind", async () => {
    const { out, calls } = outputs();
    const recorded: OutputsVerdict[] = [];
    expect(
      await finishOutputs(out, async (v) => {
        recorded.push(v);
      }),
    ).toEqual({ behind: null, abandoned: false });
    expect(calls).toEqual([...FINISH_UP_TO_PUBLISH, 'finishRunTables', 'writeMetrics']);
    expect(recorded).toEqual([]);
  });

  it('a lake that fell behind is recorded (with its notification) before the notifications go and the warehouse is published; the run ends with CS_ERR_OUTPUT_BEHIND', async () => {
    const { out, calls } = outputs({ finishLake: new Error('bucket refused') });
    const recorded: string[] = [];
    const { behind: error } = await finishOutputs(out, async (v) => {
      calls.push('record behind');
      recorded.push(v.behind!.code);
    });
    expect(calls).toEqual([
      'fillLake',
      'finishLake',
      'record behind',
      'drainNotifications',
      'record notifications',
      'publish',
      'writeMetrics',
    ]);
    expect(recorded).toEqual(['CS_ERR_OUTPUT_BEHIND']);
    expect(error).toMatchObject({
      code: 'CS_ERR_OUTPUT_BEHIND',
      message: expect.stringContaining('the lake at file:///lake (bucket refused)'),
    });
  });

  it("no lake partition is written, nor a lake's marks moved, before the lake is filled and caught up in this run: a fill that failed at the start is tried again first at the finish, and a failed one leaves the lake behind", async () => {
    const { out, calls } = outputs({ fillLake: new Error('bucket unreachable') });
    await out.resume();
    await out.afterCommit();
    expect(calls).toEqual(['lake leftovers', 'fillLake', 'publish']);
    calls.length = 0;
    const { behind: error } = await finishOutputs(out, async () => {
      calls.push('record behind');
    });
    expect(calls).toEqual(['fillLake', 'record behind', 'drainNotifications', 'record notifications', 'publish', 'writeMetrics']);
    expect(error).toMatchObject({ code: 'CS_ERR_OUTPUT_BEHIND' });
  });

  it('a publish that fell behind is recorded and its notification sent after it; a fenced run stops at once', async () => {
    const { out, calls } = outputs({ publish: new Error('disk full') });
    const { behind: error } = await finishOutputs(out, async () => {
      calls.push('record behind');
    });
    expect(calls).toEqual([
      ...FINISH_UP_TO_PUBLISH,
      'record behind',
      'drainNotifications',
      'record notifications',
      'finishRunTables',
      'writeMetrics',
    ]);
    expect(error?.message).toContain('the published warehouse at /db/costs.duckdb (disk full)');
    const fenced = outputs({ publish: new FencedError('CS_ERR_LEASE_LOST', 'lost') });
    await expect(finishOutputs(fenced.out, async () => undefined)).rejects.toBeInstanceOf(FencedError);
    expect(fenced.calls).not.toContain('writeMetrics');
  });

  it("a stop during the publish leaves the lake's run tables in the outbox, and the run is recorded as stopped", async () => {
    const stop = new AbortController();
    const { out, calls } = outputs({}, { signal: stop.signal, during: { publish: () => stop.abort() } });
    const verdict = await finishOutputs(out, async (v) => {
      calls.push(v.behind === null ? `record ${v.abandoned ? 'stopped' : 'nothing'}` : 'record behind');
    });
    expect(calls).toEqual([...FINISH_UP_TO_PUBLISH, 'record stopped', 'writeMetrics']);
    expect(out.abandoned).toBe(true);
    expect(verdict).toEqual({ behind: null, abandoned: true });
  });

  it('a lake and a publish both behind: the verdict is recorded once, before the publish, and the run ends with both named', async () => {
    const { out, calls } = outputs({ finishLake: new Error('bucket refused'), publish: new Error('disk full') });
    const { behind } = await finishOutputs(out, async () => {
      calls.push('record behind');
    });
    expect(calls.filter((c) => c === 'record behind')).toHaveLength(1);
    expect(calls.indexOf('record behind')).toBeLessThan(calls.indexOf('publish'));
    expect(behind?.message).toMatch(
      /the lake at file:\/\/\/lake \(bucket refused\)[\s\S]*the published warehouse at \/db\/costs\.duckdb \(disk full\)/,
    );
  });
});

describe("the run's verdict from its parts (settleParts, no I/O)", () => {
  const part = (source: string, outcome: SourceSummary['outcome']): SourceSummary => ({
    source,
    outcome,
    streams: {},
    requests: 1,
    retries: 0,
    rateLimited: 0,
    warnings: [],
    ...(outcome === 'failed' && { error: new Error(`${source} failed`) }),
  });
  const parts = [part('a', 'success'), part('b', 'stopped'), part('c', 'failed')];
  const behind = new CostsyncError('CS_ERR_OUTPUT_BEHIND', 'the lake fell behind');

  it('nothing behind and no memory stop leaves every part as it was, the same objects', () => {
    const settled = settleParts(parts, null, { behind: null, abandoned: false });
    expect(settled.every((p, i) => p === parts[i])).toBe(true);
  });

  it("an output behind fails the parts that had not failed, with its error; a source's own failure keeps its error", () => {
    const settled = settleParts(parts, null, { behind, abandoned: true });
    expect(settled.map((p) => p.outcome)).toEqual(['failed', 'failed', 'failed']);
    expect(settled.map((p) => (p.error as Error).message)).toEqual(['the lake fell behind', 'the lake fell behind', 'c failed']);
  });

  it('an output the stop left unfinished makes a success stopped, and lowers no outcome', () => {
    const settled = settleParts(parts, null, { behind: null, abandoned: true });
    expect(settled.map((p) => p.outcome)).toEqual(['stopped', 'stopped', 'failed']);
    expect(settled[1]).toBe(parts[1]);
  });

  it("a memory stop fails every part that had not failed, with the memory error, whatever the outputs' verdict", () => {
    const memory = new CostsyncError('CS_ERR_MEMORY', 'the heap ran short');
    const settled = settleParts(parts, memory, { behind, abandoned: false });
    expect(settled.map((p) => [p.outcome, (p.error as Error).message])).toEqual([
      ['failed', 'the heap ran short'],
      ['failed', 'the heap ran short'],
      ['failed', 'c failed'],
    ]);
  });
});
