#!/usr/bin/env node
// Iceberg lake benchmarks. Prints figures; asserts nothing. Run after `npm ci` (uses dist/):
//   npm run bench:iceberg                 all three
//   npm run bench:iceberg -- history      one of: throughput, commit, history
// Environment: BENCH_ICEBERG_ROWS (the throughput sync, default 400000), BENCH_ICEBERG_NIGHTS (default 100),
// BENCH_ICEBERG_HISTORY_ROWS (the warehouse the nights restate, default 200000); BENCH_SMOKE=1: tiny sizes.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator } from '../../dist/emulator/server.js';
import { runSync } from '../../dist/sync/runner.js';
import { addDays } from '../../dist/dates.js';
import { icebergLake } from '../../dist/outputs/iceberg.js';
import { directoryTarget } from '../../dist/outputs/target.js';
import { filledWorkingCopy, quietLogger, size, smoke, syncConfig, tempDir } from './common.mjs';

const which = process.argv[2];
const DAY = 86_400_000;
const fixedClock = { now: () => Date.parse('2025-12-31T12:00:00Z') };

/** Files and bytes under `dir`, split into data and metadata. */
function footprint(dir) {
  const out = { dataFiles: 0, dataBytes: 0, metadataFiles: 0, metadataBytes: 0, newestMetadataBytes: 0 };
  let newest = -1;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const bytes = statSync(path).size;
    if (path.includes('/data/')) {
      out.dataFiles += 1;
      out.dataBytes += bytes;
    } else {
      out.metadataFiles += 1;
      out.metadataBytes += bytes;
    }
    const v = /^v(\d+)\.metadata\.json$/.exec(entry.name);
    if (v && Number(v[1]) > newest) {
      newest = Number(v[1]);
      out.newestMetadataBytes = bytes;
    }
  }
  return out;
}

const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;

/** The same sync (line items, a year of days) with no lake, a Parquet lake and an Iceberg lake. */
async function benchThroughput() {
  const rows = Number(size('BENCH_ICEBERG_ROWS', 400_000, 600));
  const days = smoke ? 2 : 60;
  const rowsPerDay = Math.ceil(rows / days);
  const emulator = await startEmulator({
    port: 0,
    rateLimit: 0,
    rowsPerDay,
    startDate: addDays('2025-12-31', -(days - 1)),
    endDate: '2025-12-31',
    clock: fixedClock,
  });
  const results = {};
  try {
    // The first sync warms the emulator and the JIT: run it once unmeasured (not at the smoke size).
    for (const format of [...(smoke ? [] : ['duckdb']), 'duckdb', 'parquet', 'iceberg']) {
      const dir = tempDir();
      try {
        const config = syncConfig(
          {
            'base-url': emulator.url,
            db: join(dir, 'b.duckdb'),
            'state-dir': join(dir, 'state'),
            streams: 'line_items',
            until: '2025-12-31',
            'start-date': addDays('2025-12-31', -(days - 1)),
            'window-days': 7,
            format,
            out: join(dir, 'lake'),
            reconcile: 'off',
          },
          fixedClock.now(),
        );
        const t0 = performance.now();
        await runSync({ config, logger: quietLogger });
        results[format] = (performance.now() - t0) / 1000;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await emulator.close();
  }
  const synced = rowsPerDay * days;
  for (const format of ['duckdb', 'parquet', 'iceberg']) {
    console.log(
      `throughput: ${format}: ${synced} rows (line items, and the focus table with a lake) in ${results[format].toFixed(1)} s = ${Math.round(synced / results[format])} rows/s`,
    );
  }
  console.log(`throughput: iceberg/parquet time = ${(results.iceberg / results.parquet).toFixed(2)}`);
}

/**
 * Nightly runs on a filled warehouse, one simulated day apart: each restates the last `lookback`
 * days (amounts change), commits (drain), then finishes (run tables, expiry past 7 days).
 */
async function nightly(nights, rows, onNight) {
  const dir = tempDir();
  const { wh } = await filledWorkingCopy(dir, rows, { lake: true });
  const target = directoryTarget(join(dir, 'lake'));
  let now = Date.parse('2026-01-01T03:00:00Z');
  const clock = { now: () => now, sleep: async () => undefined };
  try {
    const t0 = performance.now();
    await icebergLake({ runId: 'fill', clock, sources: ['default'], retentionMs: 7 * DAY }).drain(wh, target);
    const fillSecs = (performance.now() - t0) / 1000;
    const lookback = ['2025-12-29', '2025-12-30', '2025-12-31'];
    for (let night = 1; night <= nights; night++) {
      now += DAY;
      const s0 = performance.now();
      await wh.transaction(async () => {
        await wh.sql("UPDATE line_items SET net_amount_usd = round(net_amount_usd * 1.01, 6) WHERE usage_date >= DATE '2025-12-29'");
        await wh.changed('line_items', 'default', lookback);
      });
      const syncMs = performance.now() - s0;
      const lake = icebergLake({ runId: `night-${night}`, clock, sources: ['default'], retentionMs: 7 * DAY });
      const c0 = performance.now();
      await lake.drain(wh, target);
      const commitMs = performance.now() - c0;
      const f0 = performance.now();
      await lake.finish(wh, target);
      onNight({ night, syncMs, commitMs, finishMs: performance.now() - f0, lakeDir: join(dir, 'lake') });
    }
    return { fillSecs };
  } finally {
    wh.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchCommit() {
  const rows = Number(size('BENCH_ICEBERG_HISTORY_ROWS', 200_000, 500));
  const nights = smoke ? 1 : 10;
  const commits = [];
  await nightly(nights, rows, (n) => commits.push(n));
  const avg = (k) => commits.reduce((a, c) => a + c[k], 0) / commits.length;
  console.log(
    `commit: a nightly lookback of 3 days (the window's warehouse commit ~${avg('syncMs').toFixed(0)} ms): line_items and focus committed (2 snapshots, each its month's file rewritten) in ${avg('commitMs').toFixed(0)} ms on average over ${nights} nights; finishing (run tables, expiry) ${avg('finishMs').toFixed(0)} ms`,
  );
}

async function benchHistory() {
  const rows = Number(size('BENCH_ICEBERG_HISTORY_ROWS', 200_000, 500));
  const nights = Number(size('BENCH_ICEBERG_NIGHTS', 100, 2));
  const checkpoints = new Set([1, 10, 30, 60, nights]);
  const { fillSecs } = await nightly(nights, rows, ({ night, lakeDir }) => {
    if (!checkpoints.has(night)) return;
    for (const table of ['line_items', 'focus']) {
      const f = footprint(join(lakeDir, table));
      console.log(
        `history: night ${night}: ${table}: ${f.dataFiles} data files (${mb(f.dataBytes)}), ${f.metadataFiles} metadata files (${mb(f.metadataBytes)}), newest metadata file ${mb(f.newestMetadataBytes)}`,
      );
    }
  });
  console.log(
    `history: filled ${rows} line items (a year of days) and their focus rows from the warehouse in ${fillSecs.toFixed(1)} s; 7-day retention, a 3-day restatement every night`,
  );
  // Without the file-per-source-and-month rule (a file per commit, as appends of each window leave),
  // a table's live files would grow by one per night; with it they stay one per source and month.
  console.log(
    `history: without compaction line_items would hold ${12 + nights} live files after ${nights} nights; with a file per source and month it holds 12 live files`,
  );
}

const benches = { throughput: benchThroughput, commit: benchCommit, history: benchHistory };
for (const [name, fn] of Object.entries(benches)) if (!which || which === name) await fn();
