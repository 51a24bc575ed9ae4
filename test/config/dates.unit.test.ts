import { describe, expect, it } from 'vitest';
import { addDays, daysInclusive, formatDuration, fromDayNumber, isCalendarDate, toDayNumber, utcDate } from '../../src/dates.js';

describe('calendar dates', () => {
  it('accepts real dates and refuses impossible or malformed ones', () => {
    expect(isCalendarDate('2024-02-29')).toBe(true);
    expect(isCalendarDate('2025-02-29')).toBe(false);
    expect(isCalendarDate('2025-04-31')).toBe(false);
    expect(isCalendarDate('2025-13-01')).toBe(false);
    expect(isCalendarDate('2025-1-01')).toBe(false);
    expect(isCalendarDate('2025-01-01T00:00:00Z')).toBe(false);
  });

  it('does arithmetic across months, years and leap days', () => {
    expect(addDays('2024-02-28', 1)).toBe('2024-02-29');
    expect(addDays('2024-12-31', 1)).toBe('2025-01-01');
    expect(addDays('2025-03-01', -1)).toBe('2025-02-28');
    expect(fromDayNumber(toDayNumber('2025-06-15'))).toBe('2025-06-15');
    expect(daysInclusive('2025-01-01', '2025-01-31')).toBe(31);
    expect(daysInclusive('2025-02-01', '2025-01-31')).toBe(0);
  });

  it('takes the UTC date of an instant whatever the local zone', () => {
    expect(utcDate(Date.parse('2025-01-01T23:30:00-05:00'))).toBe('2025-01-02');
  });
});

describe('formatDuration', () => {
  it('prints a duration as written: seconds stay seconds, never "0 min"', () => {
    expect(formatDuration(8_000)).toBe('8 s');
    expect(formatDuration(3_000)).toBe('3 s');
    expect(formatDuration(90_000)).toBe('1 min 30 s');
    expect(formatDuration(45 * 60_000)).toBe('45 min');
    expect(formatDuration(2 * 3_600_000)).toBe('2 h');
    expect(formatDuration(90 * 60_000)).toBe('1 h 30 min');
    expect(formatDuration(250)).toBe('250 ms');
  });
});
