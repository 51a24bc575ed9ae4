// What every benchmark shares: settings built by the CLI's own resolver (so a new setting gets its
// default there, and a benchmark cannot fall behind the CLI), a temp dir, a silent logger, and the
// smoke size. `BENCH_SMOKE=1` runs a script at a tiny size: `npm test` does that once for each script so
// none can rot (figures printed, nothing asserted about speed).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveSyncConfig } from '../../dist/config.js';
import { createLogger } from '../../dist/log.js';

export const smoke = process.env.BENCH_SMOKE === '1';
/** The executable users run (`costsync`, `npx costsync`), with the process settings it makes. */
export const BIN = fileURLToPath(new URL('../../dist/bin.cjs', import.meta.url));
export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
export const quietLogger = createLogger({ format: 'json', level: 'error', write: () => undefined });

/** A size from the environment, or its full default, or the smoke size under BENCH_SMOKE=1. */
export function size(envName, full, tiny) {
  if (process.env[envName] !== undefined) return process.env[envName];
  return smoke ? tiny : full;
}

export function tempDir(prefix = 'costsync-bench-') {
  // BENCH_DIR: the file system a user's --db and --state-dir share, when /tmp is another.
  return mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), prefix));
}

/**
 * A SyncConfig as the CLI would resolve these flags (flag names as on the command line), with the
 * emulator's demo key, quiet JSON logs and no rate limit unless the flags set one.
 */
export function syncConfig(flags, nowMs = Date.now()) {
  return resolveSyncConfig({
    flags: { 'rate-limit': 1_000_000, 'log-format': 'json', quiet: true, ...flags },
    env: { COSTSYNC_API_KEY: 'demo-key' },
    file: {},
    nowMs,
  });
}
