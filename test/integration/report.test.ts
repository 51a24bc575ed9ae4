import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { openReadOnly, withWarehouse } from '../../src/storage/duckdb.js';
import { addDays, daysInclusive } from '../../src/dates.js';
import { formatUsd } from '../../src/money.js';
import { dailySpendSpec, monthlySpec, renderSvg, topServicesSpec } from '../../src/report/charts.js';
import type { ReportData } from '../../src/report/data.js';
import { reportHtml } from '../../src/report/html.js';
import { inDirectory, queryDb, run, withEmulator, withTempDir, SPAN, syncCommand, spanFlags } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const CHROMIUM = process.env.COSTSYNC_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

/** One Chromium for this file's tests, launched at first use and closed after them: a launch costs about a second of CPU. */
let chromiumBrowser: Promise<Browser> | undefined;
function sharedChromium(): Promise<Browser> {
  chromiumBrowser ??= chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  return chromiumBrowser;
}
afterAll(async () => {
  // A launch that failed has failed its tests already.
  await (await chromiumBrowser?.catch(() => undefined))?.close();
});

/** Closes the pages (each in its own context) a test opened, leaving the shared browser for the next. */
async function closePages(browser: Browser): Promise<void> {
  await Promise.all(browser.contexts().map((context) => context.close()));
}

/** A synced warehouse of June 2025 and its report, written by the CLI. */
async function withReport<T>(fn: (ctx: { db: string; html: string; path: string; stdout: string }) => Promise<T>): Promise<T> {
  return withEmulator({ ...SPAN, rowsPerDay: 60, anomaliesPerDay: 3, clock }, async ({ url }) =>
    withTempDir(async (dir) => {
      const db = join(dir, 'c.duckdb');
      const sync = await run(syncCommand(url, dir, [...spanFlags(), '--quiet']), { COSTSYNC_API_KEY: 'demo-key' });
      expect(sync.code, sync.stderr).toBe(ExitCode.OK);
      const path = join(dir, 'report.html');
      const report = await run(['report', '--db', db, '--out', path, '--from', '2025-06-01', '--to', '2025-06-30']);
      expect(report.code, report.stderr).toBe(ExitCode.OK);
      return fn({ db, html: readFileSync(path, 'utf8'), path, stdout: report.stdout });
    }),
  );
}

async function expectedSeries(db: string) {
  const wh = await openReadOnly(db);
  try {
    const providers = await wh.sql<{ provider: string; days: number }>(
      "SELECT provider, count(*)::INTEGER AS days FROM daily_spend_by_provider WHERE date BETWEEN '2025-06-01' AND '2025-06-30' GROUP BY 1 ORDER BY 1",
    );
    const [{ n }] = (await wh.sql<{ n: number }>(
      "SELECT count(*)::INTEGER AS n FROM open_anomalies WHERE detected_date::DATE BETWEEN '2025-06-01' AND '2025-06-30'",
    )) as [{ n: number }];
    return { providers, openAnomalies: n };
  } finally {
    wh.close();
  }
}

describe('costsync report', () => {
  it('writes one self-contained HTML file: charts as inline SVG, no script, nothing fetched', async () => {
    await withReport(async ({ html, path, stdout }) => {
      expect(stdout.trim()).toBe(path);
      expect(html.match(/<svg/g)).toHaveLength(3);
      expect(html).not.toMatch(/<script/i);
      expect(html).not.toMatch(/(src|href)="https?:/i);
      expect(html).toMatch(/<b id="total">\$[\d,]+\.\d\d<\/b>/);
      expect(html).toContain('2025-06-01 to 2025-06-30');
      // The open anomalies name their type; one source, so no source column.
      const head = /<table id="anomalies"><thead><tr>(.*?)<\/tr>/.exec(html)![1]!;
      expect(head).toContain('<th>Type</th>');
      expect(head).not.toContain('<th>Source</th>');
      expect(html).toMatch(/<th>Run-rate \(projected to month end\)<\/th>/);
    });
  });

  it('without a warehouse, names the file it looked for and how to make one, exits 2 and writes no report', async () => {
    await withTempDir(async (dir) =>
      inDirectory(dir, async () => {
        const result = await run(['report']);
        expect(result.code).toBe(ExitCode.USAGE);
        expect(result.stderr).toContain(`There is no warehouse at ${join(process.cwd(), 'costs.duckdb')}: no such file`);
        expect(result.stderr).toMatch(
          /hint: Run costsync sync with the same --db to make one, or pass --db .*\(for the demo's, --db demo\.duckdb/,
        );
        expect(readdirSync(dir)).toEqual([]);
      }),
    );
  });

  it('projects a month in progress to its end, refuses --from after --to, and says when a range holds no data', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 30, anomaliesPerDay: 1, clock }, async ({ url }) =>
      withTempDir(async (dir) => {
        const db = join(dir, 'c.duckdb');
        const sync = await run(
          syncCommand(url, dir, ['--start-date', SPAN.startDate, '--until', '2025-06-15', '--rate-limit', '100000', '--quiet']),
          { COSTSYNC_API_KEY: 'demo-key' },
        );
        expect(sync.code, sync.stderr).toBe(ExitCode.OK);
        const [{ usd }] = (await queryDb<{ usd: number }>(db, 'SELECT sum(net_amount_usd) AS usd FROM line_items')) as [{ usd: number }];
        const report = await run(['report', '--db', db, '--out', join(dir, 'mid.html')]);
        expect(report.code, report.stderr).toBe(ExitCode.OK);
        // With no --from, the period starts at the first date with data, not 89 days back over days with none.
        expect(report.stderr).toMatch(/Report for 2025-06-01 to 2025-06-15:/);
        // June holds 15 days of data: its run-rate is their spend at that pace for 30 days, labelled as such.
        const html = readFileSync(join(dir, 'mid.html'), 'utf8');
        const row = /<tr><td>2025-06 \(to date\), through 2025-06-15<\/td><td>([^<]+)<\/td><td>([^<]+)<\/td>/.exec(html)!;
        expect(row[2]).toBe(formatUsd(Math.round((usd / 15) * 30 * 100) / 100));
        expect(html).toMatch(/run-rate \$[\d,]+/);
        const reversed = await run(['report', '--db', db, '--out', join(dir, 'r.html'), '--from', '2025-06-30', '--to', '2025-06-01']);
        expect(reversed.code).toBe(ExitCode.USAGE);
        expect(reversed.stderr).toMatch(/--from \(2025-06-30\) is after the last date 2025-06-01/);
        expect(existsSync(join(dir, 'r.html'))).toBe(false);
        // A future --to is refused as sync refuses a future --until, naming today and the fix.
        const future = await run(['report', '--db', db, '--out', join(dir, 'f.html'), '--to', '2999-01-01']);
        expect(future.code).toBe(ExitCode.USAGE);
        expect(future.stderr).toMatch(/--to \(2999-01-01\) is after today \(\d{4}-\d\d-\d\d, UTC\)[\s\S]*hint: Leave --to out/);
        expect(existsSync(join(dir, 'f.html'))).toBe(false);
        // A --from alone after the latest day with data is a period of that day, not one that ends before it starts.
        const late = await run(['report', '--db', db, '--out', join(dir, 'l.html'), '--from', '2025-06-20']);
        expect(late.code, late.stderr).toBe(ExitCode.OK);
        expect(late.stderr).toMatch(/no spend is stored for 2025-06-20 to 2025-06-20/);
        const empty = await run(['report', '--db', db, '--out', join(dir, 'e.html'), '--from', '2024-01-01', '--to', '2024-01-31']);
        expect(empty.code).toBe(ExitCode.OK);
        expect(empty.stderr).toMatch(/no spend is stored for 2024-01-01 to 2024-01-31/);
        expect(readFileSync(join(dir, 'e.html'), 'utf8')).toMatch(/id="no-data">No spend is stored for 2024-01-01 to 2024-01-31/);
        // A source the warehouse does not hold is refused, naming the ones it does (not an empty report).
        const nosuch = await run(['report', '--db', db, '--out', join(dir, 'n.html'), '--source', 'nosuch']);
        expect(nosuch.code).toBe(ExitCode.USAGE);
        expect(nosuch.stderr).toMatch(/--source nosuch: the warehouse holds no source of that name; it holds default\./);
        expect(existsSync(join(dir, 'n.html'))).toBe(false);
        // A warehouse with no data at all: said plainly, never "Report for  to :".
        await withWarehouse(join(dir, 'none.duckdb'), async () => undefined);
        const none = await run(['report', '--db', join(dir, 'none.duckdb'), '--out', join(dir, 'none.html')]);
        expect(none.code, none.stderr).toBe(ExitCode.OK);
        expect(none.stderr).toMatch(/the warehouse holds no spend yet/);
        expect(none.stderr).not.toMatch(/ to :| to \(any date\)/);
        expect(readFileSync(join(dir, 'none.html'), 'utf8')).toMatch(
          /<title>Cloud spend, no dates \(the warehouse holds no spend yet\)<\/title>/,
        );
      }),
    );
  });

  it('renders in headless Chromium with a series per provider and the open anomalies on the timeline', async () => {
    await withReport(async ({ db, path }) => {
      const expected = await expectedSeries(db);
      const browser = await sharedChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1100, height: 1500 } });
        await page.goto(pathToFileURL(path).href);
        // Every chart drew at a real size.
        for (const id of ['#chart-daily', '#chart-services', '#chart-monthly']) {
          const box = await page.locator(`${id} svg`).boundingBox();
          expect(box!.width, id).toBeGreaterThan(300);
          expect(box!.height, id).toBeGreaterThan(100);
        }
        // A stacked bar per provider and day, named by provider; the legend lists each provider.
        const bars = await page
          .locator('#chart-daily [aria-roledescription="bar"]')
          .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
        for (const { provider, days } of expected.providers) {
          expect(
            bars.filter((label) => label.includes(`Provider: ${provider};`)),
            provider,
          ).toHaveLength(days);
        }
        const legend = await page.locator('#chart-daily [aria-roledescription="legend"]').allTextContents();
        for (const { provider } of expected.providers) expect(legend.join(' ')).toContain(provider);
        // One mark per open anomaly on its provider's row (not a full-height line across the bars), and the same number in the table.
        const points = await page
          .locator('#chart-daily [aria-roledescription="point"]')
          .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
        expect(points).toHaveLength(expected.openAnomalies);
        for (const label of points)
          expect(label).toMatch(/provider: \w+; Severity: (low|medium|high|critical).*Anomaly: (above|below) expected/);
        expect(await page.locator('#chart-daily [aria-roledescription="rule mark"]').count()).toBe(0);
        // At most a handful labelled.
        expect(await page.locator('#chart-daily [aria-roledescription="text mark"]').count()).toBeLessThanOrEqual(5);
        expect(await page.locator('#anomalies tbody tr').count()).toBe(expected.openAnomalies);
        // Legends and axis labels whole: nothing cut off with an ellipsis.
        for (const id of ['#chart-daily', '#chart-services', '#chart-monthly']) {
          expect((await page.locator(`${id} svg`).textContent()) ?? '', id).not.toContain('…');
        }
        expect(await page.locator('#chart-services [aria-roledescription="bar"]').count()).toBe(10);
        mkdirSync(ARTIFACTS, { recursive: true });
        await page.screenshot({ path: join(ARTIFACTS, 'report.png'), fullPage: true });
        expect(existsSync(join(ARTIFACTS, 'report.png'))).toBe(true);
      } finally {
        await closePages(browser);
      }
    });
  });
});

/** WCAG's contrast ratio of two colours (`#rrggbb`), from their relative luminance. */
function contrast(a: string, b: string): number {
  const luminance = (hex: string) => {
    const [r, g, bl] = [1, 3, 5].map((i) => {
      const c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    }) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** A colour drawn at `opacity` over the white page, as the eye gets it. */
function overWhite(hex: string, opacity: number): string {
  return `#${[1, 3, 5]
    .map((i) =>
      Math.round(255 - (255 - parseInt(hex.slice(i, i + 2), 16)) * opacity)
        .toString(16)
        .padStart(2, '0'),
    )
    .join('')}`;
}

/** A colour with no hue to speak of: its channels within a small spread. */
const isGrey = (hex: string) => {
  const channels = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return Math.max(...channels) - Math.min(...channels) <= 0x20;
};

/**
 * Two sources' anomalies crowding one provider and day (more than fit beside one mark), and the
 * largest on the last day, where a label running right would reach the legend.
 */
function crowded(): ReportData {
  const anomaly = (source: string, id: string, date: string, provider: string, service: string, excess: number, severity = 'high') => ({
    source,
    id,
    date,
    provider,
    service,
    alert_type: 'spend_spike',
    severity,
    status: 'new',
    excess_usd: excess,
    deviation_percent: 132,
  });
  const days = Array.from({ length: 30 }, (_, i) => `2025-06-${String(i + 1).padStart(2, '0')}`);
  return {
    from: '2025-06-01',
    to: '2025-06-30',
    source: null,
    totals: {
      total_usd: 3000,
      days: 30,
      daily_average_usd: 100,
      recent_days: 7,
      recent_from: '2025-06-24',
      recent_to: '2025-06-30',
      before_from: '2025-06-17',
      before_to: '2025-06-23',
      recent_usd: 700,
      before_usd: 700,
      change_pct: 0,
      no_change_reason: null,
    },
    daily: days.flatMap((date) => [
      { date, provider: 'aws', cost_usd: 60 },
      { date, provider: 'gcp', cost_usd: 40 },
    ]),
    topServices: [{ service: 'Amazon EC2', cost_usd: 3000 }],
    movers: [],
    monthToDate: null,
    monthly: [
      {
        month: '2025-05',
        cost_usd: 1500,
        previous_month_usd: null,
        change_usd: null,
        change_pct: null,
        days_with_data: 15,
        is_partial: true,
        to_date: false,
        last_date: '2025-05-31',
        projected_usd: null,
      },
      {
        month: '2025-06',
        cost_usd: 3000,
        previous_month_usd: 1500,
        change_usd: null,
        change_pct: null,
        days_with_data: 30,
        is_partial: false,
        to_date: false,
        last_date: '2025-06-30',
        projected_usd: null,
      },
    ],
    bySource: [
      { source: 'acme-eu', cost_usd: 1500, days: 30 },
      { source: 'acme-us', cost_usd: 1500, days: 30 },
    ],
    anomalies: [
      anomaly('acme-us', 'a0', '2025-06-30', 'aws', 'Amazon CloudFront Distribution', 9000, 'critical'),
      anomaly('acme-eu', 'a1', '2025-06-15', 'aws', 'Amazon EC2', 5000),
      anomaly('acme-us', 'a1', '2025-06-15', 'aws', 'Amazon EC2', 4900),
      anomaly('acme-eu', 'a2', '2025-06-15', 'aws', 'Amazon RDS', 4800),
      anomaly('acme-us', 'a2', '2025-06-15', 'aws', 'Amazon RDS', 4700),
      anomaly('acme-eu', 'a3', '2025-06-15', 'aws', 'Amazon S3', 4600),
      anomaly('acme-eu', 'a4', '2025-06-16', 'gcp', 'Compute Engine', 4500, 'low'),
      anomaly('acme-us', 'a5', '2025-06-20', 'gcp', 'BigQuery', -300, 'low'),
    ],
  };
}

/** The anomaly labels as Vega drew them: position in the panel, anchor and text. */
function drawnLabels(svg: string): { x: number; y: number; anchor: string; text: string }[] {
  return [
    ...svg.matchAll(
      /<text [^>]*aria-roledescription="text mark"[^>]*text-anchor="(\w+)"[^>]*transform="translate\(([-\d.]+),([-\d.]+)\)"[^>]*>([^<]*)<\/text>/g,
    ),
  ].map((m) => ({ anchor: m[1]!, x: Number(m[2]), y: Number(m[3]), text: m[4]! }));
}

describe('what a person sees in the report', () => {
  it('labels never share a place, overlap or run past the plot into the legends, with two sources crowding one day', async () => {
    const data = crowded();
    const svg = await renderSvg(dailySpendSpec(data));
    const labels = drawnLabels(svg);
    expect(labels.length).toBeGreaterThanOrEqual(4);
    expect(new Set(labels.map((l) => `${l.x},${l.y}`)).size).toBe(labels.length);
    // Boxes at 5.5 px a character of 10 px text: none overlaps another, all inside the 860 px plot (the legends are beyond it).
    const boxes = labels.map((l) => {
      const width = l.text.length * 5.5;
      const x0 = l.anchor === 'end' ? l.x - width : l.anchor === 'middle' ? l.x - width / 2 : l.x;
      return { x0, x1: x0 + width, y0: l.y - 10, y1: l.y, text: l.text };
    });
    for (const b of boxes) {
      expect(b.x0, b.text).toBeGreaterThanOrEqual(0);
      expect(b.x1, b.text).toBeLessThanOrEqual(860);
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i]!, boxes[j]!];
        expect(a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1, `${a.text} / ${b.text}`).toBe(false);
      }
    }
    // The title counts what is drawn (a label with no room left is in the table only); with two sources each label names its own.
    const title = /Open anomalies by provider \(8; (the (\d) largest|(\d) of the 5 largest) labelled\)/.exec(svg);
    expect(title).not.toBeNull();
    expect(Number(title![2] ?? title![3])).toBe(labels.length);
    for (const l of labels) expect(l.text).toMatch(/^acme-(eu|us): /);
    // Every mark says on hover, with no script, what it is: date, service, severity and amount.
    const titles = [...svg.matchAll(/<path [^>]*aria-roledescription="point"[^>]*><title>([^<]*)<\/title><\/path>/g)].map((m) => m[1]!);
    expect(titles).toHaveLength(data.anomalies.length);
    for (const t of titles) {
      for (const part of [/Detected: 2025-06-\d\d;/, /Service: [^;]+;/, /Severity: \w+;/, /Against expected: [-−]?\$[\d,]+/])
        expect(t).toMatch(part);
    }
  });

  it('every severity stands out from the page (3:1, as WCAG asks of graphics), the low one no smaller than a readable mark', () => {
    type Layer = {
      mark: { type: string; opacity?: number };
      encoding: Record<string, { scale?: { domain: string[]; range: (string | number)[] } }>;
      layer?: Layer[];
    };
    const spec = dailySpendSpec(crowded()) as unknown as { vconcat: { layer: Layer[] }[] };
    const all = (layers: Layer[]): Layer[] => layers.flatMap((l) => [l, ...all(l.layer ?? [])]);
    const points = all(spec.vconcat[1]!.layer).find((l) => l.mark?.type === 'point')!;
    const colors = points.encoding.fill!.scale!;
    const sizes = points.encoding.size!.scale!;
    const opacity = points.mark.opacity ?? 1;
    expect(colors.domain).toEqual(['low', 'medium', 'high', 'critical']);
    for (const [i, severity] of colors.domain.entries()) {
      expect(contrast(overWhite(String(colors.range[i]), opacity), '#ffffff'), severity).toBeGreaterThanOrEqual(3);
    }
    // Higher severities darker and larger, each step one the eye tells apart.
    for (let i = 1; i < colors.range.length; i++) {
      expect(contrast(String(colors.range[i]), String(colors.range[i - 1])), colors.domain[i]).toBeGreaterThanOrEqual(1.3);
      expect(Number(sizes.range[i])).toBeGreaterThan(Number(sizes.range[i - 1]));
    }
    expect(Number(sizes.range[0])).toBeGreaterThanOrEqual(50);
  });

  it("the month legend's colours are distinct, and its greys as far apart as 3:1", () => {
    const spec = monthlySpec(crowded()) as unknown as {
      layer: { encoding: { color?: { field: string; scale: { domain: string[]; range: string[] } } } }[];
    };
    const { domain, range } = spec.layer.find((l) => l.encoding.color?.field === 'trend')!.encoding.color!.scale;
    expect(range).toHaveLength(domain.length);
    expect(new Set(range.map((c) => c.toLowerCase())).size).toBe(range.length);
    const greys = range.filter(isGrey);
    expect(greys.length).toBeGreaterThanOrEqual(2);
    for (let i = 0; i < greys.length; i++) {
      for (let j = i + 1; j < greys.length; j++)
        expect(contrast(greys[i]!, greys[j]!), `${greys[i]} / ${greys[j]}`).toBeGreaterThanOrEqual(3);
    }
  });

  it('prints a deviation one way: one decimal, as every other percentage of the report', async () => {
    const data = crowded();
    data.anomalies[1] = { ...data.anomalies[1]!, deviation_percent: 136.44 };
    data.anomalies[2] = { ...data.anomalies[2]!, deviation_percent: -90 };
    const html = reportHtml(data, { daily: '', services: '', monthly: '' }, '2025-07-01 06:00 UTC');
    const cells = [.../<table id="anomalies">[\s\S]*?<\/table>/.exec(html)![0].matchAll(/<td>([^<]*%)<\/td>/g)].map((m) => m[1]);
    expect(cells).toContain('+132.0%');
    expect(cells).toContain('+136.4%');
    expect(cells).toContain('-90.0%');
    for (const cell of cells) expect(cell).toMatch(/^[+-]?[\d,]+\.\d%$/);
    // The month table is of whole months, whatever the report's dates: the page says so under its heading.
    expect(html).toMatch(/<h2>Month over month<\/h2>\n<p class="note" id="monthly-note">Whole months/);
  });

  it('in Chromium, the drawn labels overlap neither each other nor a legend', async () => {
    const data = crowded();
    const [daily, services, monthly] = await Promise.all([
      renderSvg(dailySpendSpec(data)),
      renderSvg(topServicesSpec(data)),
      renderSvg(monthlySpec(data)),
    ]);
    await withTempDir(async (dir) => {
      const path = join(dir, 'crowded.html');
      writeFileSync(path, reportHtml(data, { daily, services, monthly }, '2025-07-01 06:00 UTC'));
      const browser = await sharedChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1400, height: 1500 } });
        await page.goto(pathToFileURL(path).href);
        // What the browser drew: each element's box on the page.
        const boxesOf = (selector: string) =>
          page.locator(selector).evaluateAll((els) =>
            els.map((e) => {
              const r = e.getBoundingClientRect();
              return { x0: r.left, x1: r.right, y0: r.top, y1: r.bottom, text: e.textContent ?? '' };
            }),
          );
        const labels = await boxesOf('#chart-daily [aria-roledescription="text mark"]');
        const legends = await boxesOf('#chart-daily [aria-roledescription="legend"]');
        expect(labels.length).toBeGreaterThanOrEqual(4);
        expect(legends.length).toBeGreaterThanOrEqual(2);
        const meet = (a: (typeof labels)[number], b: (typeof labels)[number]) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
        for (const [i, a] of labels.entries()) {
          for (const b of labels.slice(i + 1)) expect(meet(a, b), `${a.text} / ${b.text}`).toBe(false);
          for (const legend of legends) expect(meet(a, legend), `${a.text} / legend ${legend.text.slice(0, 20)}`).toBe(false);
        }
        mkdirSync(ARTIFACTS, { recursive: true });
        await page.locator('#chart-daily').screenshot({ path: join(ARTIFACTS, 'report-crowded-labels.png') });
      } finally {
        await closePages(browser);
      }
    });
  });
});

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
  expect(labels.length, `${what}: labels drawn`).toBeGreaterThan(0);
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
