#!/usr/bin/env node
// Publishing benchmarks. Prints figures; asserts nothing. Run after `npm ci` (uses dist/):
//   npm run bench:publish              both
//   npm run bench:publish -- sizes     publish seconds and bytes at 1, 5 and 20 million line items, by method
//   npm run bench:publish -- nightly   the published file after ${nights} nightly runs with restatements vs a fresh sync
// Environment: BENCH_PUBLISH_MILLIONS (default 1,5,20), BENCH_NIGHTLY_ROWS_PER_DAY (default 5000),
// BENCH_NIGHTS (default 30), BENCH_DIR (the file system to measure on); BENCH_SMOKE=1: tiny sizes.
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator } from '../../dist/emulator/server.js';
import { runSync } from '../../dist/sync/runner.js';
import { addDays } from '../../dist/dates.js';
import { workingCopyPath } from '../../dist/storage/working-copy.js';
import { publish } from '../../dist/outputs/publish.js';
import { filledWorkingCopy, quietLogger, size, syncConfig, tempDir } from './common.mjs';

const which = process.argv[2];
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

async function benchSizes() {
  const millions = size('BENCH_PUBLISH_MILLIONS', '1,5,20', '0.01').split(',').map(Number);
  for (const m of millions) {
    const dir = tempDir();
    try {
      const { db, wh } = await filledWorkingCopy(dir, m * 1_000_000);
      try {
        for (const method of ['copy', 'compact']) {
          const r = await publish(wh, db, { runId: null, now: Date.now }, { force: true, method });
          console.log(
            `publish: ${m}M line items, ${method}: ${r.seconds.toFixed(2)} s, published file ${mb(r.bytes)} (working copy ${mb(statSync(wh.path).size)})`,
          );
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
  const rowsPerDay = Number(size('BENCH_NIGHTLY_ROWS_PER_DAY', 5000, 20));
  const nights = Number(size('BENCH_NIGHTS', 30, 2));
  let now = Date.parse('2025-06-30T06:00:00Z');
  const clock = { now: () => now, sleep: async () => undefined };
  const emulator = await startEmulator({
    port: 0,
    rateLimit: 0,
    rowsPerDay,
    startDate: '2025-03-01',
    endDate: '2025-08-31',
    clock,
    anomaliesPerDay: 5,
    restatement: { days: 3, changeRate: 0.2, deleteRate: 0.05 },
  });
  const dir = tempDir();
  const config = (sub, until) => {
    // A run refuses a --db whose directory does not exist.
    mkdirSync(join(dir, sub), { recursive: true });
    return syncConfig(
      {
        'base-url': emulator.url,
        db: join(dir, sub, 'costs.duckdb'),
        'state-dir': join(dir, sub, 'state'),
        until,
        'start-date': '2025-04-01',
      },
      now,
    );
  };
  try {
    let until = '2025-06-30';
    await runSync({ config: config('nightly', until), logger: quietLogger, clock });
    const first = statSync(join(dir, 'nightly', 'costs.duckdb')).size;
    for (let night = 1; night <= nights; night++) {
      now += 86_400_000;
      until = addDays(until, 1);
      emulator.restate();
      await runSync({ config: config('nightly', until), logger: quietLogger, clock });
    }
    const published = statSync(join(dir, 'nightly', 'costs.duckdb')).size;
    const work = statSync(workingCopyPath(join(dir, 'nightly', 'state'), join(dir, 'nightly', 'costs.duckdb'))).size;
    await runSync({ config: config('fresh', until), logger: quietLogger, clock });
    const fresh = statSync(join(dir, 'fresh', 'costs.duckdb')).size;
    console.log(
      `nightly: ${rowsPerDay} rows a day from 2025-04-01; after the first sync ${mb(first)}; after ${nights} nightly runs with restatements the published file is ${mb(published)} (working copy ${mb(work)}); a fresh sync of the same data ${mb(fresh)}: ${(published / fresh).toFixed(2)}x (target <= 1.5x)`,
    );
  } finally {
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (!which || which === 'sizes') await benchSizes();
if (!which || which === 'nightly') await benchNightly();
