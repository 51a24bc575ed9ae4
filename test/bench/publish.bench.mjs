#!/usr/bin/env node
// Publishing benchmarks (issue 10). Prints figures; asserts nothing. Run after `npm ci` (uses dist/):
//   npm run bench:publish              both
//   npm run bench:publish -- sizes     publish seconds and bytes at 1, 5 and 20 million line items, by method
//   npm run bench:publish -- nightly   the published file after 30 nightly runs with restatements vs a fresh sync
// Environment: BENCH_PUBLISH_MILLIONS (default 1,5,20), BENCH_NIGHTLY_ROWS_PER_DAY (default 5000).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '../../dist/emulator/server.js';
import { runSync } from '../../dist/sync/runner.js';
import { createLogger } from '../../dist/log.js';
import { addDays } from '../../dist/dates.js';
import { openWorkingCopy, publish, workingCopyPath } from '../../dist/storage/publish.js';

const which = process.argv[2];
const quietLogger = createLogger({ format: 'json', level: 'error', write: () => undefined });
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

function tempDir() {
  // Beside the working tree, not /tmp: the same file system a user's --db and --state-dir share.
  return mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'costsync-bench-'));
}

/** Fills a working copy with `rows` line items shaped like the API's (ids, dates, providers, amounts, extra). */
async function filledWorkingCopy(dir, rows) {
  const db = join(dir, 'costs.duckdb');
  const wh = await openWorkingCopy(db, join(dir, 'state'));
  await wh.sql('SET memory_limit = \'1GB\'');
  await wh.transaction(async () => {
    await wh.sql(`
      INSERT INTO line_items
      SELECT 'li_' || md5(i::VARCHAR)[1:20], DATE '2025-01-01' + (i % 365)::INTEGER,
             ['aws','gcp','azure','snowflake','datadog','openai','anthropic'][1 + i % 7],
             'service-' || (i % 97), round(random() * 100, 6), 'USD', 'proj-' || (i % 500), 'user' || (i % 2000) || '@example.com',
             CASE WHEN i % 7 >= 5 THEN '{"model":"m-' || (i % 13) || '","tokens_input":' || (i % 100000) || '}' END
      FROM range(${rows}) t(i)`);
  });
  return { db, wh };
}

async function benchSizes() {
  const millions = (process.env.BENCH_PUBLISH_MILLIONS ?? '1,5,20').split(',').map(Number);
  for (const m of millions) {
    const dir = tempDir();
    try {
      const { db, wh } = await filledWorkingCopy(dir, m * 1_000_000);
      try {
        for (const method of ['copy', 'compact']) {
          const r = await publish(wh, db, { runId: null, now: Date.now }, { force: true, method });
          console.log(`publish: ${m}M line items, ${method}: ${r.seconds.toFixed(2)} s, published file ${mb(r.bytes)} (working copy ${mb(statSync(wh.path).size)})`);
        }
      } finally {
        wh.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

async function benchNightly() {
  const rowsPerDay = Number(process.env.BENCH_NIGHTLY_ROWS_PER_DAY ?? 5000);
  let now = Date.parse('2025-06-30T06:00:00Z');
  const clock = { now: () => now, sleep: async () => undefined };
  const emulator = await startEmulator({
    port: 0, rateLimit: 0, rowsPerDay, startDate: '2025-03-01', endDate: '2025-08-31', clock, anomaliesPerDay: 5,
    restatement: { days: 3, changeRate: 0.2, deleteRate: 0.05 },
  });
  const dir = tempDir();
  const config = (sub, until) => ({
    baseUrl: emulator.url, apiKey: 'demo-key', db: join(dir, sub, 'costs.duckdb'), stateDir: join(dir, sub, 'state'),
    streams: ['line_items', 'rollups', 'anomalies'], since: undefined, until, startDate: '2025-04-01', lookbackDays: 3, windowDays: 30,
    fullRefresh: false, rateLimit: 1_000_000, maxRuntimeMs: undefined, format: 'duckdb', out: join(dir, sub, 'pq'), logFormat: 'json',
    quiet: true, verbose: false, anomalyRefreshDays: 30, concurrency: 4, publishIntervalMs: 600_000,
  });
  try {
    let until = '2025-06-30';
    await runSync({ config: config('nightly', until), logger: quietLogger, clock });
    const first = statSync(join(dir, 'nightly', 'costs.duckdb')).size;
    for (let night = 1; night <= 30; night++) {
      now += 86_400_000;
      until = addDays(until, 1);
      emulator.restate();
      await runSync({ config: config('nightly', until), logger: quietLogger, clock });
    }
    const published = statSync(join(dir, 'nightly', 'costs.duckdb')).size;
    const work = statSync(workingCopyPath(join(dir, 'nightly', 'state'), join(dir, 'nightly', 'costs.duckdb'))).size;
    await runSync({ config: config('fresh', until), logger: quietLogger, clock });
    const fresh = statSync(join(dir, 'fresh', 'costs.duckdb')).size;
    console.log(`nightly: ${rowsPerDay} rows a day from 2025-04-01; after the first sync ${mb(first)}; after 30 nightly runs with restatements the published file is ${mb(published)} (working copy ${mb(work)}); a fresh sync of the same data ${mb(fresh)}: ${(published / fresh).toFixed(2)}x (target <= 1.5x)`);
  } finally {
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (!which || which === 'sizes') await benchSizes();
if (!which || which === 'nightly') await benchNightly();
