// Headless Chromium (Debian's) for the report's tests: one a test file, launched at first use, closed after the file.
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll } from 'vitest';

export const CHROMIUM = process.env.COSTSYNC_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

/**
 * One Chromium for the calling file's tests, launched at first use and closed after them (a launch costs about a
 * second of CPU). Call it at a file's top level: the hook is the file's, even where workers share this module.
 */
export function chromiumForFile(): () => Promise<Browser> {
  let browser: Promise<Browser> | undefined;
  afterAll(async () => {
    // A launch that failed has failed its tests already.
    await (await browser?.catch(() => undefined))?.close();
  });
  return () => (browser ??= chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }));
}

/** Closes the pages (each in its own context) a test opened, leaving the shared browser for the next. */
export async function closePages(browser: Browser): Promise<void> {
  await Promise.all(browser.contexts().map((context) => context.close()));
}
