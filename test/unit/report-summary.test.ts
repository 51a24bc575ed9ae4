import { describe, expect, it } from 'vitest';
import { reportSummary } from '../../src/commands/report.js';
import { periodText, unknownSourceError } from '../../src/report/data.js';
import { monthToDateCard } from '../../src/report/html.js';

const totals = { total_usd: null, days: 0, daily_average_usd: null, last_7_days_usd: null, prior_7_days_usd: null };

describe('report --source and empty reports', () => {
  it('a source the warehouse holds is reported on; another is refused with exit 2, naming those it holds', () => {
    expect(unknownSourceError(null, ['acme-eu'])).toBeNull();
    expect(unknownSourceError('acme-eu', ['acme-eu', 'acme-us'])).toBeNull();
    const error = unknownSourceError('nosuch', ['acme-eu', 'acme-us'])!;
    expect(error).toMatchObject({ code: 'CS_ERR_UNKNOWN_SOURCE', exitCode: 2 });
    expect(error.message).toBe('--source nosuch: the warehouse holds no source of that name; it holds acme-eu, acme-us.');
    expect(unknownSourceError('acme-ue', ['acme-eu', 'zeta'])!.hint).toBe('Did you mean --source acme-eu?');
    expect(unknownSourceError('x', [])!.message).toMatch(/holds no source yet/);
  });

  it('says plainly when there are no dates at all, never "Report for  to :"', () => {
    const none = { from: '', to: '', source: null, totals, daily: [], anomalies: [] };
    expect(periodText(none)).toBe('no dates (the warehouse holds no spend yet)');
    expect(reportSummary(none)).toBe(
      'warning: the warehouse holds no spend yet; the report says so. Run costsync sync first.\nReport: no dates with data, 0 open anomalies.\n',
    );
    expect(reportSummary({ ...none, from: '2024-01-01', to: '2024-01-31', source: 'acme-eu' })).toBe(
      'warning: no spend is stored for 2024-01-01 to 2024-01-31 (source acme-eu); the report says so. Sync those dates, or pick another range.\n' +
        'Report for 2024-01-01 to 2024-01-31 (source acme-eu): 0 provider-day(s), 0 open anomalies.\n',
    );
    expect(
      reportSummary({
        ...none,
        from: '2025-06-01',
        to: '2025-06-01',
        totals: { ...totals, days: 1 },
        daily: [{ date: '2025-06-01', provider: 'aws', cost_usd: 1 }],
      }),
    ).toBe('Report for 2025-06-01 to 2025-06-01: 1 provider-day(s), 0 open anomalies.\n');
  });
});

describe("the report's month-to-date card", () => {
  const mtd = { as_of: '2025-11-20', month_to_date_usd: 200, same_days_last_month_usd: 60, change_pct: null, no_change_reason: null };

  it('shows the reason, not a coloured percentage, where those days are not all synced', () => {
    const card = monthToDateCard({ ...mtd, no_change_reason: '6 of the 20 days 2025-10-01..2025-10-20 of last month are synced' });
    expect(card).toMatch(/<b class="none">no change given<\/b>/);
    expect(card).toMatch(/<span class="reason">6 of the 20 days 2025-10-01\.\.2025-10-20 of last month are synced<\/span>/);
    expect(card).not.toMatch(/class="up"|class="down"|%/);
  });

  it('colours a rise red and a fall green', () => {
    expect(monthToDateCard({ ...mtd, change_pct: 12.5 })).toMatch(/<b class="up">\+?12\.5%<\/b>/);
    expect(monthToDateCard({ ...mtd, change_pct: -3 })).toMatch(/<b class="down">/);
  });
});
