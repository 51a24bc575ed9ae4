import { describe, expect, it } from 'vitest';
import { anomalyRequests } from '../../src/sync/anomalies.js';
import { dryRunText, storedSpan, windowedStreamPlan, type KnownDays, type PlannedStream, type SourcePlan } from '../../src/sync/dry-run.js';
import { dollarsPerRow, expectedPages } from '../../src/sync/estimate.js';
import { lineItemsStream, rollupsStream, type WindowedStreamSpec } from '../../src/sync/streams.js';

const day = (date: string, storedRows: number | null, usd: number | null = null) => ({ date, storedRows, usd });

describe('sync --dry-run estimates', () => {
  it('counts pages from stored rows, else rollup dollars at the dollars per row; unknown without either', () => {
    // A window of 2,500 stored rows is 3 pages; one of 1,500 priced rows ($3,000 at $2 a row) is 2.
    expect(expectedPages([[day('2025-06-01', 2500)], [day('2025-06-02', null, 3000)]], 2)).toBe(5);
    expect(expectedPages([[day('2025-06-01', 2500), day('2025-06-02', null)]], 2)).toBeNull();
    expect(expectedPages([[day('2025-06-01', null, 100)]], null)).toBeNull();
  });

  it("counts each window's pages whole: a part page a window, and one request for an empty window", () => {
    // Three days of 200 rows in one window are one page, not a page and a half.
    expect(expectedPages([[day('2025-06-01', 200), day('2025-06-02', 200), day('2025-06-03', 200)]], null)).toBe(1);
    expect(expectedPages([[day('2025-06-01', 6000)], [day('2025-06-02', null, 0)]], 2)).toBe(7);
  });

  it("prices line items at a sample page's dollars per row, none when the page holds no cost", () => {
    expect(dollarsPerRow([1, 2, 3, 6])).toBe(3);
    expect(dollarsPerRow([5, -1, Number.NaN, 0])).toBe(1);
    expect(dollarsPerRow([])).toBeNull();
    expect(dollarsPerRow([-2, 1])).toBeNull();
  });

  it('counts anomalies as the collection does: one request when the first response is not full, else at least one more a severity', () => {
    expect(anomalyRequests(0)).toEqual({ requests: 1, minRequests: 1 });
    expect(anomalyRequests(99)).toEqual({ requests: 1, minRequests: 1 });
    expect(anomalyRequests(100)).toEqual({ requests: null, minRequests: 5 });
    expect(anomalyRequests(null)).toEqual({ requests: null, minRequests: 1 });
  });

  it('names the stored dates the lookback fetches again', () => {
    expect(storedSpan([day('2025-06-28', 40), day('2025-06-29', 40), day('2025-06-30', null)])).toBe('2025-06-28..2025-06-29 (2 days)');
    expect(storedSpan([day('2025-06-30', null)])).toBeNull();
    // The recheck's older windows come after the plan's own: the span still runs from the earliest date.
    expect(storedSpan([day('2025-06-29', 40), day('2025-06-30', 40), day('2025-06-01', 5)])).toBe(
      '2025-06-01, 2025-06-29..2025-06-30 (3 days)',
    );
  });

  it('prints each stream, the total at the rate limit, and that nothing was written', () => {
    const plan: SourcePlan = {
      source: 'default',
      notices: [],
      requests: 120,
      atLeast: true,
      seconds: 120,
      rateLimit: 60,
      dryRunRequests: { rollups: 1, lineItems: 1, anomalies: 1 },
      recheck: null,
      streams: [
        {
          stream: 'line_items',
          range: '2025-01-01..2025-06-30',
          windows: 7,
          resumed: false,
          requests: 110,
          minRequests: 14,
          refetches: null,
          basis: 'b',
          replaces: null,
          drops: null,
        },
        {
          stream: 'anomalies',
          range: '2025-01-01..2025-06-30',
          windows: 1,
          resumed: false,
          requests: null,
          minRequests: 1,
          refetches: null,
          basis: 'c',
          replaces: null,
          drops: null,
        },
      ],
    };
    const text = dryRunText([plan], false);
    expect(text).toMatch(/line_items: 2025-01-01\.\.2025-06-30, 7 window\(s\), about 110 request\(s\)/);
    expect(text).toMatch(/anomalies: .* at least 1 request/);
    // A stream that is only its least makes the total a least too, said as one.
    expect(text).toMatch(/\n {2}at least 120 request\(s\) in all \(anomalies may take more; see above\): 2 min at 60 requests a minute\n/);
    expect(text).not.toMatch(/about 120/);
    expect(text).toMatch(/this dry run made 1 line-items page, 1 rollups request, 1 anomalies request for the estimate/);
    expect(dryRunText([{ ...plan, atLeast: false, streams: plan.streams.slice(0, 1) }], false)).toMatch(
      /\n {2}about 120 request\(s\) in all: 2 min/,
    );
    expect(text).toMatch(/Dry run: nothing was written/);
    expect(text).not.toMatch(/recheck/);
  });

  it('lists the older dates the recheck found changed, and why; or that they all agree; or why it could not compare', () => {
    const base = { source: 'default', notices: [], requests: 1, atLeast: false, seconds: 1, rateLimit: 60, streams: [] };
    const made = { rollups: 3, lineItems: 0, anomalies: 0 };
    const changed = dryRunText(
      [
        {
          ...base,
          dryRunRequests: made,
          recheck: {
            range: '2026-10-01..2026-11-22',
            requests: 3,
            changed: [{ stream: 'line_items', dates: '2026-10-22', why: '2026-10-22 line_items aws: stored $1.00, API $2.00' }],
            failed: null,
          },
        },
      ],
      false,
    );
    expect(changed).toMatch(
      /recheck of 2026-10-01\.\.2026-11-22 \(3 rollups request\(s\)\): line_items synced again \(no longer equal to the API\): 2026-10-22 \[2026-10-22 line_items aws: stored \$1\.00, API \$2\.00\]/,
    );
    expect(changed).toMatch(/this dry run made 3 rollups requests/);
    const same = dryRunText(
      [{ ...base, dryRunRequests: made, recheck: { range: '2026-10-01..2026-11-22', requests: 3, changed: [], failed: null } }],
      false,
    );
    expect(same).toMatch(
      /recheck of 2026-10-01\.\.2026-11-22 \(3 rollups request\(s\)\): every date it compared equals the API's rollups \(dates this run syncs anyway are not compared\)/,
    );
    const failed = dryRunText(
      [{ ...base, dryRunRequests: made, recheck: { range: 'a..b', requests: 3, changed: [], failed: 'HTTP 403' } }],
      false,
    );
    expect(failed).toMatch(/could not compare with the API's rollups \(HTTP 403\)/);
  });

  it('does not say to run without --dry-run when a source could not be planned: the run would fail the same way', () => {
    const plan: SourcePlan = {
      source: 'eu',
      notices: [],
      requests: 1,
      atLeast: false,
      seconds: 1,
      rateLimit: 60,
      dryRunRequests: { rollups: 0, lineItems: 0, anomalies: 1 },
      recheck: null,
      streams: [],
    };
    const alone = dryRunText([], false, ['default']);
    expect(alone).toBe(
      'Dry run: nothing was written. It could not be planned; the run would fail the same way: fix what the error names, then try the dry run again.\n',
    );
    const several = dryRunText([plan], true, ['us', 'apac']);
    expect(several).toMatch(/^Source eu:\n/);
    expect(several).toMatch(/\nDry run: nothing was written\. Not planned: us, apac; their runs would fail the same way/);
    expect(several).not.toMatch(/without --dry-run/);
    expect(dryRunText([plan], false)).toMatch(/Run the same command without --dry-run to sync\.\n$/);
  });

  it('names what a full refresh replaces and what --drop-before deletes', () => {
    const plan: SourcePlan = {
      source: 'default',
      notices: [],
      requests: 10,
      atLeast: false,
      seconds: 10,
      rateLimit: 60,
      dryRunRequests: { rollups: 0, lineItems: 0, anomalies: 0 },
      recheck: null,
      streams: [
        {
          stream: 'line_items',
          range: '2025-01-01..2025-06-30',
          windows: 7,
          resumed: false,
          requests: 10,
          minRequests: 7,
          refetches: '2025-01-01..2025-06-30 (181 days)',
          basis: 'b',
          replaces: '2025-02-01..2025-06-30',
          drops: '40 row(s) dated 2025-01-01..2025-01-31',
        },
      ],
    };
    const text = dryRunText([plan], false);
    expect(text).toMatch(/deleted first \(--drop-before\): 40 row\(s\) dated 2025-01-01\.\.2025-01-31/);
    expect(text).toMatch(/replaced \(--full-refresh\): every stored date of 2025-02-01\.\.2025-06-30; nothing outside it is deleted/);
  });
});

describe("sync --dry-run asks each stream's spec for its requests", () => {
  // Two windows of three days each, the second one of older dates the recheck found; nothing read of them.
  const planned: PlannedStream = {
    plan: { from: '2025-06-01', to: '2025-06-03' },
    resumed: false,
    todo: [
      { start: '2025-06-01', end: '2025-06-03' },
      { start: '2025-05-01', end: '2025-05-03', recheck: true },
    ],
    replaces: null,
    drops: null,
  };
  const unread: KnownDays = {
    days: [
      ['2025-06-01', '2025-06-02', '2025-06-03'],
      ['2025-05-01', '2025-05-02', '2025-05-03'],
    ].map((dates) => dates.map((date) => day(date, null))),
    usdPerRow: null,
    basis: '',
  };
  const checked = { checked: true, providerRollupsShared: true };
  const unchecked = { checked: false, providerRollupsShared: false };
  // The plan is made from the spec alone: a spec that fetched anything would fail the test.
  const noFetch = (): never => {
    throw new Error('the dry run fetched a page');
  };

  it("counts a fixed-page stream's requests from the pages a window its spec declares", () => {
    const rollups = windowedStreamPlan({ ...rollupsStream, fetchPage: noFetch }, planned, unread, checked);
    expect(rollups).toMatchObject({
      stream: 'rollups',
      windows: 2,
      older: 1,
      requests: 4,
      minRequests: 4,
      basis: "2 request(s) a window: the provider view comes with the line items' check",
    });
    // A spec of five pages a window (one of them the line items' check's when both are checked) changes the count.
    const five: WindowedStreamSpec = { ...rollupsStream, size: { pagesPerWindow: 5 }, fetchPage: noFetch };
    expect(windowedStreamPlan(five, planned, unread, checked)).toMatchObject({ requests: 8 });
    expect(windowedStreamPlan(five, planned, unread, unchecked)).toMatchObject({
      requests: 10,
      minRequests: 10,
      basis: '5 request(s) a window',
    });
  });

  it('does not count again the pages a killed run staged: a window fetched whole asks none, one begun the pages after its last', () => {
    const stored: KnownDays = { ...unread, days: unread.days.map((w) => w.map((d) => ({ ...d, storedRows: 2500 }))) };
    const items = { ...lineItemsStream, fetchPage: noFetch };
    // 7,500 rows a window: 8 pages each, 16 in all, with the two checks.
    expect(windowedStreamPlan(items, planned, stored, checked)).toMatchObject({ requests: 18, minRequests: 4 });
    const resumedPlan = {
      ...planned,
      resumed: true,
      todo: [
        { ...planned.todo[0]!, page: 5, fetched: false },
        { ...planned.todo[1]!, page: 8, fetched: true },
      ],
    };
    expect(windowedStreamPlan(items, resumedPlan, stored, checked)).toMatchObject({ requests: 3 + 2, minRequests: 1 + 2 });
    // The rollups: a grouping a page; the provider view staged is not asked again.
    const rollups = { ...rollupsStream, fetchPage: noFetch };
    const begun = {
      ...planned,
      todo: [
        { ...planned.todo[0]!, page: 1, fetched: false },
        { ...planned.todo[1]!, page: 3, fetched: true },
      ],
    };
    expect(windowedStreamPlan(rollups, begun, unread, checked)).toMatchObject({ requests: 2 });
  });

  it("says which of the line items' requests go to the rollups endpoint (each window's check, the progress estimate)", () => {
    const items = windowedStreamPlan({ ...lineItemsStream, fetchPage: noFetch }, planned, unread, checked);
    expect(items).toMatchObject({
      requests: null,
      minRequests: 5,
      endpoints: "3 of them to the rollups endpoint: 2 for the windows' checks, 1 for the progress estimate",
    });
    const plan: SourcePlan = {
      source: 'default',
      streams: [items],
      notices: [],
      requests: 5,
      atLeast: true,
      seconds: 5,
      rateLimit: 60,
      dryRunRequests: { rollups: 0, lineItems: 0, anomalies: 0 },
      recheck: null,
    };
    expect(dryRunText([plan], false)).toContain(
      "at least 5 request(s) (3 of them to the rollups endpoint: 2 for the windows' checks, 1 for the progress estimate)",
    );
    expect(windowedStreamPlan({ ...lineItemsStream, fetchPage: noFetch }, planned, unread, unchecked).endpoints).toBe(
      '1 of them to the rollups endpoint: 1 for the progress estimate',
    );
  });

  it("takes a new stream's count and basis from its own estimateRequests, 'at least' when it cannot tell", () => {
    const asked: unknown[] = [];
    const spec: WindowedStreamSpec = {
      ...rollupsStream,
      fetchPage: noFetch,
      estimateRequests: (windows, run) => {
        asked.push({ windows: windows.days.length, resumed: windows.resumed, run });
        return { requests: null, minRequests: 7 * windows.days.length, basis: 'seven a window at least' };
      },
    };
    const plan = windowedStreamPlan(spec, { ...planned, resumed: true }, unread, unchecked);
    expect(asked).toEqual([{ windows: 2, resumed: true, run: unchecked }]);
    expect(plan).toMatchObject({ requests: null, minRequests: 14, basis: 'seven a window at least' });
    const text = dryRunText(
      [
        {
          source: 'default',
          streams: [plan],
          notices: [],
          requests: 14,
          atLeast: true,
          seconds: 14,
          rateLimit: 60,
          dryRunRequests: { rollups: 0, lineItems: 0, anomalies: 0 },
          recheck: null,
        },
      ],
      false,
    );
    expect(text).toMatch(
      /rollups: 2025-06-01\.\.2025-06-03, 1 window\(s\), then 1 of older dates \(below\) \(resuming an unfinished plan\), at least 14 request\(s\) \[seven a window at least\]/,
    );
  });

  it("counts line items' pages from the dates' rows, with a check a window, and keeps what was read as the basis", () => {
    // 2,500 stored rows on the first window's date (3 pages); $1,000 of rollups at $2 a row on the older one's (1 page).
    const known: KnownDays = {
      days: [[day('2025-06-01', 2500)], [day('2025-05-01', null, 1000)]],
      usdPerRow: 2,
      basis: 'rows stored, and the rollups',
    };
    const plan = windowedStreamPlan({ ...lineItemsStream, fetchPage: noFetch }, planned, known, checked);
    expect(plan).toMatchObject({ requests: 4 + 2, minRequests: 2 + 2, basis: known.basis, refetches: '2025-06-01 (1 day)' });
    expect(windowedStreamPlan({ ...lineItemsStream, fetchPage: noFetch }, planned, known, unchecked)).toMatchObject({ requests: 4 });
  });
});
