import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import type { Warehouse } from '../../src/storage/duckdb.js';
import type { Spool } from '../../src/storage/spool.js';
import { LINE_ITEMS } from '../../src/storage/tables.js';
import { emptyStats, type SyncContext } from '../../src/sync/context.js';
import { MAX_FETCH_ATTEMPTS, REFETCH_PAUSE_MS, type Mismatch } from '../../src/sync/reconcile.js';
import type { FetchedPage, WindowedStreamSpec } from '../../src/sync/streams.js';
import { PageSlots } from '../../src/sync/page-slots.js';
import { syncWindowedStream } from '../../src/sync/windowed.js';
import { CURSOR_SAVE_MS, CURSOR_SAVE_PAGES } from '../../src/sync/window-fetch.js';
import { SourceState } from '../../src/state/source-state.js';
import type { PlannedWindow, SyncState } from '../../src/state/store.js';
import { memoryLogger } from '../support/helpers.js';

/** One window, 2025-01-01..2025-01-07, fetched in one plan. */
const REQUEST = { startDate: '2025-01-01', until: '2025-01-07', lookbackDays: 0, windowDays: 7, fullRefresh: false };

type Answer = FetchedPage | Error;

interface Options {
  /** What each fetch answers, in order. */
  pages: Answer[];
  /** What each check finds, in order (none: the window agrees). */
  checks?: Mismatch[][];
  /** Rows the table holds for the window before the replace. */
  rowsBefore?: number;
  /** A stop is asked for once this many pages are fetched. */
  stopAfterPages?: number;
  reconcile?: SyncContext['checks']['reconcile'];
  /** A window already under way (a resumed plan). */
  resume?: Partial<PlannedWindow>;
  /** Writing this page fails (a full disk, say). */
  failWrite?: number;
  /** The run's page slots (none: unbounded); the fetch takes one as the client does once the request may go. */
  slots?: PageSlots;
  /** Page 1's write waits on the disk until the page after it is asked for. */
  slowFirstWrite?: boolean;
  /** The check sums provider amounts while the pages come (as the line items' check does). */
  pagedCheck?: boolean;
  /** One-day windows, 2025-01-01 onwards, instead of the one seven-day window. */
  days?: number;
  /** How long a fetched window may wait to be stored with the next (none: unbounded). */
  storeWaitMs?: number;
  /** How far the clock moves each time it is read (default: the cursor's save interval, so every page saves). */
  clockStepMs?: number;
  /** A stop comes during the pause before a window is fetched again (through the run's signal, which the pause must take). */
  stopDuringPause?: boolean;
}

const page = (ids: string[], nextCursor: string | null): FetchedPage => ({
  records: ids.map((id) => ({ id, usage_date: '2025-01-03', net_amount_usd: 1 })),
  nextCursor,
});

/**
 * The engine with every collaborator faked: what it did, in order, as lines ("fetch", "write page 1",
 * "save …", "begin", "commit", …), so each test reads as the sequence of steps it pins down.
 */
async function runWindow(options: Options) {
  const steps: string[] = [];
  const answers = [...options.pages];
  const checks = [...(options.checks ?? [])];
  let fetched = 0;
  // The check read its totals back from the spool (they were not gathered as the pages came).
  let spoolRead = false;
  const spec: WindowedStreamSpec = {
    name: 'line_items',
    table: LINE_ITEMS,
    idField: 'id',
    size: { pagesPerWindow: 1 },
    serverCursors: true,
    takesPageSlot: true,
    sql: { diff: 'diff', insertWindow: 'insert deduplicated', insertUnique: 'insert unique' },
    check: {
      run: async (_ctx, _window, windowTotals) => {
        spoolRead = false;
        const totals = await windowTotals();
        steps.push(spoolRead ? 'check' : `check paged ${totals.map((t) => `${t.date}/${t.key}=${t.amount}`).join(' ')}`);
        return checks.shift() ?? [];
      },
      spoolTotals: 'spool totals',
      sides: ['line items', 'provider rollup'],
      deliversProviderRollups: false,
      ...(options.pagedCheck ? { paged: { keyField: 'provider_type', amountField: 'net_amount_usd' } } : {}),
    },
    async fetchPage(_client, _window, cursor, _shared, admit) {
      steps.push(`fetch ${cursor ?? 'first'}`);
      if (admit && options.slots) {
        const admitted = admit();
        await Promise.resolve();
        if (cursor !== null) steps.push(options.slots.queued === 0 ? 'slot taken' : 'waiting for a slot');
        firstWritten();
        await admitted;
      }
      const answer = answers.shift();
      if (answer === undefined) throw new Error('no more scripted pages');
      if (answer instanceof Error) throw answer;
      fetched += 1;
      return answer;
    },
    // Only the dry run asks it.
    estimateRequests: () => ({ requests: null, minRequests: 0, basis: null }),
  };
  let firstWritten = (): void => undefined;
  const firstWrite = new Promise<void>((resolve) => {
    firstWritten = resolve;
  });
  const spool: Spool = {
    clear: async (dir) => {
      steps.push(`clear ${dir}`);
    },
    dropPagesAfter: (_dir, n) => {
      steps.push(`drop pages after ${n}`);
    },
    upgradePages: async () => {
      steps.push('upgrade pages');
    },
    writePage: async (_dir, n) => {
      steps.push(`write page ${n}`);
      if (n === 1 && options.slowFirstWrite) await firstWrite;
      if (n === options.failWrite) throw new Error('ENOSPC: no space left on device');
    },
  };
  let inTransaction = false;
  let ticks = 0;
  const warehouse = {
    async transaction<T>(fn: () => Promise<T>): Promise<T> {
      steps.push('begin');
      inTransaction = true;
      try {
        const result = await fn();
        steps.push('commit');
        return result;
      } finally {
        inTransaction = false;
      }
    },
    transactionMayRepeat<T>(fn: () => Promise<T>): Promise<T> {
      return warehouse.transaction(fn);
    },
    async query(name: string) {
      if (name === 'sync/window_count') return [{ n: options.rowsBefore ?? 0 }];
      if (name === 'diff') return [{ inserted: 1, updated: 2, deleted: 0 }];
      if (name === 'spool totals') {
        spoolRead = true;
        return [];
      }
      throw new Error(`unexpected query ${name}`);
    },
    // An insert reports the rows it inserted, as DuckDB does.
    async run(name: string) {
      steps.push(`run ${name}`);
      return name.startsWith('insert') ? 3 : 0;
    },
    async changed() {
      steps.push('changed');
    },
  } as unknown as Warehouse;
  const resumed: SyncState['streams']['line_items'] =
    options.resume === undefined
      ? undefined
      : {
          syncedFrom: null,
          syncedThrough: null,
          lastSuccessAt: null,
          pending: {
            from: '2025-01-01',
            to: '2025-01-07',
            fullRefresh: false,
            windows: [
              { start: '2025-01-01', end: '2025-01-07', status: 'active', cursor: null, page: 0, fetched: false, ...options.resume },
            ],
          },
        };
  // The progress as last saved: its owner replaces the value at each change, and the home is given the new one.
  let state: SyncState = {
    version: 1,
    source: { keyFingerprint: '', baseUrl: '' },
    streams: resumed === undefined ? {} : { line_items: resumed },
    updatedAt: null,
  } as unknown as SyncState;
  const window = () => state.streams.line_items?.pending?.windows[0];
  const stop = new AbortController();
  const ctx: SyncContext = {
    client: {} as never,
    warehouse,
    lookups: { lineItemsPerDate: async () => new Map(), knownProviders: async () => [] },
    spoolDir: '/spool',
    spool,
    state: new SourceState(state, {
      async save(saved) {
        state = saved;
        const w = window();
        if (inTransaction) throw new Error('state saved inside the transaction');
        steps.push(
          w === undefined ? 'save done' : `save ${w.status} page ${w.page} cursor ${w.cursor ?? '-'}${w.fetched ? ' fetched' : ''}`,
        );
      },
      async carry() {
        steps.push('carry state');
      },
    }),
    logger: memoryLogger(),
    clock: {
      now: () => Date.parse('2025-01-08T00:00:00Z') + ticks++ * (options.clockStepMs ?? CURSOR_SAVE_MS),
      sleep: async (ms, signal) => {
        steps.push(`pause ${ms} ms`);
        if (options.stopDuringPause && signal === stop.signal) {
          stop.abort();
          steps.push('pause ended by the stop');
        }
      },
    },
    runId: 'run-1',
    source: 'default',
    shouldStop: () => stop.signal.aborted || (options.stopAfterPages !== undefined && fetched >= options.stopAfterPages),
    signal: stop.signal,
    stats: { line_items: emptyStats(), rollups: emptyStats(), anomalies: emptyStats() },
    progress: {},
    pace: {
      concurrency: 1,
      ...(options.storeWaitMs !== undefined ? { storeWaitMs: options.storeWaitMs } : {}),
      ...(options.slots ? { pageSlots: options.slots } : {}),
    },
    checks: { reconcile: options.reconcile ?? 'on' },
    notify: { webhooks: ['hook-1'], minRank: 0, cutoff: '2025-01-01', statusChanges: false },
    async afterCommit() {
      steps.push('outputs');
    },
  };
  let outcome: string;
  try {
    const request =
      options.days === undefined ? REQUEST : { ...REQUEST, windowDays: 1, until: `2025-01-${String(options.days).padStart(2, '0')}` };
    outcome = await syncWindowedStream(spec, ctx, request);
  } catch (error) {
    outcome = `threw ${(error as { code?: string }).code ?? (error as Error).message}`;
  }
  return { steps, outcome, stats: ctx.stats.line_items, state };
}

const WINDOW_DIR = '/spool/line_items/2025-01-01';

describe("the windowed engine's steps (no I/O)", () => {
  it('each page is spooled before the cursor after it is saved (the next page fetched meanwhile); the window is replaced in one transaction, and only then marked done and its pages removed', async () => {
    const { steps, outcome, stats } = await runWindow({ pages: [page(['a', 'b'], 'c1'), page(['c'], null)] });
    expect(outcome).toBe('done');
    expect(steps).toEqual([
      'save todo page 0 cursor -',
      'clear /spool/line_items',
      'clear ' + WINDOW_DIR,
      'fetch first',
      'write page 1',
      'fetch c1',
      'save active page 1 cursor c1',
      'write page 2',
      'save active page 2 cursor - fetched',
      'check',
      'begin',
      'run insert unique',
      'changed',
      'carry state',
      'commit',
      'save done page 2 cursor - fetched',
      'clear ' + WINDOW_DIR,
      'outputs',
      'save done',
    ]);
    expect(stats).toMatchObject({ pages: 2, inserted: 3 });
  });

  it('the check gets the totals summed while the pages came when every id came once, and reads the spool when one came twice', async () => {
    const pages = () => [page(['a', 'b'], 'c1'), page(['c'], null)];
    const once = await runWindow({ pages: pages(), pagedCheck: true });
    expect(once.steps).toContain('check paged 2025-01-03/=3');
    const twice = await runWindow({ pages: [page(['a', 'b'], 'c1'), page(['a'], null)], pagedCheck: true });
    expect(twice.steps).toContain('check');
    expect(twice.steps.some((step) => step.startsWith('check paged'))).toBe(false);
  });

  it('after a disagreement the window is fetched again and its totals summed afresh', async () => {
    const mismatch = [{ date: '2025-01-03', key: '', left: 3, right: 4 }];
    const { steps } = await runWindow({
      pages: [page(['a', 'b'], 'c1'), page(['c'], null), page(['a', 'b'], 'c1'), page(['c'], null)],
      checks: [mismatch, []],
      pagedCheck: true,
    });
    expect(steps.filter((step) => step.startsWith('check'))).toEqual(['check paged 2025-01-03/=3', 'check paged 2025-01-03/=3']);
  });

  it("pages that come quickly share a save: every CURSOR_SAVE_PAGES pages whatever the clock (a SIGKILL refetches at most that many), and always after the window's last page", async () => {
    const pages = [page(['a'], 'c1'), page(['b'], 'c2'), page(['c'], 'c3'), page(['d'], 'c4'), page(['e'], null)];
    const { steps, outcome } = await runWindow({ pages, clockStepMs: 0 });
    expect(outcome).toBe('done');
    expect(CURSOR_SAVE_PAGES).toBe(2);
    expect(steps.filter((s) => s.startsWith('write page'))).toHaveLength(5);
    expect(steps.filter((s) => s.startsWith('save active'))).toEqual([
      'save active page 2 cursor c2',
      'save active page 4 cursor c4',
      'save active page 5 cursor - fetched',
    ]);
  });

  it('a stop or a failure between saves saves the cursor of the last page written, so a graceful end fetches none again', async () => {
    const pages = [page(['a'], 'c1'), page(['b'], 'c2'), page(['c'], 'c3'), page(['d'], null)];
    const stopped = await runWindow({ pages: [...pages], clockStepMs: 0, stopAfterPages: 2 });
    expect(stopped.outcome).toBe('stopped');
    expect(stopped.steps.at(-1)).toBe('save active page 2 cursor c2');
    const failed = await runWindow({ pages: [page(['a'], 'c1'), page(['b'], 'c2'), new Error('socket hang up')], clockStepMs: 0 });
    expect(failed.outcome).toBe('threw socket hang up');
    expect(failed.steps.at(-1)).toBe('save active page 2 cursor c2');
  });

  it('a page gives its heap slot back once its records are taken: with one slot, the next page is fetched while the last one waits on the disk', async () => {
    const slots = new PageSlots(1);
    const { steps, outcome } = await runWindow({ pages: [page(['a'], 'c1'), page(['b'], null)], slots, slowFirstWrite: true });
    expect(outcome).toBe('done');
    expect(steps.slice(3, 8)).toEqual(['fetch first', 'write page 1', 'fetch c1', 'slot taken', 'save active page 1 cursor c1']);
    expect(slots.queued).toBe(0);
  });

  it('ids seen twice make the replace deduplicate; rows already stored are compared and deleted first', async () => {
    const { steps, stats } = await runWindow({ pages: [page(['a', 'b'], 'c1'), page(['b'], null)], rowsBefore: 5 });
    expect(steps.slice(steps.indexOf('begin'), steps.indexOf('commit') + 1)).toEqual([
      'begin',
      'run sync/window_delete',
      'run insert deduplicated',
      'changed',
      'carry state',
      'commit',
    ]);
    expect(stats).toMatchObject({ inserted: 1, updated: 2, deleted: 0 });
  });

  it('a resumed window drops the pages after its saved cursor, goes on from that cursor, and deduplicates (the earlier ids are unknown)', async () => {
    const { steps } = await runWindow({ resume: { page: 1, cursor: 'c1' }, pages: [page(['c'], null)] });
    expect(steps.slice(0, 6)).toEqual([
      'save active page 1 cursor c1',
      'drop pages after 1',
      'upgrade pages',
      'fetch c1',
      'write page 2',
      'save active page 2 cursor - fetched',
    ]);
    expect(steps).not.toContain('clear /spool/line_items');
    expect(steps).toContain('run insert deduplicated');
  });

  it('a cursor the server refuses starts the window over from its first page', async () => {
    const refused = new ApiError('CS_ERR_HTTP', 'GET /line-items: 400 invalid cursor', { statusCode: 400, path: '/line-items' });
    const { steps, outcome } = await runWindow({
      resume: { page: 1, cursor: 'c1' },
      pages: [refused, page(['a'], 'c2'), page(['b'], null)],
    });
    expect(outcome).toBe('done');
    expect(steps.slice(2, 10)).toEqual([
      'upgrade pages',
      'fetch c1',
      'clear ' + WINDOW_DIR,
      'save active page 0 cursor -',
      'fetch first',
      'write page 1',
      'fetch c2',
      'save active page 1 cursor c2',
    ]);
    // The pages before the restart were never seen, so uniqueness is not claimed.
    expect(steps).toContain('run insert deduplicated');
  });

  it('a cursor the server returned before ends the run with CS_ERR_CURSOR_LOOP, the last good page kept and nothing committed', async () => {
    const { steps, outcome } = await runWindow({ pages: [page(['a'], 'c1'), page(['b'], 'c1')] });
    expect(outcome).toBe('threw CS_ERR_CURSOR_LOOP');
    // The page being written when the loop shows is still written and its cursor saved; the repeat is not.
    expect(steps.slice(-3)).toEqual(['write page 1', 'fetch c1', 'save active page 1 cursor c1']);
    expect(steps).not.toContain('write page 2');
    expect(steps).not.toContain('begin');
  });

  it('a page that cannot be written fails the window: its cursor is not saved, and no page after the next is fetched', async () => {
    const { steps, outcome } = await runWindow({
      failWrite: 2,
      pages: [page(['a'], 'c1'), page(['b'], 'c2'), page(['c'], 'c3'), page(['d'], null)],
    });
    expect(outcome).toMatch(/ENOSPC/);
    expect(steps).toContain('save active page 1 cursor c1');
    expect(steps.some((s) => s.startsWith('save active page 2'))).toBe(false);
    expect(steps).not.toContain('fetch c3');
    expect(steps).not.toContain('begin');
  });

  it('a stop asked for between pages returns "stopped" with the cursor saved and nothing committed', async () => {
    const { steps, outcome } = await runWindow({ pages: [page(['a'], 'c1'), page(['b'], null)], stopAfterPages: 1 });
    expect(outcome).toBe('stopped');
    expect(steps.at(-1)).toBe('save active page 1 cursor c1');
    expect(steps).not.toContain('begin');
  });

  it('a window that disagrees with the rollups is fetched again from its first page after a pause, and stored once it agrees', async () => {
    const mismatch: Mismatch = { date: '2025-01-03', key: 'aws', left: 1, right: 2 };
    const { steps, stats } = await runWindow({ pages: [page(['a'], null), page(['a'], null)], checks: [[mismatch], []] });
    const first = steps.indexOf('check');
    expect(steps.slice(first, first + 6)).toEqual([
      'check',
      `pause ${REFETCH_PAUSE_MS} ms`,
      'clear ' + WINDOW_DIR,
      'save active page 0 cursor -',
      'fetch first',
      'write page 1',
    ]);
    expect(steps.filter((s) => s === 'begin')).toHaveLength(1);
    expect(stats.refetches).toBe(1);
  });

  it("a stop during the pause before a window is fetched again ends the pause (it waits on the run's signal) and fetches nothing more", async () => {
    const mismatch: Mismatch = { date: '2025-01-03', key: 'aws', left: 1, right: 2 };
    const { steps, outcome } = await runWindow({
      pages: [page(['a'], null), page(['a'], null)],
      checks: [[mismatch], []],
      stopDuringPause: true,
    });
    expect(outcome).toBe('stopped');
    expect(steps.slice(steps.indexOf('check'))).toEqual(['check', `pause ${REFETCH_PAUSE_MS} ms`, 'pause ended by the stop']);
    expect(steps).not.toContain('begin');
  });

  it('small fetched windows wait for each other and are stored together (one group commit) while the next ones are fetched; then each is marked done', async () => {
    const { steps, outcome, stats } = await runWindow({ days: 3, pages: [page(['a'], null), page(['b'], null), page(['c'], null)] });
    expect(outcome).toBe('done');
    expect(steps.filter((s) => s === 'fetch first')).toHaveLength(3);
    expect(steps.lastIndexOf('fetch first')).toBeLessThan(steps.indexOf('begin'));
    expect(steps.filter((s) => s === 'begin')).toHaveLength(3);
    expect(steps.at(-1)).toBe('save done');
    expect(stats).toMatchObject({ pages: 3, inserted: 9 });
  });

  it('under --publish-interval 0 (no wait) each window is stored before the next is fetched', async () => {
    const { steps, outcome } = await runWindow({ days: 2, storeWaitMs: 0, pages: [page(['a'], null), page(['b'], null)] });
    expect(outcome).toBe('done');
    expect(steps.indexOf('commit')).toBeLessThan(steps.lastIndexOf('fetch first'));
  });

  it('a stop stores the windows already fetched and waiting, and returns "stopped" without fetching more', async () => {
    const { steps, outcome } = await runWindow({
      days: 3,
      pages: [page(['a'], null), page(['b'], null), page(['c'], null)],
      stopAfterPages: 2,
    });
    expect(outcome).toBe('stopped');
    expect(steps.filter((s) => s === 'fetch first')).toHaveLength(2);
    expect(steps.filter((s) => s === 'commit')).toHaveLength(2);
    expect(steps).not.toContain('save done');
  });

  it('under --reconcile strict, a window that still disagrees is stored with its notification in the same transaction, then the run fails with CS_ERR_RECONCILE', async () => {
    const mismatch: Mismatch = { date: '2025-01-03', key: 'aws', left: 1, right: 2 };
    const pages = Array.from({ length: MAX_FETCH_ATTEMPTS }, () => page(['a'], null));
    const { steps, outcome } = await runWindow({
      pages,
      checks: Array.from({ length: MAX_FETCH_ATTEMPTS }, () => [mismatch]),
      reconcile: 'strict',
    });
    expect(outcome).toBe('threw CS_ERR_RECONCILE');
    const begin = steps.indexOf('begin');
    expect(steps.slice(begin, steps.indexOf('commit') + 1)).toEqual([
      'begin',
      'run insert unique',
      'changed',
      'carry state',
      'run notify/run_event',
      'commit',
    ]);
    expect(steps.slice(steps.indexOf('commit') + 1)).toEqual(['save done page 1 cursor - fetched', 'clear ' + WINDOW_DIR, 'outputs']);
  });
});
