#!/usr/bin/env node
// Sync benchmarks. Prints figures; asserts nothing. Run after `npm ci` (uses dist/):
//   npm run bench                 all of them
//   npm run bench -- rate         one of: startup, requests, rate, throughput, memory, stop, disk
// Environment: BENCH_MEMORY_ROWS (default 5000000), BENCH_MONTH_ROWS (default 3000000: the month the memory
// benchmark writes to each lake format), BENCH_THROUGHPUT_ROWS (default 1000000), BENCH_DISK_ROWS (default 1000000);
// BENCH_SMOKE=1: tiny sizes.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { lstatSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import { DuckDBInstance } from '@duckdb/node-api';
import { startEmulator } from '../../dist/emulator/server.js';
import { runSync } from '../../dist/sync/runner.js';
import { addDays } from '../../dist/dates.js';
import { availableParallelism } from 'node:os';
import { BIN, CLI, cpuSeconds, ownThreadSeconds, quietLogger, size, smoke, syncConfig, tempDir } from './common.mjs';

const which = process.argv[2];
const fixedClock = { now: () => Date.parse('2025-12-31T12:00:00Z') };

/** The CLI's settings for these flags, line items only, into `dir`. */
function config(url, dir, flags) {
  return syncConfig(
    {
      'base-url': url,
      db: join(dir, 'b.duckdb'),
      'state-dir': join(dir, 'state'),
      streams: 'line_items',
      until: '2025-12-31',
      ...flags,
    },
    fixedClock.now(),
  );
}

async function benchRequests() {
  const cases = smoke
    ? [[123, 3, 1]]
    : [
        [1234, 31, 30],
        [450, 90, 7],
        [100_000, 3, 1],
      ];
  for (const [rowsPerDay, days, windowDays] of cases) {
    const emulator = await startEmulator({
      port: 0,
      rateLimit: 0,
      rowsPerDay,
      startDate: '2025-10-02',
      endDate: '2025-12-31',
      clock: fixedClock,
    });
    const dir = tempDir();
    try {
      const start = addDays('2025-12-31', -(days - 1));
      const summary = await runSync({
        config: config(emulator.url, dir, { 'start-date': start, 'window-days': windowDays }),
        logger: quietLogger,
      });
      const rows = rowsPerDay * days;
      const windows = Math.ceil(days / windowDays);
      const lineItems = emulator.requestLog.count({ route: 'line-items' });
      const checks = emulator.requestLog.count({ route: 'rollups' });
      console.log(
        `requests: ${rows} rows in ${windows} windows: ${lineItems} line-item requests (bound ceil(rows/1000) + windows = ${Math.ceil(rows / 1000) + windows}, minimum ${Math.ceil(rows / 1000)}) + ${checks} rollup request(s) (the window checks, one a window; nothing shows progress here, so no estimate request) = ${summary.streams.line_items.requests}`,
      );
    } finally {
      await emulator.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/**
 * A nightly's requests with the recheck: a backfill, a nightly over unchanged data, then one after the API
 * restated older days (two runs of adjacent days). At the demo's volume with the default horizon, and at
 * 500,000 rows a day over 10 days with a 9-day horizon (the recheck's cost does not depend on the
 * horizon's length: one response per grouping).
 */
async function benchNightlyRequests() {
  const cases = smoke
    ? [{ rowsPerDay: 20, days: 50, recheckDays: null, changed: [10, 20, 21] }]
    : [
        { rowsPerDay: 500, days: 90, recheckDays: null, changed: [10, 20, 21] },
        // Issue 81's case: 300 line items a day and about 60 alerts in the horizon; four older dates and one of the lookback's restated.
        { rowsPerDay: 300, days: 90, recheckDays: null, changed: [5, 12, 19, 26, 1], anomaliesPerDay: 1 },
        // A day a window, as a source of this size would sync (a 30-day window of 15 million rows is no unit of
        // progress); DuckDB at 1 GB: at the default 64 MB, replacing a stored day of 500,000 rows runs out of memory.
        { rowsPerDay: 500_000, days: 10, recheckDays: 9, changed: [5, 7, 8], windowDays: 1, memory: '1GB' },
      ];
  for (const c of cases) {
    const end = '2025-12-31';
    if (c.memory !== undefined) process.env.COSTSYNC_DUCKDB_MEMORY_LIMIT = c.memory;
    else delete process.env.COSTSYNC_DUCKDB_MEMORY_LIMIT;
    const emulator = await startEmulator({
      port: 0,
      rateLimit: 0,
      rowsPerDay: c.rowsPerDay,
      anomaliesPerDay: c.anomaliesPerDay ?? 2,
      startDate: addDays(end, -(c.days - 1)),
      endDate: end,
      clock: fixedClock,
    });
    const dir = tempDir();
    try {
      const flags = {
        'base-url': emulator.url,
        db: join(dir, 'b.duckdb'),
        'state-dir': join(dir, 'state'),
        until: end,
        'start-date': addDays(end, -(c.days - 1)),
        ...(c.recheckDays !== null && { 'recheck-days': c.recheckDays }),
        ...(c.windowDays !== undefined && { 'window-days': c.windowDays }),
      };
      const run = async () => {
        emulator.requestLog.reset();
        const summary = await runSync({ config: syncConfig(flags, fixedClock.now()), logger: quietLogger, clock: fixedClock });
        if (summary.outcome !== 'success') throw new Error(`the benchmark's sync ended ${summary.outcome}: ${String(summary.error)}`);
        const by = (route) => emulator.requestLog.count({ route });
        return {
          total: emulator.requestLog.count(),
          lineItems: by('line-items'),
          rollups: by('rollups'),
          anomalies: by('anomalies'),
          summary,
        };
      };
      const backfill = await run();
      const plain = await run();
      for (const back of c.changed) emulator.restateDay(addDays(end, -back), { changeRate: 0.2, deleteRate: 0.05, addRows: 3 });
      const changed = await run();
      const text = (r) => `${r.total} requests (line items ${r.lineItems}, rollups ${r.rollups}, anomalies ${r.anomalies})`;
      const alerts = emulator.dataset.anomaliesAt(fixedClock.now()).filter((a) => a.anomaly.detected_date >= addDays(end, -45)).length;
      console.log(
        `requests, nightly at ${c.rowsPerDay} rows a day over ${c.days} days, ${alerts} alerts detected in the last 45 days (horizon ${c.recheckDays === null ? 'default' : `${c.recheckDays} days`}; the backfill ${text(backfill)}): unchanged ${text(plain)}; with days ${c.changed.join(', ')} back restated ${text(changed)}, ${changed.summary.streams.line_items.olderSynced} older date(s) synced again`,
      );
    } finally {
      await emulator.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

async function benchRate() {
  const limit = 600;
  const emulator = await startEmulator({
    port: 0,
    rateLimit: limit,
    rowsPerDay: 2500,
    startDate: '2025-11-01',
    endDate: '2025-12-31',
    clock: undefined,
    faults: { latencyMs: smoke ? 10 : 1000 },
  });
  const dir = tempDir();
  const times = [];
  try {
    const cfg = syncConfig({
      'base-url': emulator.url,
      db: join(dir, 'b.duckdb'),
      'state-dir': join(dir, 'state'),
      'start-date': smoke ? '2025-12-29' : '2025-11-02',
      until: '2025-12-31',
      'rate-limit': limit,
      'window-days': 1,
      concurrency: 12,
      streams: 'line_items,rollups',
    });
    const original = emulator.options.onRequest;
    emulator.options.onRequest = (e) => {
      times.push(e.atMs);
      original?.(e);
    };
    const started = Date.now();
    const summary = await runSync({ config: cfg, logger: quietLogger });
    const secs = (Date.now() - started) / 1000;
    times.sort((a, b) => a - b);
    const overall = (times.length - 1) / ((times.at(-1) - times[0]) / 60_000);
    // Steady state: the middle 80% of arrivals (the first and last chains ramp up and drain).
    const lo = Math.floor(times.length * 0.1);
    const hi = Math.ceil(times.length * 0.9) - 1;
    const steady = (hi - lo) / ((times[hi] - times[lo]) / 60_000);
    console.log(
      `rate: limit ${limit}/min, ${emulator.options.faults.latencyMs} ms latency: ${times.length} requests in ${secs.toFixed(1)} s; steady arrival rate ${steady.toFixed(1)}/min = ${((steady / limit) * 100).toFixed(1)}% of the limit (whole run incl. ramp and drain ${((overall / limit) * 100).toFixed(1)}%); 429s: ${emulator.requestLog.count({ status: 429 })}; outcome ${summary.outcome}`,
    );
  } finally {
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts `costsync emulator` in its own process (so its CPU is not the sync's); returns url and stop. */
async function emulatorProcess(args) {
  const emu = spawn(process.execPath, [CLI, 'emulator', '--port', '0', '--rate-limit', '0', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [url] = await once(createInterface({ input: emu.stdout }), 'line');
  return { url, pid: emu.pid, stop: () => emu.kill('SIGTERM') };
}

async function readJsonRate(pagesDir, dbPath, settings) {
  const instance = await DuckDBInstance.create(dbPath);
  const conn = await instance.connect();
  try {
    for (const s of settings) await conn.run(s);
    const t = performance.now();
    const cpu0 = process.cpuUsage();
    await conn.run(
      `CREATE TABLE t AS SELECT unnest(data, recursive := true) FROM read_json('${pagesDir}/*.json', columns = {data: 'STRUCT(id VARCHAR, usage_date DATE, provider_type VARCHAR, provider_service VARCHAR, net_amount_usd DOUBLE, currency_original VARCHAR, project_id VARCHAR, user_email VARCHAR)[]'}, maximum_object_size = 4194304)`,
    );
    const secs = (performance.now() - t) / 1000;
    const { user, system } = process.cpuUsage(cpu0);
    const n = Number((await conn.runAndReadAll('SELECT count(*) FROM t')).getRows()[0][0]);
    return { n, secs, rate: n / secs, cpu: (user + system) / 1e6 };
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/** Fetches and parses every line-item page of `days` one-day windows (four at once), storing nothing. */
async function bareClientRate(url, start, days) {
  const queue = Array.from({ length: days }, (_, i) => addDays(start, i));
  let n = 0;
  const t = performance.now();
  const worker = async () => {
    for (let day = queue.shift(); day !== undefined; day = queue.shift()) {
      let cursor = null;
      do {
        const q = new URLSearchParams({ start_date: day, end_date: day, limit: '1000', ...(cursor ? { cursor } : {}) });
        const res = await request(`${url}/api/v1/public/line-items?${q}`, { headers: { 'x-api-key': 'demo-key' } });
        const body = JSON.parse(await res.body.text());
        n += body.data.length;
        cursor = body.meta.has_more ? body.meta.next_cursor : null;
      } while (cursor);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  const secs = (performance.now() - t) / 1000;
  return { n, secs, rate: n / secs };
}

async function benchThroughput() {
  const rows = Number(size('BENCH_THROUGHPUT_ROWS', 1_000_000, 2_000));
  const rowsPerDay = Math.min(50_000, rows);
  const days = Math.ceil(rows / rowsPerDay);
  const { url, pid, stop } = await emulatorProcess([
    '--rows-per-day',
    String(rowsPerDay),
    '--start-date',
    '2025-10-01',
    '--end-date',
    '2025-12-31',
  ]);
  const dir = tempDir();
  try {
    const start = addDays('2025-12-31', -(days - 1));
    // 1. The sync, end to end over loopback HTTP into DuckDB, with its defaults (one-day windows here).
    const emulator0 = cpuSeconds(pid);
    const own0 = ownThreadSeconds();
    // The whole process's CPU, threads that exited with the run's DuckDB included (a thread's own count goes with it).
    const all0 = process.cpuUsage();
    const t0 = performance.now();
    const summary = await runSync({
      config: config(url, dir, { 'start-date': start, 'window-days': 1, concurrency: 4 }),
      logger: quietLogger,
    });
    const syncSecs = (performance.now() - t0) / 1000;
    const own1 = ownThreadSeconds();
    const all1 = process.cpuUsage(all0);
    const main = own1.main - own0.main;
    const syncCpu = { main, others: (all1.user + all1.system) / 1e6 - main, emulator: cpuSeconds(pid) - emulator0 };
    const synced = summary.streams.line_items.inserted;
    // 2. The same pages, saved as files, loaded by DuckDB's own read_json (no HTTP, no checks).
    const pagesDir = join(dir, 'pages');
    mkdirSync(pagesDir);
    let cursor = null;
    let n = 0;
    do {
      const q = new URLSearchParams({ start_date: start, end_date: '2025-12-31', limit: '1000', ...(cursor ? { cursor } : {}) });
      const res = await request(`${url}/api/v1/public/line-items?${q}`, { headers: { 'x-api-key': 'demo-key' } });
      const text = await res.body.text();
      const body = JSON.parse(text);
      writeFileSync(join(pagesDir, `p${String(n++).padStart(6, '0')}.json`), text);
      cursor = body.meta.has_more ? body.meta.next_cursor : null;
    } while (cursor);
    // 3. A bare client over the same pages from the same emulator: undici and JSON.parse, one-day
    //    windows four at a time as the sync fetches them, nothing checked or stored.
    const emulator2 = cpuSeconds(pid);
    const all2 = process.cpuUsage();
    const bare = await bareClientRate(url, start, days);
    const all3 = process.cpuUsage(all2);
    const bareCpu = { client: (all3.user + all3.system) / 1e6, emulator: cpuSeconds(pid) - emulator2 };
    const free = await readJsonRate(pagesDir, join(dir, 'rj1.duckdb'), []);
    // The closest to costsync's own settings that read_json can run the page files with (64 MB is too little for its 32 MB buffers).
    const same = await readJsonRate(pagesDir, join(dir, 'rj2.duckdb'), ["SET memory_limit = '96MB'", 'SET threads = 1']);
    const syncRate = synced / syncSecs;
    console.log(`throughput: sync ${synced} rows in ${syncSecs.toFixed(1)} s = ${Math.round(syncRate)} rows/s end to end`);
    console.log(
      `throughput: bare client (undici + JSON.parse, 4 windows at once, nothing stored): ${bare.n} rows in ${bare.secs.toFixed(1)} s = ${Math.round(bare.rate)} rows/s; sync/bare = ${(syncRate / bare.rate).toFixed(2)} (target >= 0.8)`,
    );
    // Where the gap is: both runs share these cores with the emulator, so the sync can be no faster than
    // its CPU and the emulator's spread over every core.
    const cores = availableParallelism();
    const syncTotal = syncCpu.main + syncCpu.others;
    const floorSecs = (syncTotal + syncCpu.emulator) / cores;
    const budget = (cores * bare.secs) / 0.8 - syncCpu.emulator;
    console.log(
      `throughput: CPU of the sync: costsync ${syncTotal.toFixed(1)} s (main thread ${syncCpu.main.toFixed(1)} s; other threads ${syncCpu.others.toFixed(1)} s: DuckDB's statements, file writes, V8's collector), emulator ${syncCpu.emulator.toFixed(1)} s; of the bare client: client ${bareCpu.client.toFixed(1)} s, emulator ${bareCpu.emulator.toFixed(1)} s`,
    );
    console.log(
      `throughput: on ${cores} cores the sync's CPU and the emulator's take at least ${floorSecs.toFixed(1)} s: at this cost sync/bare can be at most ${(bare.secs / floorSecs).toFixed(2)}; 0.8 needs costsync's CPU at ${budget.toFixed(1)} s or less for these rows (${((budget / synced) * 1e6).toFixed(1)} µs a row; now ${((syncTotal / synced) * 1e6).toFixed(1)})`,
    );
    console.log(
      `throughput: read_json, DuckDB defaults (all threads, no memory limit): ${Math.round(free.rate)} rows/s; sync/read_json = ${(syncRate / free.rate).toFixed(2)}`,
    );
    console.log(
      `throughput: read_json, one thread, 96 MB: ${Math.round(same.rate)} rows/s; sync/read_json = ${(syncRate / same.rate).toFixed(2)} (target >= 0.5)`,
    );
    // The floor: fetching and parsing the pages (the bare client) plus turning them into columns (read_json, one thread).
    const floor = bareCpu.client + same.cpu;
    console.log(
      `throughput: costsync's CPU ${syncTotal.toFixed(1)} s against the floor ${floor.toFixed(1)} s (bare client ${bareCpu.client.toFixed(1)} s + read_json on one thread ${same.cpu.toFixed(1)} s) for ${synced} rows: ${(syncTotal / floor).toFixed(2)}x the floor (target <= 1.5)${syncTotal / floor > 1.5 ? '  << over 1.5x' : ''}`,
    );
  } finally {
    stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs the `costsync` executable with `args` under /usr/bin/time: its exit code, seconds and peak RSS in
 * MB. A failed run is no figure: what it says on stderr is passed on, and the script exits 1 at the end
 * (so the smoke test fails).
 */
async function timedRun(args) {
  const t0 = performance.now();
  // The bin itself, as `costsync` and `npx costsync` run it (its shebang sets Node's flags).
  const child = spawn('/usr/bin/time', ['-f', 'MAXRSS_KB=%M', BIN, ...args], {
    env: { ...process.env, COSTSYNC_API_KEY: 'demo-key' },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => {
    err += d;
  });
  const [code] = await once(child, 'exit');
  const secs = (performance.now() - t0) / 1000;
  const kb = Number(/MAXRSS_KB=(\d+)/.exec(err)?.[1] ?? NaN);
  process.stderr.write(err.replace(/^(Command exited with non-zero status \d+|MAXRSS_KB=\d+)\n/gm, ''));
  if (code !== 0) process.exitCode = 1;
  return { code, secs, mb: kb / 1024 };
}

/** An emulator process serving `rows` line items from 2025-10-01, at most 100,000 a day, and how it spreads them. */
async function emulatorOf(rows) {
  const rowsPerDay = Math.min(100_000, rows);
  const days = Math.ceil(rows / rowsPerDay);
  const { url, stop } = await emulatorProcess([
    '--rows-per-day',
    String(rowsPerDay),
    '--start-date',
    '2025-10-01',
    '--end-date',
    '2025-12-31',
  ]);
  return { url, stop, rowsPerDay, days };
}

async function benchMemory() {
  const rows = Number(size('BENCH_MEMORY_ROWS', 5_000_000, 2_000));
  const dir = tempDir();
  // The emulator in its own process, so only the sync's memory is measured.
  const { url, stop, rowsPerDay, days } = await emulatorOf(rows);
  try {
    const { code, secs, mb } = await timedRun([
      'sync',
      '--base-url',
      url,
      '--db',
      join(dir, 'm.duckdb'),
      '--state-dir',
      join(dir, 'state'),
      '--streams',
      'line_items',
      '--start-date',
      addDays('2025-12-31', -(days - 1)),
      '--until',
      '2025-12-31',
      '--rate-limit',
      '1000000',
      '--window-days',
      process.env.BENCH_WINDOW_DAYS ?? '7',
      '--quiet',
    ]);
    console.log(
      `memory: sync of ${rowsPerDay * days} rows, exit ${code}, ${secs.toFixed(0)} s, peak RSS ${mb.toFixed(0)} MB (target < 250 MB)`,
    );
  } finally {
    stop();
    rmSync(dir, { recursive: true, force: true });
  }
  await benchMonthToLakes();
}

/**
 * A month of line items synced with each lake format at default settings (one 30-day window, DuckDB's
 * 64MB), the API's rate limit lifted: the lake writes a whole month of line_items and focus at once.
 */
async function benchMonthToLakes() {
  // At the smoke size, 3 days: the part runs, and a lake's 30 partitions a table are not written twice over.
  const days = smoke ? 3 : 30;
  const last = addDays('2025-11-01', days - 1);
  const rowsPerDay = Math.min(100_000, Math.ceil(Number(size('BENCH_MONTH_ROWS', 3_000_000, 2_000)) / 30));
  const { url, stop } = await emulatorProcess(['--rows-per-day', String(rowsPerDay), '--start-date', '2025-11-01', '--end-date', last]);
  try {
    for (const format of ['iceberg', 'parquet']) {
      const dir = tempDir();
      try {
        const { code, secs, mb } = await timedRun([
          'sync',
          '--base-url',
          url,
          '--db',
          join(dir, 'm.duckdb'),
          '--state-dir',
          join(dir, 'state'),
          '--format',
          format,
          '--out',
          join(dir, 'lake'),
          '--start-date',
          '2025-11-01',
          '--until',
          last,
          '--rate-limit',
          '1000000',
          '--quiet',
        ]);
        console.log(
          `lake memory, ${format}: sync of ${days} days of ${rowsPerDay * days} line items with --format ${format}, exit ${code}, ${secs.toFixed(0)} s, peak RSS ${mb.toFixed(0)} MB`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    stop();
  }
}

/**
 * Seconds from SIGTERM to exit while a lake is filled, per output: a warehouse synced without a lake,
 * then the same sync with one (its lake filled first), SIGTERMed once it has run BENCH_STOP_AFTER_MS.
 * The bucket is BENCH_S3_ENDPOINT's (and its keys), else a radosgw started here; the catalog is the tests' catalog server.
 */
async function benchStop() {
  const { startCatalogServer } = await import('../catalog/server.mjs');
  const months = smoke ? 1 : 6;
  const rowsPerDay = smoke ? 20 : 1000;
  const emulator = await startEmulator({
    port: 0,
    rateLimit: 0,
    rowsPerDay,
    startDate: '2025-01-01',
    endDate: '2025-12-31',
    clock: fixedClock,
  });
  const afterMs = Number(process.env.BENCH_STOP_AFTER_MS ?? (smoke ? 600 : 3000));
  const start = addDays('2025-12-31', -(months * 30 - 1));
  const env = { PATH: process.env.PATH ?? '', COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
  // The bucket: the given S3 server (the test suite's, for the smoke run), else a radosgw of its own.
  let gateway = null;
  if (!process.env.BENCH_S3_ENDPOINT && !smoke) {
    const { startRadosgw } = await import('../system/rgw.mjs');
    gateway = await startRadosgw(tempDir(), { storeBytes: 2 ** 30 });
  }
  const s3 = process.env.BENCH_S3_ENDPOINT
    ? {
        AWS_ENDPOINT_URL_S3: process.env.BENCH_S3_ENDPOINT,
        AWS_ACCESS_KEY_ID: process.env.BENCH_S3_KEY_ID,
        AWS_SECRET_ACCESS_KEY: process.env.BENCH_S3_SECRET,
        AWS_REGION: 'us-east-1',
      }
    : gateway !== null
      ? {
          AWS_ENDPOINT_URL_S3: gateway.endpoint,
          AWS_ACCESS_KEY_ID: gateway.accessKeyId,
          AWS_SECRET_ACCESS_KEY: gateway.secretAccessKey,
          AWS_REGION: 'us-east-1',
        }
      : null;
  const spawnRun = (args, extra = {}) => spawn(process.execPath, [BIN, ...args], { env: { ...env, ...extra }, stdio: 'ignore' });
  try {
    const dir = tempDir();
    const catalog = await startCatalogServer({ root: join(dir, 'catalog') });
    try {
      const base = [
        'sync',
        '--base-url',
        emulator.url,
        '--db',
        join(dir, 'b.duckdb'),
        '--start-date',
        start,
        '--until',
        '2025-12-31',
        '--rate-limit',
        '1000000',
        '--quiet',
      ];
      const first = spawnRun([...base, '--state-dir', join(dir, 'state')]);
      const [firstCode] = await once(first, 'exit');
      const outputs = [
        ['parquet directory', ['--format', 'parquet', '--out', join(dir, 'pq')], {}],
        ['iceberg directory', ['--format', 'iceberg', '--out', join(dir, 'ice')], {}],
        ['iceberg catalog', ['--format', 'iceberg', '--catalog', catalog.url], {}],
        ...(s3 === null ? [] : [['parquet bucket', ['--format', 'parquet', '--out', `s3://bench-stop-${process.pid}/costs`], s3]]),
      ];
      if (s3 !== null) {
        const { S3Client, CreateBucketCommand } = await import('@aws-sdk/client-s3');
        const client = new S3Client({
          endpoint: s3.AWS_ENDPOINT_URL_S3,
          forcePathStyle: true,
          region: 'us-east-1',
          credentials: { accessKeyId: s3.AWS_ACCESS_KEY_ID, secretAccessKey: s3.AWS_SECRET_ACCESS_KEY },
        });
        await client.send(new CreateBucketCommand({ Bucket: `bench-stop-${process.pid}` }));
      }
      // The smoke run (npm test) checks the part works: one output, the catalog's (the most code).
      for (const [name, flags, extra] of smoke ? outputs.filter(([name]) => name === 'iceberg catalog') : outputs) {
        // Each output from the same warehouse, so each fills its whole lake: a copy of the first run's.
        const own = join(dir, name.replace(/ /g, '-'));
        mkdirSync(own, { recursive: true });
        const { copyFileSync } = await import('node:fs');
        copyFileSync(join(dir, 'b.duckdb'), join(own, 'b.duckdb'));
        const args = [
          ...base.map((a) => (a === join(dir, 'b.duckdb') ? join(own, 'b.duckdb') : a)),
          '--state-dir',
          join(own, 'state'),
          ...flags,
        ];
        const child = spawnRun(args, extra);
        const exited = once(child, 'exit');
        await new Promise((resolve) => setTimeout(resolve, afterMs));
        const stopped = performance.now();
        child.kill('SIGTERM');
        const [code] = await exited;
        console.log(
          `stop: ${name}, ${months * 30 * rowsPerDay} line items (first run exit ${firstCode}), SIGTERM ${afterMs} ms into the lake's fill: exit ${code} ${((performance.now() - stopped) / 1000).toFixed(2)} s after the signal`,
        );
      }
    } finally {
      await catalog.close();
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    await emulator.close();
    await gateway?.stop();
  }
}

/** Bytes the files under `dir` take on disk (allocated blocks, so sparse files count as they are). */
function diskBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    try {
      total += entry.isDirectory() ? diskBytes(path) : lstatSync(path).blocks * 512;
    } catch {
      // removed while being counted (a spool page, a temporary file)
    }
  }
  return total;
}

/**
 * The disk a sync takes, all streams, at default settings: the peak of everything under its directory
 * (the published --db, the working copy and its WAL, the spool, DuckDB's temporary files) sampled every
 * 50 ms while it runs, and what is left at the end. The figure behind CS_ERR_DISK_FULL's hint.
 */
async function benchDisk() {
  const rows = Number(size('BENCH_DISK_ROWS', 1_000_000, 2_000));
  const dir = tempDir();
  const { url, stop, rowsPerDay, days } = await emulatorOf(rows);
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, diskBytes(dir));
  }, 50);
  try {
    const { code, secs } = await timedRun([
      'sync',
      '--base-url',
      url,
      '--db',
      join(dir, 'm.duckdb'),
      '--state-dir',
      join(dir, 'state'),
      '--start-date',
      addDays('2025-12-31', -(days - 1)),
      '--until',
      '2025-12-31',
      '--rate-limit',
      '1000000',
      '--quiet',
    ]);
    clearInterval(sampler);
    const end = diskBytes(dir);
    peak = Math.max(peak, end);
    const perMillion = (bytes) => ((bytes / 1e6) * (1_000_000 / (rowsPerDay * days))).toFixed(0);
    console.log(
      `disk: sync of ${rowsPerDay * days} line items (all streams), exit ${code}, ${secs.toFixed(0)} s, peak ${(peak / 1e6).toFixed(1)} MB (${perMillion(peak)} MB a million), at the end ${(end / 1e6).toFixed(1)} MB (${perMillion(end)} MB a million)`,
    );
  } finally {
    clearInterval(sampler);
    stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The CPU one process spends before it does anything: every scheduled run and every test pays it. */
async function benchStartup() {
  const runs = smoke ? 1 : 5;
  const cpu = async (args) => {
    const times = [];
    for (let i = 0; i < runs; i++) {
      const child = spawn('/usr/bin/time', ['-f', 'CPU_S=%U %S', BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d) => {
        err += d;
      });
      await once(child, 'exit');
      const [user, sys] = (/CPU_S=([\d.]+) ([\d.]+)/.exec(err) ?? []).slice(1).map(Number);
      times.push(user + sys);
    }
    return times.sort((a, b) => a - b)[Math.floor(times.length / 2)].toFixed(2);
  };
  console.log(
    `startup: CPU of a process, median of ${runs}: costsync --version ${await cpu(['--version'])} s, costsync sync --help ${await cpu(['sync', '--help'])} s`,
  );
}

const benches = {
  startup: benchStartup,
  requests: async () => {
    await benchRequests();
    await benchNightlyRequests();
  },
  rate: benchRate,
  throughput: benchThroughput,
  memory: benchMemory,
  stop: benchStop,
  disk: benchDisk,
};
for (const [name, fn] of Object.entries(benches)) {
  if (which && which !== name) continue;
  await fn();
}
