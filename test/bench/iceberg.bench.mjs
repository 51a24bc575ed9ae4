#!/usr/bin/env node
// Iceberg lake benchmarks. Prints figures; asserts nothing. Run after `npm ci` (uses dist/):
//   npm run bench:iceberg                 all four
//   npm run bench:iceberg -- catalog      one of: throughput, commit, history, catalog
// Environment: BENCH_ICEBERG_ROWS (the throughput sync, default 400000), BENCH_ICEBERG_NIGHTS (default 100),
// BENCH_ICEBERG_HISTORY_ROWS (the warehouse the nights restate, default 200000), BENCH_ICEBERG_CATALOG_ROWS_PER_DAY
// (the catalog backfill's line items a day, default 5000), BENCH_ICEBERG_CATALOG_WINDOWS (its 30-day windows,
// default 4); BENCH_SMOKE=1: tiny sizes.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator } from '../../dist/emulator/server.js';
import { runSync } from '../../dist/sync/runner.js';
import { addDays } from '../../dist/dates.js';
import { icebergLake } from '../../dist/outputs/iceberg.js';
import { directoryTarget } from '../../dist/outputs/target.js';
import { openRestTables } from '../../dist/outputs/iceberg-catalog.js';
import { resolveSyncConfig } from '../../dist/config.js';
import { openWorkingCopy } from '../../dist/storage/working-copy.js';
import { startCatalogServer } from '../catalog/server.mjs';
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
            // --out names a lake: the warehouse alone (duckdb) takes none.
            ...(format === 'duckdb' ? {} : { out: join(dir, 'lake') }),
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
  const { wh } = await filledWorkingCopy(dir, rows, { lake: true, days: HISTORY_DAYS });
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

/** The days the history's rows spread over, up to 2025-12-31: a year, or at the smoke size November and December (a month's file each). */
const HISTORY_DAYS = smoke ? 61 : 365;
const HISTORY_MONTHS = smoke ? 2 : 12;

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
    `history: filled ${rows} line items (${HISTORY_DAYS} days) and their focus rows from the warehouse in ${fillSecs.toFixed(1)} s; 7-day retention, a 3-day restatement every night`,
  );
  // Without the file-per-source-and-month rule (a file per commit, as appends of each window leave),
  // a table's live files would grow by one per night; with it they stay one per source and month.
  console.log(
    `history: without compaction line_items would hold ${HISTORY_MONTHS + nights} live files after ${nights} nights; with a file per source and month it holds ${HISTORY_MONTHS} live files`,
  );
}

/** The catalog's client, as the bench signs in to the tests' catalog server. */
const CATALOG_CLIENT = { id: 'bench', secret: 'bench-secret' };

/** A sync's settings through the catalog at `url` (OAuth2 client credentials), or with no lake when `url` is null. */
function catalogSyncConfig(flags, url) {
  return resolveSyncConfig({
    flags: {
      'rate-limit': 1_000_000,
      'log-format': 'json',
      quiet: true,
      ...flags,
      ...(url !== null && { catalog: url, 'catalog-warehouse': 'bench', 'catalog-oauth-uri': `${url}/v1/oauth/tokens` }),
    },
    env: { COSTSYNC_API_KEY: 'demo-key', COSTSYNC_CATALOG_CREDENTIAL: `${CATALOG_CLIENT.id}:${CATALOG_CLIENT.secret}` },
    file: {},
    nowMs: fixedClock.now(),
  });
}

/** `catalog` with its calls timed: every load, ensure and commit is a round trip (or more) to the catalog. */
function timedCatalog(catalog) {
  const spent = { ms: 0, calls: 0 };
  const timed =
    (fn) =>
    async (...args) => {
      const t0 = performance.now();
      try {
        return await fn(...args);
      } finally {
        spent.ms += performance.now() - t0;
        spent.calls += 1;
      }
    };
  return {
    catalog: {
      ...catalog,
      load: timed(catalog.load),
      ensure: timed(catalog.ensure),
      commit: timed(catalog.commit),
      commitAll: timed(catalog.commitAll),
    },
    spent,
  };
}

/**
 * A backfill of 30-day windows of line items through the tests' catalog server (loopback, OAuth2,
 * transactions, idempotency keys), against the window's fetch at 60 requests a minute. End to end: the
 * sync with no lake and through the catalog. Per window: the same warehouse commits replayed one window
 * at a time, each followed by the lake's drain (what a sync does after a window's commit), through the
 * catalog and into directory tables, with the catalog's calls timed apart from writing the files.
 */
async function benchCatalog() {
  const rowsPerDay = Number(size('BENCH_ICEBERG_CATALOG_ROWS_PER_DAY', 5_000, 20));
  const windows = Number(size('BENCH_ICEBERG_CATALOG_WINDOWS', 4, 2));
  const days = windows * 30;
  const first = addDays('2025-12-31', -(days - 1));
  const emulator = await startEmulator({ port: 0, rateLimit: 0, rowsPerDay, startDate: first, endDate: '2025-12-31', clock: fixedClock });
  const root = tempDir('costsync-bench-catalog-');
  const server = await startCatalogServer({
    root,
    prefix: 'bench',
    warehouse: 'bench',
    transactions: true,
    idempotencyKeyLifetime: 'PT30M',
    auth: { kind: 'oauth', clients: [CATALOG_CLIENT] },
  });
  const flags = (dir) => ({
    'base-url': emulator.url,
    db: join(dir, 'b.duckdb'),
    'state-dir': join(dir, 'state'),
    streams: 'line_items',
    until: '2025-12-31',
    'start-date': first,
    'window-days': 30,
    reconcile: 'off',
  });
  const noLake = tempDir();
  const e2e = {};
  let fetchRequests = 0;
  try {
    // End to end. The first sync warms the emulator and the JIT: run it once unmeasured (not at the smoke size).
    for (const [label, url] of [...(smoke ? [] : [['warm-up', null]]), ['no lake', null], ['catalog', server.url]]) {
      const dir = label === 'no lake' ? noLake : tempDir();
      try {
        const before = emulator.requestLog.count({ route: 'line-items' });
        const config = catalogSyncConfig({ ...flags(dir), 'catalog-namespace': 'e2e' }, url);
        const t0 = performance.now();
        await runSync({ config, logger: quietLogger });
        e2e[label] = (performance.now() - t0) / 1000;
        fetchRequests = emulator.requestLog.count({ route: 'line-items' }) - before;
      } finally {
        if (dir !== noLake) rmSync(dir, { recursive: true, force: true });
      }
    }
    const perWindowFetchSecs = fetchRequests / windows;
    const settings = catalogSyncConfig(flags(noLake), server.url).catalog;
    const replays = {};
    for (const kind of ['directory', 'catalog']) {
      replays[kind] = await replayWindows(kind, join(noLake, 'b.duckdb'), first, windows, (namespace) => {
        const timed = { spent: null };
        const open = async () => {
          const opened = await openRestTables(
            { ...settings, namespace: [namespace] },
            { env: settings.env, clock: realClock, logger: quietLogger, out: '', scratchRoot: join(root, 'scratch') },
          );
          const t = timedCatalog(opened);
          timed.spent = t.spent;
          return t.catalog;
        };
        return { open, timed, requests: () => server.requests.length };
      });
    }
    for (const [w, c] of replays.catalog.windows.entries()) {
      const d = replays.directory.windows[w];
      console.log(
        `catalog: window ${w + 1} of ${windows} (${c.dates} days, ${c.rows} line items): the lake's commit ${c.ms.toFixed(0)} ms through the catalog ` +
          `(${c.catalogMs.toFixed(0)} ms in ${c.calls} catalog calls, ${c.requests} HTTP requests; the rest writes the data files, manifests and lists), ` +
          `${d.ms.toFixed(0)} ms as directory tables; the window's fetch at 60 requests a minute ${perWindowFetchSecs.toFixed(0)} s ` +
          `(${perWindowFetchSecs.toFixed(0)} requests): ratio ${((100 * c.ms) / 1000 / perWindowFetchSecs).toFixed(2)}%`,
      );
    }
    const avg = (list, k) => list.reduce((a, x) => a + x[k], 0) / list.length;
    const cms = avg(replays.catalog.windows, 'ms');
    const catalogMs = avg(replays.catalog.windows, 'catalogMs');
    console.log(
      `catalog: a 30-day window of ${rowsPerDay * 30} line items: the lake's commit through the catalog ${cms.toFixed(0)} ms on average ` +
        `(catalog calls ${catalogMs.toFixed(0)} ms of it; directory tables ${avg(replays.directory.windows, 'ms').toFixed(0)} ms), ` +
        `the window's fetch at 60 requests a minute ${perWindowFetchSecs.toFixed(0)} s: ${((100 * cms) / 1000 / perWindowFetchSecs).toFixed(2)}% ` +
        `(of which the catalog's calls ${((100 * catalogMs) / 1000 / perWindowFetchSecs).toFixed(2)}%); opening the catalog ${replays.catalog.startMs.toFixed(0)} ms once a run`,
    );
    console.log(
      `catalog: end to end, ${windows} windows (${fetchRequests} line-item requests, no rate limit): ${e2e['no lake'].toFixed(1)} s with no lake, ` +
        `${e2e.catalog.toFixed(1)} s through the catalog (the run's tables and expiry included)`,
    );
  } finally {
    rmSync(noLake, { recursive: true, force: true });
    await server.close();
    await emulator.close();
    rmSync(root, { recursive: true, force: true });
  }
}

const realClock = { now: () => Date.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };

/**
 * Replays the line items of the warehouse `from` into a new working copy one 30-day window at a time,
 * each as the sync commits a window (its rows and their dates marked changed in one transaction), then
 * times the lake's drain: into directory tables, or through the catalog `catalogOf` opens.
 */
async function replayWindows(kind, from, first, windows, catalogOf) {
  const dir = tempDir();
  const wh = await openWorkingCopy(join(dir, 'r.duckdb'), join(dir, 'state'), { lake: true });
  const target = directoryTarget(join(dir, 'lake'));
  const cat = kind === 'catalog' ? catalogOf(`replay_${Date.now()}`) : null;
  const lake = icebergLake({
    runId: `replay-${kind}`,
    clock: realClock,
    sources: ['default'],
    retentionMs: 7 * DAY,
    ...(cat !== null && { catalog: cat.open }),
  });
  try {
    await wh.sql(`ATTACH '${from}' AS src (READ_ONLY)`);
    // The first drain opens the catalog (config, token, namespace) and finds nothing to commit.
    const s0 = performance.now();
    await lake.drain(wh, target);
    const startMs = performance.now() - s0;
    const out = [];
    for (let w = 0; w < windows; w++) {
      const start = addDays(first, 30 * w);
      const end = addDays(start, 29);
      const inWindow = `FROM src.line_items WHERE usage_date BETWEEN DATE '${start}' AND DATE '${end}'`;
      const [{ n: rows }] = await wh.sql(`SELECT count(*)::INTEGER AS n ${inWindow}`);
      const dates = (await wh.sql(`SELECT DISTINCT CAST(usage_date AS VARCHAR) AS d ${inWindow} ORDER BY 1`)).map((r) => r.d);
      await wh.transaction(async () => {
        await wh.sql(`INSERT INTO line_items BY NAME SELECT * ${inWindow}`);
        await wh.changed('line_items', 'default', dates);
      });
      const spentBefore = { ...(cat?.timed.spent ?? { ms: 0, calls: 0 }) };
      const requestsBefore = cat?.requests() ?? 0;
      const t0 = performance.now();
      await lake.drain(wh, target);
      const ms = performance.now() - t0;
      const spent = cat?.timed.spent ?? { ms: 0, calls: 0 };
      out.push({
        dates: dates.length,
        rows,
        ms,
        catalogMs: spent.ms - spentBefore.ms,
        calls: spent.calls - spentBefore.calls,
        requests: (cat?.requests() ?? 0) - requestsBefore,
      });
    }
    return { startMs, windows: out };
  } finally {
    wh.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const benches = { throughput: benchThroughput, commit: benchCommit, history: benchHistory, catalog: benchCatalog };
for (const [name, fn] of Object.entries(benches)) if (!which || which === name) await fn();
