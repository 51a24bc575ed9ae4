import { describe, expect, it } from 'vitest';
import { reportSummary } from '../../src/commands/report.js';
import { periodText, unknownSourceError } from '../../src/report/data.js';

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
