// The report at one day, one month and a year, read in Chromium, in the slow tier (a `.slow.test.ts`):
// report.test.ts keeps its render, its numbers and its labels in Chromium in `npm test`.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import { addDays, daysInclusive } from '../../src/dates.js';
import { ARTIFACTS, chromiumForFile, closePages } from '../support/chromium.js';
import { queryDb, run, withEmulator, withTempDir, syncCommand } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const sharedChromium = chromiumForFile();

interface Box {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
  text: string;
  label: string;
}
const meet = (a: Box, b: Box, gap = 0) => a.x0 < b.x1 + gap && b.x0 < a.x1 + gap && a.y0 < b.y1 + gap && b.y0 < a.y1 + gap;
/** `a` inside `b`, to half a pixel (anti-aliasing). */
const inside = (a: Box, b: Pick<Box, 'x0' | 'x1' | 'y0' | 'y1'>) =>
  a.x0 >= b.x0 - 0.5 && a.x1 <= b.x1 + 0.5 && a.y0 >= b.y0 - 0.5 && a.y1 <= b.y1 + 0.5;
const field = (label: string, name: string) => new RegExp(`(?:^|; )${name}: ([^;]*)`).exec(label)?.[1];
/** "$1,234.56" or "-$1.00" as a number; "+12.5%" too. */
const amount = (text: string) => Number(text.replace(/[$,%+]/g, ''));

/** Each element's box on the page as Chromium drew it, with its text and aria-label. */
function boxes(page: Page, selector: string): Promise<Box[]> {
  return page.locator(selector).evaluateAll((els) =>
    els.map((e) => {
      const r = e.getBoundingClientRect();
      return { x0: r.left, x1: r.right, y0: r.top, y1: r.bottom, text: e.textContent ?? '', label: e.getAttribute('aria-label') ?? '' };
    }),
  );
}

/**
 * What a person sees of the layout: tick labels neither repeated side by side nor overlapping; anomaly
 * labels apart, each inside its provider's band with a leader line to its mark; no mark outside its plot.
 */
async function expectReadableLayout(page: Page, what: string): Promise<void> {
  for (const [chart, axis] of [
    ['#chart-daily', 'X-axis'],
    ['#chart-monthly', 'X-axis'],
    ['#chart-daily', 'Y-axis'],
  ] as const) {
    for (const group of await page.locator(`${chart} g[aria-label^="${axis}"]`).all()) {
      const ticks = await group.locator('.role-axis-label text').evaluateAll((els) =>
        els.map((e) => {
          const r = e.getBoundingClientRect();
          return { x0: r.left, x1: r.right, y0: r.top, y1: r.bottom, text: e.textContent ?? '', label: '' };
        }),
      );
      expect(ticks.length, `${what} ${chart} ${axis}`).toBeGreaterThan(0);
      for (const [i, t] of ticks.entries()) {
        if (i > 0) expect(t.text, `${what} ${chart} ${axis}: adjacent ticks`).not.toBe(ticks[i - 1]!.text);
        for (const u of ticks.slice(i + 1)) expect(meet(t, u), `${what} ${chart} ${axis}: ${t.text} / ${u.text}`).toBe(false);
      }
    }
  }
  const bands = await boxes(page, '#chart-daily [aria-roledescription="rect mark"]');
  expect(bands.length, what).toBeGreaterThan(0);
  const plot = {
    x0: Math.min(...bands.map((b) => b.x0)),
    x1: Math.max(...bands.map((b) => b.x1)),
    y0: Math.min(...bands.map((b) => b.y0)),
    y1: Math.max(...bands.map((b) => b.y1)),
  };
  const points = await boxes(page, '#chart-daily [aria-roledescription="point"]');
  expect(points.length, `${what}: anomaly marks drawn`).toBeGreaterThan(0);
  for (const p of points) expect(inside(p, plot), `${what}: mark ${p.label} inside the plot`).toBe(true);
  // Every open anomaly's mark seen: one per row of the table, none on another's centre, none covered by more than a sliver.
  expect(points, what).toHaveLength(await page.locator('#anomalies tbody tr').count());
  for (const [i, p] of points.entries()) {
    for (const q of points.slice(i + 1)) {
      const [pc, qc] = [p, q].map((b) => ({ x: (b.x0 + b.x1) / 2, y: (b.y0 + b.y1) / 2 }));
      expect(Math.hypot(pc!.x - qc!.x, pc!.y - qc!.y), `${what}: ${p.label} / ${q.label}`).toBeGreaterThan(2);
      const shared = Math.max(0, Math.min(p.x1, q.x1) - Math.max(p.x0, q.x0)) * Math.max(0, Math.min(p.y1, q.y1) - Math.max(p.y0, q.y0));
      const smaller = Math.min((p.x1 - p.x0) * (p.y1 - p.y0), (q.x1 - q.x0) * (q.y1 - q.y0));
      expect(shared / smaller, `${what}: ${p.label} / ${q.label}`).toBeLessThanOrEqual(0.35);
    }
  }
  // The bars share the anomaly panel's x: none reaches past either end of it.
  for (const bar of await boxes(page, '#chart-daily [aria-roledescription="bar"]')) {
    expect(bar.x0 >= plot.x0 - 0.5 && bar.x1 <= plot.x1 + 0.5, `${what}: bar ${bar.label}`).toBe(true);
  }
  const labels = await boxes(page, '#chart-daily [aria-roledescription="text mark"]');
  const leaders = await boxes(page, '#chart-daily .mark-rule.role-mark line');
  // As many labels as the panel's title says; a label only where it covers no other label and no anomaly's mark,
  // so a year's dense rows may leave none (the table lists every anomaly).
  const title = (await page.locator('#chart-daily text').allTextContents()).map((t) =>
    /Open anomalies by provider \(\d+; (?:the (\d) largest|(\d) of the \d largest) labelled\)/.exec(t),
  );
  const said = title.find((m) => m !== null);
  expect(said, `${what}: the anomaly panel's title`).toBeDefined();
  expect(labels.length, `${what}: labels drawn`).toBe(Number(said![1] ?? said![2]));
  if (what !== '1year') expect(labels.length, `${what}: labels drawn`).toBeGreaterThan(0);
  for (const l of labels) for (const p of points) expect(meet(l, p), `${what}: ${l.text} over ${p.label}`).toBe(false);
  expect(leaders).toHaveLength(labels.length);
  for (const [i, l] of labels.entries()) {
    for (const m of labels.slice(i + 1)) expect(meet(l, m), `${what}: ${l.text} / ${m.text}`).toBe(false);
    const provider = field(l.label, 'provider')!;
    const band = bands.find((b) => b.label === `${provider} row`)!;
    expect(inside(l, band), `${what}: ${l.text} inside the ${provider} row`).toBe(true);
    // A leader line runs from the label to a mark of its provider and day.
    const mark = points.filter((p) => field(p.label, 'provider') === provider && field(p.label, 'at') === field(l.label, 'at'));
    expect(
      leaders.some((line) => meet(line, l, 3) && mark.some((p) => meet(line, p))),
      `${what}: a leader line from ${l.text} to its mark`,
    ).toBe(true);
  }
  // The run-rate label over its own month's bar only.
  const monthBars = await boxes(page, '#chart-monthly [aria-roledescription="bar"]');
  for (const t of await boxes(page, '#chart-monthly [aria-roledescription="text mark"]')) {
    for (const bar of monthBars.filter((b) => field(b.label, 'month') !== field(t.label, 'month')))
      expect(meet(t, bar), `${what}: ${t.text} / the bar of ${field(bar.label, 'month')}`).toBe(false);
  }
  // Every chart's marks, labels and legends inside its picture.
  for (const id of ['#chart-daily', '#chart-services', '#chart-monthly']) {
    const [svg] = await boxes(page, `${id} svg`);
    for (const b of await boxes(page, `${id} svg [role="graphics-symbol"], ${id} svg text`))
      expect(inside(b, svg!), `${what} ${id}: ${b.label || b.text}`).toBe(true);
  }
}

/** The views' numbers for a report of `from`..`to`: what its cards and movers table must show. */
async function viewNumbers(db: string, from: string, to: string) {
  const n = Math.min(7, daysInclusive(from, to));
  const recent = [addDays(to, -(n - 1)), to] as const;
  const before = [addDays(to, -(2 * n - 1)), addDays(to, -n)] as const;
  const wh = await openReadOnly(db);
  try {
    const sum = async (view: string, [a, b]: readonly [string, string]) =>
      (
        (await wh.sql<{ usd: number | null; days: number }>(
          `SELECT sum(cost_usd) AS usd, count(DISTINCT date)::INTEGER AS days FROM ${view} WHERE date BETWEEN '${a}' AND '${b}'`,
        )) as [{ usd: number | null; days: number }]
      )[0];
    const total = await sum('daily_spend_by_provider', [from, to]);
    // Month to date as of the report's last date (the view's own day when that is earlier): days 1..d of its
    // month against 1..d of the month before, summed here from the daily view, not by the report's SQL.
    const [view] = await wh.sql<{ as_of: string }>("SELECT strftime(max(as_of), '%Y-%m-%d') AS as_of FROM month_to_date");
    const asOf = view!.as_of < to ? view!.as_of : to;
    const [mtd] = await wh.sql<{ month: number; last: number }>(
      `SELECT sum(cost_usd) FILTER (WHERE date >= date_trunc('month', DATE '${asOf}')) AS month,
              sum(cost_usd) FILTER (WHERE date < date_trunc('month', DATE '${asOf}')) AS last
       FROM daily_spend_by_provider
       WHERE date BETWEEN date_trunc('month', DATE '${asOf}') - INTERVAL 1 MONTH AND DATE '${asOf}'
         AND NOT (date > DATE '${asOf}' - INTERVAL 1 MONTH AND date < date_trunc('month', DATE '${asOf}'))`,
    );
    const services = await wh.sql<{ service: string; recent: number; before: number }>(
      `SELECT service, coalesce(sum(cost_usd) FILTER (WHERE date >= '${recent[0]}'), 0) AS recent,
              coalesce(sum(cost_usd) FILTER (WHERE date <= '${before[1]}'), 0) AS before
       FROM daily_spend_by_service WHERE date BETWEEN '${before[0]}' AND '${recent[1]}' GROUP BY service`,
    );
    return {
      n,
      recent,
      before,
      total: total.usd!,
      average: total.usd! / total.days,
      recentUsd: (await sum('daily_spend_by_provider', recent)).usd!,
      beforeUsd: (await sum('daily_spend_by_provider', before)).usd!,
      mtd: { ...mtd!, asOf },
      services: new Map(services.map((s) => [s.service, s])),
    };
  } finally {
    wh.close();
  }
}

describe('the report at one day, one month and a year', () => {
  it('shows on its cards and movers what the views hold for its dates, readable and whole in Chromium', async () => {
    // Ending mid-month: the year's first month is partial and its last to date, the longest month labels.
    const year = { startDate: '2024-06-21', endDate: '2025-06-20' };
    await withEmulator({ ...year, rowsPerDay: 12, anomaliesPerDay: 1, clock }, async ({ url }) =>
      withTempDir(async (dir) => {
        const db = join(dir, 'c.duckdb');
        const sync = await run(
          syncCommand(url, dir, ['--start-date', year.startDate, '--until', year.endDate, '--rate-limit', '100000', '--quiet']),
          {
            COSTSYNC_API_KEY: 'demo-key',
          },
        );
        expect(sync.code, sync.stderr).toBe(ExitCode.OK);
        const browser = await sharedChromium();
        try {
          // The one day: the latest with the most open anomalies (and a day with data before it), so its marks and labels are drawn too.
          const [{ day }] = (await queryDb<{ day: string }>(
            db,
            `SELECT strftime(detected_date::DATE, '%Y-%m-%d') AS day FROM open_anomalies WHERE detected_date::DATE > '${year.startDate}'::DATE + 14
             GROUP BY 1 ORDER BY count(*) DESC, 1 DESC LIMIT 1`,
          )) as [{ day: string }];
          for (const [name, from, to] of [
            ['1day', day, day],
            ['1month', '2025-05-21', '2025-06-20'],
            ['1year', year.startDate, year.endDate],
          ] as const) {
            const path = join(dir, `${name}.html`);
            const report = await run(['report', '--db', db, '--out', path, '--from', from, '--to', to]);
            expect(report.code, report.stderr).toBe(ExitCode.OK);
            // Nothing but the summary on stderr: no Vega-Lite warning about the specs.
            expect(report.stderr, name).not.toMatch(/WARN/);
            const want = await viewNumbers(db, from, to);
            const page = await browser.newPage({ viewport: { width: 1100, height: 1500 } });
            await page.goto(pathToFileURL(path).href);
            const text = (selector: string) => page.locator(selector).innerText();
            expect(amount(await text('#total')), name).toBeCloseTo(want.total, 2);
            expect(amount(await text('#average')), name).toBeCloseTo(want.average, 2);
            // The card covers min(7, the period's days) days, names them, and compares them with as many before.
            const recent = await text('#recent');
            // Each span on its own line, never broken inside a date.
            expect(recent, name).toContain(
              want.n === 1
                ? `${to}\nvs ${want.before[0]}`
                : `${want.recent[0]}..${want.recent[1]}\nvs ${want.before[0]}..${want.before[1]}`,
            );
            const spanLines = await page.locator('#recent .span').evaluateAll((els) =>
              els.map((e) => {
                const range = e.ownerDocument.createRange();
                range.selectNodeContents(e);
                return range.getClientRects().length;
              }),
            );
            expect(spanLines, name).toEqual([1, 1]);
            const [shown, against] = /(\S+) vs (\S+)\n/.exec(recent)!.slice(1).map(amount) as [number, number];
            expect(shown, name).toBeCloseTo(want.recentUsd, 2);
            expect(against, name).toBeCloseTo(want.beforeUsd, 2);
            expect(amount(await text('#recent b')), name).toBeCloseTo((100 * (want.recentUsd - want.beforeUsd)) / want.beforeUsd, 1);
            const mtd = /(\S+) vs (\S+),/
              .exec(await text('#mtd'))!
              .slice(1)
              .map(amount);
            expect(mtd[0], name).toBeCloseTo(want.mtd.month, 2);
            expect(mtd[1], name).toBeCloseTo(want.mtd.last, 2);
            expect(await text('#mtd'), name).toContain(`as of ${want.mtd.asOf}`);
            // The movers table: the same dates as the card, each service's numbers the view's.
            expect(await text('#movers-title'), name).toContain(want.recent[1]);
            const movers = await page
              .locator('#movers tbody tr')
              .evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent ?? '')));
            expect(movers.length, name).toBeGreaterThan(0);
            for (const [service, last, before] of movers) {
              expect(amount(last), `${name} ${service}`).toBeCloseTo(want.services.get(service)!.recent, 2);
              expect(amount(before), `${name} ${service}`).toBeCloseTo(want.services.get(service)!.before, 2);
            }
            await expectReadableLayout(page, name);
            mkdirSync(ARTIFACTS, { recursive: true });
            await page.screenshot({ path: join(ARTIFACTS, `report-${name}.png`), fullPage: true });
            await page.close();
          }
        } finally {
          await closePages(browser);
        }
      }),
    );
  });
});
