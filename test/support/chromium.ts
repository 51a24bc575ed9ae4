// One headless Chromium (Debian's) a test file, for the report's tests: launched at first use, closed after the file.
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll } from 'vitest';

export const CHROMIUM = process.env.COSTSYNC_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

/** One Chromium for the file's tests, launched at first use and closed after them: a launch costs about a second of CPU. */
let chromiumBrowser: Promise<Browser> | undefined;
export function sharedChromium(): Promise<Browser> {
  chromiumBrowser ??= chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  return chromiumBrowser;
}
afterAll(async () => {
  // A launch that failed has failed its tests already.
  await (await chromiumBrowser?.catch(() => undefined))?.close();
});

/** Closes the pages (each in its own context) a test opened, leaving the shared browser for the next. */
export async function closePages(browser: Browser): Promise<void> {
  await Promise.all(browser.contexts().map((context) => context.close()));
}
