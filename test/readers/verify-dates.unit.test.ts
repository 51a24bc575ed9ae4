import { describe, expect, it } from 'vitest';
import { nothingSyncedError, unsyncedIn, unsyncedText } from '../../src/verify.js';

describe("verify's dates never synced", () => {
  const range = (source: string, from_date: string, to_date: string) => ({
    source,
    stream: 'line_items',
    from_date,
    to_date,
    days_in_range: 0,
  });
  it('takes the held ranges out of the asked dates, per source, each end open to the source own', () => {
    const ranges = [range('a', '2025-06-02', '2025-06-05'), range('a', '2025-06-20', '2025-06-25'), range('b', '2025-06-01', '2025-06-30')];
    expect(unsyncedIn(ranges, null, null)).toEqual([{ source: 'a', dates: '2025-06-06..2025-06-19' }]);
    expect(unsyncedIn(ranges, '2025-05-30', '2025-06-03')).toEqual([
      { source: 'a', dates: '2025-05-30..2025-06-01' },
      { source: 'b', dates: '2025-05-30..2025-05-31' },
    ]);
    expect(unsyncedIn(ranges, '2025-06-21', '2025-06-22')).toEqual([]);
    expect(unsyncedText(unsyncedIn(ranges, null, '2025-06-10'))).toBe('; not compared, as never synced: a 2025-06-06..2025-06-10');
    expect(unsyncedText([])).toBe('');
  });
});

describe('a verify that compared nothing', () => {
  const range = (days_in_range: number) => ({
    source: 'a',
    stream: 'line_items',
    from_date: '2025-06-01',
    to_date: '2025-06-30',
    days_in_range,
  });
  it('is an error naming what the warehouse holds, unless a date of its range is synced', () => {
    expect(nothingSyncedError([range(3)], '2025-06-28', null, 'verify')).toBeNull();
    const before = nothingSyncedError([range(0)], '2025-01-01', '2025-01-31', 'verify')!;
    expect(before.code).toBe('CS_ERR_NOTHING_SYNCED');
    expect(before.exitCode).toBe(2);
    expect(before.message).toBe(
      'verify compared nothing: no date in 2025-01-01..2025-01-31 is synced (the warehouse holds a: 2025-06-01..2025-06-30).',
    );
    expect(before.hint).toContain('costsync sync --since 2025-01-01 --until 2025-01-31');
    expect(nothingSyncedError([range(0)], '2025-07-01', null, 'verify --api')!.message).toContain('no date from 2025-07-01 on is synced');
    expect(nothingSyncedError([], null, null, 'verify')!.message).toBe('verify compared nothing: the warehouse holds no synced dates yet.');
  });
});
