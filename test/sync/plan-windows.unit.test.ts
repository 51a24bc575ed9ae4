import { describe, expect, it } from 'vitest';
import {
  completePlan,
  dropBefore,
  mendFutureState,
  planRun,
  planStart,
  remainingWindows,
  splitWindows,
  type WindowRequest,
} from '../../src/plan/windows.js';
import { emptyWindowedState, type WindowedStreamState } from '../../src/state/store.js';

const req = (over: Partial<WindowRequest> = {}): WindowRequest => ({
  until: '2025-06-30',
  startDate: '2025-04-01',
  lookbackDays: 3,
  windowDays: 30,
  fullRefresh: false,
  ...over,
});
const synced = (through: string): WindowedStreamState => ({ ...emptyWindowedState(), syncedFrom: '2025-04-01', syncedThrough: through });

describe('splitWindows', () => {
  it('covers the range with consecutive windows, the last one shorter', () => {
    expect(splitWindows('2025-01-30', '2025-02-05', 3)).toEqual([
      { start: '2025-01-30', end: '2025-02-01' },
      { start: '2025-02-02', end: '2025-02-04' },
      { start: '2025-02-05', end: '2025-02-05' },
    ]);
    expect(splitWindows('2025-01-01', '2025-01-01', 30)).toEqual([{ start: '2025-01-01', end: '2025-01-01' }]);
    expect(splitWindows('2025-01-02', '2025-01-01', 30)).toEqual([]);
  });
});

describe('planStart', () => {
  it('starts a first run at --start-date, or --since when given', () => {
    expect(planStart(emptyWindowedState(), req())).toBe('2025-04-01');
    expect(planStart(emptyWindowedState(), req({ since: '2025-01-01' }))).toBe('2025-01-01');
  });
  it('re-syncs the lookback days on an incremental run', () => {
    expect(planStart(synced('2025-06-29'), req())).toBe('2025-06-27');
    expect(planStart(synced('2025-06-29'), req({ lookbackDays: 1 }))).toBe('2025-06-29');
  });
  it('honours --since over the state, and a full refresh over both', () => {
    expect(planStart(synced('2025-06-29'), req({ since: '2025-05-01' }))).toBe('2025-05-01');
    expect(planStart(synced('2025-06-29'), req({ fullRefresh: true }))).toBe('2025-04-01');
  });
  it('starts a full refresh at the earliest date synced or stored, whatever --start-date says', () => {
    const backfilled = { ...synced('2025-06-29'), syncedFrom: '2025-01-15' };
    expect(planStart(backfilled, req({ fullRefresh: true }))).toBe('2025-01-15');
    expect(planStart(synced('2025-06-29'), req({ fullRefresh: true, storedFrom: '2025-02-01' }))).toBe('2025-02-01');
    expect(planStart(emptyWindowedState(), req({ fullRefresh: true, storedFrom: null }))).toBe('2025-04-01');
    expect(planStart(backfilled, req({ fullRefresh: true, since: '2025-06-01' }))).toBe('2025-06-01');
  });
  it('never starts before --drop-before', () => {
    expect(planStart(emptyWindowedState(), req({ dropBefore: '2025-05-01' }))).toBe('2025-05-01');
    expect(planStart({ ...synced('2025-06-29'), syncedFrom: '2025-01-15' }, req({ fullRefresh: true, dropBefore: '2025-03-01' }))).toBe(
      '2025-03-01',
    );
    expect(planStart(synced('2025-06-29'), req({ dropBefore: '2025-03-01' }))).toBe('2025-06-27');
  });
  it('--drop-before moves the earliest synced date past what it drops, and abandons a plan that starts before it', () => {
    expect(dropBefore(synced('2025-06-29'), '2025-05-01')).toMatchObject({ syncedFrom: '2025-05-01', syncedThrough: '2025-06-29' });
    expect(dropBefore(synced('2025-06-29'), '2025-03-01')).toEqual(synced('2025-06-29'));
    expect(dropBefore(synced('2025-04-20'), '2025-05-01')).toMatchObject({ syncedFrom: null, syncedThrough: null });
    const pending = planRun(synced('2025-06-29'), req({ since: '2025-04-10' })).plan;
    const state = { ...synced('2025-06-29'), pending };
    expect(planRun(state, req()).resumed).toBe(true);
    expect(planRun(state, req({ dropBefore: '2025-05-01' }))).toMatchObject({ resumed: false, plan: { from: '2025-06-27' } });
  });
  it('never starts after --until', () => {
    expect(planStart(synced('2025-07-10'), req())).toBe('2025-06-30');
  });
});

describe('planRun', () => {
  it('makes a new plan of todo windows', () => {
    const { plan, resumed } = planRun(emptyWindowedState(), req({ windowDays: 45 }));
    expect(resumed).toBe(false);
    expect(plan.windows.map((w) => [w.start, w.end, w.status])).toEqual([
      ['2025-04-01', '2025-05-15', 'todo'],
      ['2025-05-16', '2025-06-29', 'todo'],
      ['2025-06-30', '2025-06-30', 'todo'],
    ]);
  });

  it('resumes an unfinished plan, keeping its windows and progress, and extends it to --until', () => {
    const planned = planRun(emptyWindowedState(), req({ since: '2025-06-01', until: '2025-06-20', windowDays: 10 })).plan;
    // A plan is data: its progress is a new plan.
    const first = {
      ...planned,
      windows: [
        { ...planned.windows[0]!, status: 'done' as const },
        { ...planned.windows[1]!, status: 'active' as const, cursor: 'c', page: 2 },
      ],
    };
    const state = { ...emptyWindowedState(), pending: first };
    const { plan, resumed } = planRun(state, req({ until: '2025-06-25', windowDays: 7 }));
    expect(resumed).toBe(true);
    expect(plan.windows.map((w) => [w.start, w.end, w.status, w.cursor])).toEqual([
      ['2025-06-01', '2025-06-10', 'done', null],
      ['2025-06-11', '2025-06-20', 'active', 'c'],
      ['2025-06-21', '2025-06-25', 'todo', null],
    ]);
    expect(remainingWindows(plan).map((w) => w.start)).toEqual(['2025-06-11', '2025-06-21']);
    // The same --since resumes too; another --since starts over.
    expect(planRun(state, req({ since: '2025-06-01' })).resumed).toBe(true);
    expect(planRun(state, req({ since: '2025-05-01' })).resumed).toBe(false);
    expect(planRun(state, req({ fullRefresh: true })).resumed).toBe(false);
  });

  it('moves the watermark when a plan completes', () => {
    const plan = planRun(synced('2025-06-20'), req()).plan;
    expect(completePlan(synced('2025-06-20'), plan, 'now')).toEqual({
      syncedFrom: '2025-04-01',
      syncedThrough: '2025-06-30',
      // The state's min..max (written without ranges) is one range, unchecked.
      covered: [{ from: '2025-04-01', to: '2025-06-30' }],
      coverageUnchecked: true,
      lastSuccessAt: 'now',
      pending: null,
    });
    // A full refresh from a later --since deletes nothing before it: what was synced stays synced.
    const full = planRun(synced('2025-06-20'), req({ fullRefresh: true, since: '2025-05-01', until: '2025-06-10' })).plan;
    expect(completePlan(synced('2025-06-20'), full, 'now')).toMatchObject({ syncedFrom: '2025-04-01', syncedThrough: '2025-06-20' });
  });
});

describe('mendFutureState (a future --until recorded by an older costsync)', () => {
  it('pulls a watermark past today back to today, so the next plan is the lookback again', () => {
    const mended = mendFutureState(synced('2027-01-01'), '2026-11-24');
    expect(mended!.state.syncedThrough).toBe('2026-11-24');
    expect(mended!.notice).toMatch(/watermark 2027-01-01 is after today \(2026-11-24\).*future --until/);
    expect(planRun(mended!.state, req({ until: '2026-11-24' })).plan.from).toBe('2026-11-22');
    // Unmended, the plan would have been today alone: the restated days would be missed.
    expect(planRun(synced('2027-01-01'), req({ until: '2026-11-24' })).plan.from).toBe('2026-11-24');
  });

  it('drops windows of an unfinished plan that start after today, keeping one that straddles it', () => {
    const pending = {
      from: '2026-11-01',
      to: '2027-01-31',
      fullRefresh: false,
      windows: [
        { start: '2026-11-01', end: '2026-11-30', status: 'active' as const, cursor: 'c', page: 2, fetched: false },
        { start: '2026-12-01', end: '2026-12-31', status: 'todo' as const, cursor: null, page: 0, fetched: false },
      ],
    };
    const mended = mendFutureState({ ...synced('2026-10-31'), pending }, '2026-11-24')!;
    expect(mended.state.pending).toEqual({ ...pending, to: '2026-11-24', windows: [pending.windows[0]] });
    expect(mended.state.syncedThrough).toBe('2026-10-31');
  });

  it('leaves a state at or before today alone', () => {
    expect(mendFutureState(synced('2026-11-24'), '2026-11-24')).toBeNull();
    expect(mendFutureState(emptyWindowedState(), '2026-11-24')).toBeNull();
  });
});
