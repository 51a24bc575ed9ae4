import { describe, expect, it } from 'vitest';
import { emptyStats } from '../../src/sync/context.js';
import {
  createProgress,
  etaSeconds,
  progressLine,
  runSummaryText,
  summarize,
  summaryTable,
  type ProgressFigures,
} from '../../src/progress.js';
import { estimateTotalPages, smooth, wantsRollupTotals } from '../../src/sync/estimate.js';
import { createLogger } from '../../src/log.js';

function testProgress(live = false) {
  let t = Date.parse('2025-07-01T06:00:00Z');
  const written: string[] = [];
  const logged: string[] = [];
  const progress = createProgress({
    live,
    requestsPerMinute: 60,
    now: () => t,
    write: (s) => written.push(s),
    logger: createLogger({ format: 'json', level: 'info', write: (l) => logged.push(l) }),
  });
  return {
    progress,
    written,
    logged,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

const days = (n: number, basis: { usd?: number; storedRows?: number }) =>
  Array.from({ length: n }, (_, i) => ({
    date: `2025-06-${String(i + 1).padStart(2, '0')}`,
    usd: basis.usd ?? null,
    storedRows: basis.storedRows ?? null,
  }));

describe('progress', () => {
  it('never promises an ETA faster than the rate limit allows', () => {
    expect(etaSeconds(120, 50, 60)).toBe(120);
    expect(etaSeconds(120, 2000, 60)).toBe(240);
    expect(etaSeconds(0, 2000, 60)).toBe(0);
  });

  it('estimates from rollup totals and the pages so far, from stored rows, from finished windows; with no basis it says so', () => {
    const none = { rows: 0, usd: 0, pages: 0, daysDone: 0, pagesOfDaysDone: 0 };
    expect(estimateTotalPages(days(30, { usd: 5000 }), none, 1)).toBeNull();
    // $5,000 a day at $2.50 a line item: 2,000 rows a day, 60 pages for 30 days.
    expect(estimateTotalPages(days(30, { usd: 5000 }), { ...none, rows: 3000, usd: 7500, pages: 3 }, 1)).toBe(61);
    expect(estimateTotalPages(days(30, { storedRows: 1500 }), none, 3)).toBe(47);
    expect(estimateTotalPages(days(30, {}), { ...none, pages: 20, daysDone: 10, pagesOfDaysDone: 20 }, 2)).toBe(61);
  });

  it('smooths the pace so the ETA does not jump', () => {
    let pace: number | null = null;
    for (const sample of [1000, 1000, 1000, 4000, 1000]) pace = smooth(pace, sample);
    expect(pace).toBeGreaterThan(1000);
    expect(pace).toBeLessThan(1500);
  });

  it('moves the bar with every page, counts pages against the estimate, and the ETA reflects a 60/min limit', () => {
    const { progress, advance } = testProgress();
    progress.planned!('line_items', { windows: 2, from: '2025-06-01', to: '2025-06-30', resumed: false, days: days(30, { usd: 5000 }) });
    const [before] = progress.snapshot();
    expect(before).toMatchObject({ pages: 0, estimatedPages: null, etaSeconds: null });
    expect(progressLine(before!)).toMatch(/0 pages .* estimating…$/);
    for (let i = 0; i < 6; i++) {
      advance(50);
      progress.page!('line_items', { rows: 1000, window: 'w', usd: 2500 });
    }
    const [mid] = progress.snapshot();
    expect(mid).toMatchObject({ pages: 6, estimatedPages: 61 });
    // Pages come every 50 ms, but 60 a minute allow one a second: 55 left take 55 s.
    expect(mid!.etaSeconds).toBe(55);
    expect(progressLine(mid!)).toMatch(/^line_items {2}\[##-{18}\] 6\/~61 pages {2}6,000 rows {2}\d[\d,]* rows\/s {2}ETA 55s$/);
  });

  it('counts what the anomalies stream fetched, and a finished stream keeps its own rate', () => {
    const { progress, advance } = testProgress();
    progress.planned!('anomalies', { windows: 1, from: 'a', to: 'b', resumed: false });
    advance(5000);
    progress.page!('anomalies', { rows: 165, window: 'w', pages: 5 });
    progress.windowDone!('anomalies', { window: 'w', inserted: 165, updated: 0, deleted: 0 });
    const [done] = progress.snapshot();
    expect(done).toMatchObject({ stream: 'anomalies', pages: 5, rows: 165, done: true, rowsPerSecond: 33, etaSeconds: 0 });
    advance(60_000);
    expect(progress.snapshot()[0]!.rowsPerSecond).toBe(33);
    expect(progressLine(progress.snapshot()[0]!)).toMatch(/anomalies +\[#{20}\] 5\/5 pages {2}165 rows {2}33 rows\/s {2}done/);
  });

  it('without a terminal writes no control characters; with JSON logs it emits progress events a scheduler can parse', () => {
    const { progress, written, logged, advance } = testProgress(false);
    progress.planned!('rollups', { windows: 2, from: 'a', to: 'b', resumed: false, pages: 6 });
    advance(1000);
    progress.page!('rollups', { rows: 90, window: 'w' });
    progress.tick();
    progress.finish();
    expect(written).toEqual([]);
    // eslint-disable-next-line no-control-regex -- the escape character is what must not be there
    expect(logged.join('\n')).not.toMatch(/\u001b/);
    const event = JSON.parse(logged.at(-1)!);
    expect(event.msg).toBe('progress');
    expect(event.streams[0]).toMatchObject({ stream: 'rollups', pages: 1, estimatedPages: 6, etaSeconds: 5 });
  });

  it('stays readable at 20 sources: one summary line per stream, the slowest source deciding the ETA', () => {
    const all: ProgressFigures[] = Array.from({ length: 20 }, (_, i) => ({
      stream: `ws-${i}/line_items`,
      pages: 10,
      estimatedPages: 30,
      rows: 10_000,
      rowsPerSecond: 100,
      etaSeconds: 20 + i,
      done: false,
    }));
    const lines = summarize(all).map((f) => progressLine(f));
    expect(lines).toEqual([
      expect.stringMatching(
        /^line_items \(0\/20 sources done\) \[#{7}-{13}\] 200\/~600 pages {2}200,000 rows {2}2,000 rows\/s {2}ETA 39s$/,
      ),
    ]);
  });

  it("with sources waiting their turn: they count as not done, their pages are estimated from the others', and no ETA until all started", () => {
    const running: ProgressFigures[] = Array.from({ length: 4 }, (_, i) => ({
      stream: `ws-${i}/line_items`,
      pages: 30,
      estimatedPages: 30,
      rows: 30_000,
      rowsPerSecond: 0,
      etaSeconds: 0,
      done: true,
    }));
    const [waiting] = summarize(running, 10);
    expect(progressLine(waiting!)).toMatch(
      /^line_items \(4\/10 sources done, 6 waiting\) \[#{8}-{12}\] 120\/~300 pages {2}120,000 rows {2}0 rows\/s {2}estimating…$/,
    );
    expect(waiting!.done).toBe(false);
    const [all] = summarize(running, 4);
    expect(progressLine(all!)).toMatch(/^line_items \(4\/4 sources done\) .* 120\/120 pages .* done$/);
  });

  it('draws one line per stream while sources wait their turn, however few lines the started ones take', () => {
    const written: string[] = [];
    const progress = createProgress({
      live: true,
      requestsPerMinute: 60,
      now: () => 0,
      write: (s) => written.push(s),
      sources: 3,
      logger: createLogger({ format: 'json', level: 'info', write: () => undefined }),
    });
    progress.planned!('ws-0/line_items' as never, { windows: 1, from: '2025-06-01', to: '2025-06-30', resumed: false, pages: 30 });
    progress.finish();
    expect(written.at(-1)).toMatch(/line_items \(0\/3 sources done, 2 waiting\)/);
    expect(written.at(-1)).not.toMatch(/ws-0/);
  });

  it('prints what changed per stream', () => {
    const table = summaryTable({
      line_items: { ...emptyStats(), inserted: 4500, pages: 5, requests: 6, retries: 1 },
      rollups: { ...emptyStats(), olderChanged: 3, olderSynced: 2 },
    });
    expect(table.split('\n')[0]).toMatch(
      /^stream\s+inserted\s+updated\s+deleted\s+restated\s+pages\s+requests\s+retries\s+429s\s+warnings$/,
    );
    expect(table.split('\n')[1]).toMatch(/^line_items\s+4500\s+0\s+0\s+-\s+5\s+6\s+1\s+0\s+0$/);
    // Older dates the recheck found changed: synced again / found.
    expect(table.split('\n')[2]).toMatch(/^rollups\s+0\s+0\s+0\s+2\/3\s+0/);
  });

  it('ends a run of many sources with the outcomes counted, the sources that did not succeed named, and one table for all', () => {
    const stats = (inserted: number) => ({ line_items: { ...emptyStats(), inserted, pages: 1, requests: 1 } });
    const sources = Array.from({ length: 30 }, (_, i) => ({
      source: `ws-${i}`,
      outcome: i < 25 ? 'success' : i < 27 ? 'failed' : 'stopped',
      streams: stats(100),
    }));
    const text = runSummaryText(sources, stats(3000));
    expect(text.split('\n').slice(0, 5)).toEqual([
      '30 sources: 25 success, 2 failed, 3 stopped',
      'failed: ws-25, ws-26',
      'stopped: ws-27, ws-28, ws-29',
      '',
      'all 30 sources',
    ]);
    expect(text).toMatch(/^line_items\s+3000\s+0\s+0\s+-\s+1\s+1\s+0\s+0\s+0$/m);
    expect(text).not.toMatch(/ws-3:|ws-0/);
    const many = runSummaryText(
      Array.from({ length: 30 }, (_, i) => ({ source: `ws-${i}`, outcome: 'failed', streams: stats(0) })),
      stats(0),
    );
    expect(many.split('\n')[1]).toMatch(/^failed: ws-0, .*ws-19, and 10 more$/);
    // A few sources: a table each; one: its table.
    expect(runSummaryText(sources.slice(0, 2), stats(200))).toMatch(/^ws-0: success\nstream[\s\S]*\n\nws-1: success\nstream/);
    expect(runSummaryText(sources.slice(0, 1), stats(100))).toBe(summaryTable(stats(100)));
  });

  it('spends the rollups request for the estimate on backfills and on new plans with nothing stored, whatever their windows', () => {
    expect(wantsRollupTotals(1, false, 0)).toBe(true);
    expect(wantsRollupTotals(2, false, 0)).toBe(true);
    expect(wantsRollupTotals(3, false, 25)).toBe(true);
    expect(wantsRollupTotals(1, false, 3)).toBe(false);
    expect(wantsRollupTotals(1, true, 0)).toBe(false);
    expect(wantsRollupTotals(0, false, 0)).toBe(false);
    expect(wantsRollupTotals(5, false, 0, false)).toBe(false);
  });
});
