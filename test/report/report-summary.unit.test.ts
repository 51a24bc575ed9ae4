import { describe, expect, it } from 'vitest';
import { reportSummary, runReportCommand } from '../../src/commands/report.js';
import { periodText, unknownSourceError } from '../../src/report/data.js';
import { monthToDateCard, recentCard } from '../../src/report/html.js';
import { check } from '../../src/settings.js';

const totals = {
  total_usd: null,
  days: 0,
  daily_average_usd: null,
  recent_days: 7,
  recent_from: '2024-01-25',
  recent_to: '2024-01-31',
  before_from: '2024-01-18',
  before_to: '2024-01-24',
  recent_usd: null,
  before_usd: null,
  change_pct: null,
  no_change_reason: '0 of the 7 days 2024-01-25..2024-01-31 have data',
};

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

  it('shows "–", not $0.00, for days not all synced', () => {
    const card = monthToDateCard({
      ...mtd,
      same_days_last_month_usd: null,
      no_change_reason: '0 of the 20 days 2025-10-01..2025-10-20 of last month are synced',
    });
    expect(card).toContain('$200.00 vs –');
    expect(card).not.toContain('$0.00');
  });

  it('colours a rise red and a fall green', () => {
    expect(monthToDateCard({ ...mtd, change_pct: 12.5 })).toMatch(/<b class="up">\+?12\.5%<\/b>/);
    expect(monthToDateCard({ ...mtd, change_pct: -3 })).toMatch(/<b class="down">/);
  });
});

describe("report's dates, checked as sync's --since/--until are", () => {
  // 2026-11-27 06:00 UTC; nothing is opened, as every date is refused before the warehouse is.
  const io = (err: string[]) => ({
    env: {},
    stdout: () => undefined,
    stderr: (t: string) => void err.push(t),
    isTTY: false,
    now: () => Date.parse('2026-11-27T06:00:00Z'),
  });
  const refused = async (args: Record<string, unknown>) => {
    const err: string[] = [];
    const code = await runReportCommand({ db: '/nonexistent/c.duckdb', ...args }, io(err));
    return { code, stderr: err.join('') };
  };

  it.each([
    [{ to: '2027-01-01' }, /--to \(2027-01-01\) is after today \(2026-11-27, UTC\)[\s\S]*hint: Leave --to out .*on or before 2026-11-27/],
    [{ from: '2027-01-01' }, /--from \(2027-01-01\) is after the last date 2026-11-27[\s\S]*hint: Pass a --from on or before today/],
    [
      { from: '2026-06-30', to: '2026-06-01' },
      /--from \(2026-06-30\) is after the last date 2026-06-01[\s\S]*hint: Pass a --from on or before --to/,
    ],
    [{ to: '2026-02-30' }, /--to must be a real calendar date as YYYY-MM-DD; got "2026-02-30"/],
    [{ from: '26-11-01' }, /--from must be a real calendar date as YYYY-MM-DD; got "26-11-01"/],
  ])('%o is refused with exit 2 naming the problem and the fix', async (args, message) => {
    const { code, stderr } = await refused(args);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it("are sync's own checks: the same code and exit as --until's and --since's", () => {
    expect(() => check.notFuture('--to', '2027-01-01', '2026-11-27', 'why.', 'fix')).toThrow(
      expect.objectContaining({ code: 'CS_ERR_CONFIG', exitCode: 2 }),
    );
    expect(() => check.notAfter('--from', '2026-06-30', '2026-06-01', 'fix')).toThrow(expect.objectContaining({ code: 'CS_ERR_CONFIG' }));
    expect(check.notAfter('--from', '2026-06-01', '2026-06-01', 'fix')).toBe('2026-06-01');
  });

  it('today and a one-day range pass the date checks (and reach the warehouse, which is missing here)', async () => {
    for (const args of [{ to: '2026-11-27' }, { from: '2026-11-26', to: '2026-11-26' }]) {
      const { code, stderr } = await refused(args);
      expect(code).toBe(2);
      expect(stderr).toMatch(/There is no warehouse at \/nonexistent\/c\.duckdb/);
    }
  });
});

describe("the report's card of its last days", () => {
  const day = { ...totals, total_usd: 40, days: 1, daily_average_usd: 40, recent_usd: 40, no_change_reason: null };

  it('at one day, covers that day against the day before and says so; its change coloured only when there is one', () => {
    const card = recentCard({
      ...day,
      recent_days: 1,
      recent_from: '2025-06-30',
      recent_to: '2025-06-30',
      before_from: '2025-06-29',
      before_to: '2025-06-29',
      before_usd: 50,
      change_pct: -20,
    });
    expect(card).toMatch(/<span>Last day against the day before<\/span><b class="down">-20\.0%<\/b>/);
    expect(card).toContain('<span class="span">2025-06-30</span><span class="span">vs 2025-06-29</span>');
  });

  it('with no data on the days before, gives no change and the reason, in grey (never a green dash)', () => {
    const card = recentCard({
      ...day,
      recent_days: 3,
      recent_from: '2025-06-28',
      recent_to: '2025-06-30',
      before_from: '2025-06-25',
      before_to: '2025-06-27',
      no_change_reason: '0 of the 3 days 2025-06-25..2025-06-27 before them have data',
    });
    expect(card).toMatch(/<span>Last 3 days against the 3 before<\/span><b class="none">no change given<\/b>/);
    expect(card).toContain('<span class="reason">0 of the 3 days 2025-06-25..2025-06-27 before them have data</span>');
    expect(card).toContain('<span class="span">2025-06-28..2025-06-30</span><span class="span">vs 2025-06-25..2025-06-27</span>');
    expect(card).not.toMatch(/class="(up|down)"|<b[^>]*>–/);
  });

  it('the month-to-date card with nothing to compare is grey too', () => {
    expect(monthToDateCard(null)).toMatch(/<b class="none">/);
    // With no synced day at all, it says why rather than a bare "– vs –".
    expect(monthToDateCard(null, { from: '2025-01-01', to: '2025-01-31' })).toContain(
      '<span class="reason">no synced days in 2025-01-01..2025-01-31</span>',
    );
    expect(monthToDateCard(null, { from: '', to: '' })).toContain('<span class="reason">no synced days yet</span>');
  });
});
