// What every benchmark shares: settings built by the CLI's own resolver (so a new setting gets its
// default there, and a benchmark cannot fall behind the CLI), a temp dir, a silent logger, and the
// smoke size. `BENCH_SMOKE=1` runs a script at a tiny size: `npm test` does that once for each script so
// none can rot (figures printed, nothing asserted about speed).
import { once } from 'node:events';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveSyncConfig } from '../../dist/config.js';
import { openWorkingCopy } from '../../dist/storage/working-copy.js';
import { createLogger } from '../../dist/log.js';

export const smoke = process.env.BENCH_SMOKE === '1';
/** The executable users run (`costsync`, `npx costsync`), with the process settings it makes. */
export const BIN = process.env.BENCH_BIN ?? fileURLToPath(new URL('../../dist/bin.cjs', import.meta.url));
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

/**
 * Fills a working copy with `rows` line items shaped like the API's (ids, dates, providers, amounts, extra),
 * spread over the `days` (default a year) up to 2025-12-31.
 */
export async function filledWorkingCopy(dir, rows, options = {}) {
  const { days = 365, ...open } = options;
  const db = join(dir, 'costs.duckdb');
  const wh = await openWorkingCopy(db, join(dir, 'state'), open);
  await wh.sql("SET memory_limit = '1GB'");
  await wh.transaction(async () => {
    await wh.sql(`
      INSERT INTO line_items BY NAME
      SELECT 'li_' || md5(i::VARCHAR)[1:20] AS id, DATE '2025-12-31' - (i % ${days})::INTEGER AS usage_date,
             ['aws','gcp','azure','snowflake','datadog','openai','anthropic'][1 + i % 7] AS provider_type,
             'service-' || (i % 97) AS provider_service, round(random() * 100, 6) AS net_amount_usd, 'USD' AS currency_original,
             'proj-' || (i % 500) AS project_id, 'user' || (i % 2000) || '@example.com' AS user_email,
             CASE WHEN i % 7 >= 5 THEN '{"model":"m-' || (i % 13) || '","tokens_input":' || (i % 100000) || '}' END AS extra
      FROM range(${rows}) t(i)`);
  });
  return { db, wh };
}

/** CPU seconds a process has used so far, all its threads (from /proc; NaN once it is gone, or off Linux). */
/**
 * Samples a child's peak RSS and CPU seconds from /proc every `everyMs` until it exits: `done` gives
 * them with its exit code.
 */
export async function watchChild(child, everyMs = 100) {
  let peak = 0;
  let cpu = 0;
  const timer = setInterval(() => {
    try {
      const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (m) peak = Math.max(peak, Number(m[1]) * 1024);
    } catch {
      /* exited */
    }
    const used = cpuSeconds(child.pid);
    if (!Number.isNaN(used)) cpu = used;
  }, everyMs);
  const [code] = await once(child, 'exit');
  clearInterval(timer);
  return { code, peakMb: peak / 1e6, cpuSeconds: cpu };
}

export function cpuSeconds(pid) {
  return threadSeconds(`/proc/${pid}/stat`);
}

/** utime and stime of a /proc stat file, in seconds (clock ticks are 100 a second on Linux); NaN when unreadable. */
function threadSeconds(statPath) {
  try {
    const stat = readFileSync(statPath, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** This process's CPU seconds so far: its main (JavaScript) thread, and every other thread together (libuv's, DuckDB's, V8's helpers). */
export function ownThreadSeconds() {
  let main = 0;
  let others = 0;
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const used = threadSeconds(`/proc/self/task/${tid}/stat`);
      if (Number.isNaN(used)) continue;
      if (tid === String(process.pid)) main = used;
      else others += used;
    }
  } catch {
    return { main: NaN, others: NaN };
  }
  return { main, others };
}
