import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ARTIFACTS, chromiumForFile, closePages } from '../support/chromium.js';
import { ExitCode } from '../../src/errors.js';
import { openReadOnly, withWarehouse } from '../../src/storage/duckdb.js';
import { formatUsd } from '../../src/money.js';
import { dailySpendSpec, monthlySpec, renderSvg, topServicesSpec } from '../../src/report/charts.js';
import type { ReportData } from '../../src/report/data.js';
import { reportHtml } from '../../src/report/html.js';
import { inDirectory, queryDb, run, withEmulator, withTempDir, SPAN, syncCommand, spanFlags } from '../support/helpers.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const sharedChromium = chromiumForFile();

type Box = { x0: number; x1: number; y0: number; y1: number; text: string; what: string };

/** What the browser drew: the box on the page of each element `selector` finds, its text and its aria-label. */
function boxesOf(page: Page, selector: string): Promise<Box[]> {
  return page.locator(selector).evaluateAll((els) =>
    els.map((e) => {
      const r = e.getBoundingClientRect();
      return { x0: r.left, x1: r.right, y0: r.top, y1: r.bottom, text: e.textContent ?? '', what: e.getAttribute('aria-label') ?? '' };
    }),
  );
}

/** Whether two drawn boxes overlap. */
const meet = (a: Box, b: Box) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
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
      expect(html).toMatch(/<th>Run-rate \(whole days so far, projected to month end\)<\/th>/);
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
        // Reported on 16 June: June is the month of today, synced from its 1st to yesterday.
        const report = await run(
          ['report', '--db', db, '--out', join(dir, 'mid.html')],
          {},
          { now: () => Date.parse('2025-06-16T06:00:00Z') },
        );
        expect(report.code, report.stderr).toBe(ExitCode.OK);
        // With no --from, the period starts at the first date with data, not 89 days back over days with none.
        expect(report.stderr).toMatch(/Report for 2025-06-01 to 2025-06-15:/);
        // June holds 15 days of data: its run-rate is their spend at that pace for 30 days, labelled as such.
        const html = readFileSync(join(dir, 'mid.html'), 'utf8');
        const row = /<tr><td>2025-06 \(to date\), through 2025-06-15<\/td><td>([^<]+)<\/td><td>([^<]+)<\/td>/.exec(html)!;
        expect(row[2]).toBe(formatUsd(Math.round((usd / 15) * 30 * 100) / 100));
        // The chart's label is the run-rate as the table gives it, cents included.
        expect(html).toContain(`run-rate ${row[2]}`);
        // Reported later, the same half-synced June is a past month: partial, with no run-rate.
        expect((await run(['report', '--db', db, '--out', join(dir, 'later.html')])).code).toBe(ExitCode.OK);
        const later = readFileSync(join(dir, 'later.html'), 'utf8');
        expect(later).toContain('2025-06 (partial)');
        expect(later).not.toMatch(/run-rate \$[\d,]+/);
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
        // At most a handful labelled, and no label over an anomaly's mark (it would hide that alert).
        expect(await page.locator('#chart-daily [aria-roledescription="text mark"]').count()).toBeLessThanOrEqual(5);
        const marks = await boxesOf(page, '#chart-daily [aria-roledescription="point"]');
        for (const label of await boxesOf(page, '#chart-daily [aria-roledescription="text mark"]'))
          expect(marks.filter((m) => meet(label, m)).length, `${label.text} covers a mark`).toBe(0);
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

  it("in Chromium, the drawn labels overlap neither each other, nor a legend, nor an anomaly's mark", async () => {
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
        const labels = await boxesOf(page, '#chart-daily [aria-roledescription="text mark"]');
        const legends = await boxesOf(page, '#chart-daily [aria-roledescription="legend"]');
        const points = await boxesOf(page, '#chart-daily [aria-roledescription="point"]');
        expect(labels.length).toBeGreaterThanOrEqual(4);
        expect(legends.length).toBeGreaterThanOrEqual(2);
        for (const [i, a] of labels.entries()) {
          for (const b of labels.slice(i + 1)) expect(meet(a, b), `${a.text} / ${b.text}`).toBe(false);
          for (const legend of legends) expect(meet(a, legend), `${a.text} / legend ${legend.text.slice(0, 20)}`).toBe(false);
          // Nor an anomaly's mark: a label over another mark hides it.
          for (const point of points)
            expect(meet(a, point), `${a.text} covers a mark at ${Math.round(point.x0)},${Math.round(point.y0)}`).toBe(false);
        }
        mkdirSync(ARTIFACTS, { recursive: true });
        await page.locator('#chart-daily').screenshot({ path: join(ARTIFACTS, 'report-crowded-labels.png') });
      } finally {
        await closePages(browser);
      }
    });
  });

  it("in Chromium, the demo's report as a newcomer saw it (its data, fixed on 2026-12-07): no label covers another anomaly's mark", async () => {
    // 85 open anomalies over 89 days: the labels of the largest ran over neighbouring marks.
    const data = JSON.parse(readFileSync(join(FIXTURES, 'demo-report-data.json'), 'utf8')) as ReportData;
    const daily = await renderSvg(dailySpendSpec(data));
    await withTempDir(async (dir) => {
      const path = join(dir, 'demo.html');
      writeFileSync(path, reportHtml(data, { daily, services: '', monthly: '' }, '2026-12-07 21:10 UTC'));
      const browser = await sharedChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1400, height: 1500 } });
        await page.goto(pathToFileURL(path).href);
        const labels = await boxesOf(page, '#chart-daily [aria-roledescription="text mark"]');
        const points = await boxesOf(page, '#chart-daily [aria-roledescription="point"]');
        expect(points).toHaveLength(data.anomalies.length);
        expect(labels.length).toBeGreaterThan(0);
        const covered = labels.flatMap((l) => points.filter((p) => meet(l, p)).map((p) => `${l.text} over ${p.what.slice(0, 40)}`));
        expect(covered).toEqual([]);
      } finally {
        await closePages(browser);
      }
    });
  });
});
