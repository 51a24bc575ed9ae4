import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import { cli, withEmulator, withTempDir, SPAN } from '../helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const CHROMIUM = process.env.COSTSYNC_CHROMIUM ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
if (!hasChromium) console.warn(`report browser test skipped: no Chromium at ${CHROMIUM} (install Debian's chromium package, or set COSTSYNC_CHROMIUM)`);

/** A synced warehouse of June 2025 and its report, written by the CLI. */
async function withReport<T>(fn: (ctx: { db: string; html: string; path: string; stdout: string }) => Promise<T>): Promise<T> {
  return withEmulator({ ...SPAN, rowsPerDay: 60, anomaliesPerDay: 3, clock }, async ({ url }) => withTempDir(async (dir) => {
    const db = join(dir, 'c.duckdb');
    const sync = await cli(['sync', '--base-url', url, '--db', db, '--state-dir', join(dir, 'state'), '--start-date', SPAN.startDate, '--until', SPAN.endDate, '--rate-limit', '100000', '--quiet'], { COSTSYNC_API_KEY: 'demo-key' });
    expect(sync.code, sync.stderr).toBe(ExitCode.OK);
    const path = join(dir, 'report.html');
    const report = await cli(['report', '--db', db, '--out', path, '--from', '2025-06-01', '--to', '2025-06-30']);
    expect(report.code, report.stderr).toBe(ExitCode.OK);
    return fn({ db, html: readFileSync(path, 'utf8'), path, stdout: report.stdout });
  }));
}

async function expectedSeries(db: string) {
  const wh = await openReadOnly(db);
  try {
    const providers = await wh.sql<{ provider: string; days: number }>("SELECT provider, count(*)::INTEGER AS days FROM daily_spend_by_provider WHERE date BETWEEN '2025-06-01' AND '2025-06-30' GROUP BY 1 ORDER BY 1");
    const [{ n }] = (await wh.sql<{ n: number }>("SELECT count(*)::INTEGER AS n FROM open_anomalies WHERE detected_date::DATE BETWEEN '2025-06-01' AND '2025-06-30'")) as [{ n: number }];
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
    });
  });

  it.skipIf(!hasChromium)('renders in headless Chromium with a series per provider and the open anomalies on the timeline', async () => {
    await withReport(async ({ db, path }) => {
      const expected = await expectedSeries(db);
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
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
        const bars = await page.locator('#chart-daily [aria-roledescription="bar"]').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
        for (const { provider, days } of expected.providers) {
          expect(bars.filter((label) => label.endsWith(`Provider: ${provider}`)), provider).toHaveLength(days);
        }
        const legend = await page.locator('#chart-daily [aria-roledescription="legend"]').allTextContents();
        for (const { provider } of expected.providers) expect(legend.join(' ')).toContain(provider);
        // One rule per open anomaly, and the same number in the table.
        expect(await page.locator('#chart-daily [aria-roledescription="rule mark"]').count()).toBe(expected.openAnomalies);
        expect(await page.locator('#anomalies tbody tr').count()).toBe(expected.openAnomalies);
        expect(await page.locator('#chart-services [aria-roledescription="bar"]').count()).toBe(10);
        mkdirSync(ARTIFACTS, { recursive: true });
        await page.screenshot({ path: join(ARTIFACTS, 'report.png'), fullPage: true });
        expect(existsSync(join(ARTIFACTS, 'report.png'))).toBe(true);
      } finally {
        await browser.close();
      }
    });
  });
});
