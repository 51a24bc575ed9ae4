#!/usr/bin/env node
// Several-sources benchmarks. Prints figures; asserts nothing. Run after `npm ci` (uses dist/):
//   npm run bench:sources             both
//   npm run bench:sources -- rate     20 sources, each its own key at 60 requests a minute, ~30 pages each
//   npm run bench:sources -- memory   peak RSS of 1 and of 5 sources syncing 1 million line items each, no rate limit
//   npm run bench:sources -- idle     RSS per source waiting on its limiter (1 source against 200)
//   npm run bench:sources -- curve    the rate run at 20, 50, 100, 200 and 400 sources (BENCH_CURVE=20,50 for others)
// Environment: BENCH_SOURCES (default 20), BENCH_SOURCE_ROWS (default 1000000), BENCH_SOURCE_DAYS (default 30),
// BENCH_SOURCES_AT_ONCE (the rate run's --sources-at-once; default all); BENCH_RUNS (runs of each rate
// size: the median and spread are printed; default 1); BENCH_BIN (another build's dist/bin.cjs, measured
// with this harness and emulator);
// BENCH_SMOKE=1: tiny sizes. Both run the executable with a config file, as the CLI resolves it.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '../../dist/emulator/server.js';
import { addDays } from '../../dist/dates.js';
import { SOURCES_PER_CORE } from '../../dist/settings.js';
import { BIN, size, smoke, tempDir, watchChild } from './common.mjs';

const which = process.argv[2];
const SCOPES = ['line_items:read', 'rollups:read', 'anomalies:read', 'usage:write'];
const clock = { now: () => Date.now() };

/** Runs the executable with a config file of `n` sources; returns wall seconds, peak RSS and CPU seconds (sampled from /proc). */
async function syncSources(emulatorUrl, dir, n, extra) {
  // DuckDB's memory limit, the libuv pool and DuckDB's allocator options pass through, to try others.
  const env = { PATH: process.env.PATH, TZ: 'UTC' };
  for (const name of ['COSTSYNC_DUCKDB_MEMORY_LIMIT', 'UV_THREADPOOL_SIZE', 'DUCKDB_JE_MALLOC_CONF'])
    if (process.env[name]) env[name] = process.env[name];
  const sources = Array.from({ length: n }, (_, i) => {
    env[`KEY_${i}`] = `bench-key-${i}`;
    return { name: `ws-${i}`, 'base-url': emulatorUrl, 'api-key-env': `KEY_${i}` };
  });
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({ sources, db: join(dir, 'c.duckdb'), 'state-dir': join(dir, 'state'), ...extra }),
  );
  const started = Date.now();
  const child = spawn(BIN, ['sync', '--config', join(dir, 'config.json'), '--log-format', 'json', '--quiet'], {
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const { code, peakMb, cpuSeconds: cpu } = await watchChild(child);
  return { code, seconds: (Date.now() - started) / 1000, peakMb, cpuSeconds: cpu };
}

function keys(n) {
  return {
    keys: Array.from({ length: n }, (_, i) => ({ key: `bench-key-${i}`, scopes: SCOPES, plan: 'business', workspace: `ws-${i}` })),
    connections: [],
  };
}

/** One rate run of `n` sources: each key's use of its budget, peak RSS and CPU. */
async function rateRun(n, days, rpm) {
  const emulator = await startEmulator({
    port: 0,
    rateLimit: rpm,
    rowsPerDay: 1000,
    startDate: '2025-06-01',
    endDate: '2025-06-30',
    clock,
    anomaliesPerDay: 2,
    keys: keys(n),
  });
  const dir = tempDir();
  try {
    const times = new Map();
    const remember = emulator.options.onRequest;
    emulator.options.onRequest = (entry) => {
      remember?.(entry);
      if (entry.workspace) (times.get(entry.workspace) ?? times.set(entry.workspace, []).get(entry.workspace)).push(entry.atMs);
    };
    // The emulator runs in this process: its CPU is the machine's, not costsync's (both share the cores).
    const emulatorCpu = process.cpuUsage();
    // BENCH_SOURCES_AT_ONCE: --sources-at-once (the others wait their turn; each key's use is over its own span).
    const atOnce = process.env.BENCH_SOURCES_AT_ONCE ? { 'sources-at-once': Number(process.env.BENCH_SOURCES_AT_ONCE) } : {};
    const run = await syncSources(emulator.url, dir, n, {
      'start-date': addDays('2025-06-30', 1 - days),
      until: '2025-06-30',
      'rate-limit': rpm,
      ...atOnce,
    });
    const { user, system } = process.cpuUsage(emulatorCpu);
    const perKey = [...times.values()].map((t) => {
      const spanMin = (t.at(-1) - t[0]) / 60_000;
      // Requests after the first, over the time from the first to the last, against the key's budget.
      return { requests: t.length, utilisation: spanMin > 0 ? (t.length - 1) / spanMin / rpm : 0, seconds: (t.at(-1) - t[0]) / 1000 };
    });
    return {
      ...run,
      requests: perKey.reduce((s, k) => s + k.requests, 0) / n,
      slowest: Math.max(...perKey.map((k) => k.seconds)),
      least: Math.min(...perKey.map((k) => k.utilisation)),
      mean: perKey.reduce((s, k) => s + k.utilisation, 0) / n,
      throttled: emulator.requestLog.count({ status: 429 }),
      microsPerItem: (run.cpuSeconds / (n * days * 1000)) * 1e6,
      emulatorCpu: (user + system) / 1e6,
    };
  } finally {
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
const pct = (x) => `${(x * 100).toFixed(1)}%`;
/** The goal each key is held to: at least this share of its budget, or the line is flagged. */
const FULL_BUDGET = 0.97;

/**
 * BENCH_RUNS runs (default 1) of `n` sources, each its own key at 60 requests a minute; with more than
 * one, the median of each figure and its spread (least to most) are printed, as one run's noise is
 * about as large as the differences that matter here.
 */
async function benchRate(n = Number(size('BENCH_SOURCES', 20, 2))) {
  // 30 days of 1,000 rows: 30 line-item pages a source, plus its rollups and anomalies.
  const days = Number(size('BENCH_SOURCE_DAYS', 30, 2));
  // The smoke run (npm test) only checks the script works: ten times the rate, so it takes a second, not ten.
  const rpm = smoke ? 600 : 60;
  const runs = [];
  for (let i = 0, count = Number(process.env.BENCH_RUNS ?? 1); i < count; i++) {
    const run = await rateRun(n, days, rpm);
    runs.push(run);
    // A failed sync is no figure: said on its line, and the script exits 1 (so the smoke test fails).
    if (run.code !== 0) process.exitCode = 1;
    console.log(
      `sources: ${n} sources at ${rpm} requests/min each, ${Math.round(run.requests)} requests each: run ${run.seconds.toFixed(1)} s (exit ${run.code}), slowest source ${run.slowest.toFixed(1)} s; per-key use of its budget least ${pct(run.least)} / mean ${pct(run.mean)}; 429s: ${run.throttled}; peak RSS ${run.peakMb.toFixed(0)} MB; CPU costsync ${run.cpuSeconds.toFixed(1)} s (${run.microsPerItem.toFixed(1)} µs a line item), emulator ${run.emulatorCpu.toFixed(1)} s${run.code !== 0 ? '  << the sync failed (its error is above)' : ''}${run.least < FULL_BUDGET ? `  << least-served key under ${pct(FULL_BUDGET)}` : ''}`,
    );
  }
  const of = (pick) => runs.map(pick);
  const spread = (values, show) => `${show(median(values))} (${show(Math.min(...values))}..${show(Math.max(...values))})`;
  if (runs.length > 1) {
    console.log(
      `sources: ${n} sources, median of ${runs.length} runs (least..most): least-served key ${spread(
        of((r) => r.least),
        pct,
      )}, mean ${spread(
        of((r) => r.mean),
        pct,
      )}, peak RSS ${spread(
        of((r) => r.peakMb),
        (x) => `${x.toFixed(0)} MB`,
      )}, ${spread(
        of((r) => r.microsPerItem),
        (x) => `${x.toFixed(1)} µs`,
      )} a line item${median(of((r) => r.least)) < FULL_BUDGET ? `  << least-served key under ${pct(FULL_BUDGET)}` : ''}`,
    );
  }
  return {
    n,
    least: median(of((r) => r.least)),
    mean: median(of((r) => r.mean)),
    peakMb: median(of((r) => r.peakMb)),
    microsPerItem: median(of((r) => r.microsPerItem)),
  };
}

async function benchMemory() {
  const rows = Number(size('BENCH_SOURCE_ROWS', 1_000_000, 600));
  for (const n of smoke ? [2] : [1, 5]) {
    const emulator = await startEmulator({
      port: 0,
      rateLimit: 0,
      rowsPerDay: Math.ceil(rows / 30),
      startDate: '2025-06-01',
      endDate: '2025-06-30',
      clock,
      anomaliesPerDay: 2,
      keys: keys(n),
    });
    const dir = tempDir();
    try {
      const run = await syncSources(emulator.url, dir, n, {
        'start-date': '2025-06-01',
        until: '2025-06-30',
        'rate-limit': 1000000,
        streams: 'line_items',
      });
      console.log(
        `memory: ${n} source(s) x ${rows} line items, no rate limit: ${run.seconds.toFixed(1)} s (exit ${run.code}), peak RSS ${run.peakMb.toFixed(0)} MB`,
      );
    } finally {
      await emulator.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/**
 * The same run at 20, 50, 100, 200 and 400 sources (BENCH_CURVE: another list), then one line for each
 * size: how many keys a core keeps at full budget is the largest size whose least-served key is at
 * FULL_BUDGET or more, over the machine's cores.
 */
async function benchCurve() {
  const counts = (process.env.BENCH_CURVE ?? (smoke ? '2,3' : '20,50,100,200,400')).split(',').map(Number);
  const results = [];
  for (const n of counts) results.push(await benchRate(n));
  const cores = availableParallelism();
  console.log(`curve (${cores} cores): sources | least-served key | mean | peak RSS | CPU a line item`);
  for (const r of results) {
    console.log(`curve: ${r.n} | ${pct(r.least)} | ${pct(r.mean)} | ${r.peakMb.toFixed(0)} MB | ${r.microsPerItem.toFixed(1)} µs`);
  }
  // Only the sources syncing at once share the cores (the others wait their turn): those are the keys served.
  const atOnce = Number(process.env.BENCH_SOURCES_AT_ONCE ?? 0) || SOURCES_PER_CORE * cores;
  const sharing = (r) => Math.min(r.n, atOnce);
  // A number at once is kept only when no run with as many or fewer at once fell short.
  const shortAt = Math.min(...results.filter((r) => r.least < FULL_BUDGET).map(sharing));
  const served = results.filter((r) => r.least >= FULL_BUDGET && sharing(r) < shortAt).map(sharing);
  console.log(
    served.length
      ? `curve: keys a core keeps at full budget (least-served >= ${pct(FULL_BUDGET)}): ${Math.max(...served) / cores} (${Math.max(...served)} at once on ${cores} cores)`
      : `curve: no size kept every key at ${pct(FULL_BUDGET)} of its budget`,
  );
}

/**
 * What a source costs while it waits for its limiter: every source's first request is held by the
 * emulator until all have asked, then RSS and the heap are read (1 source against `n`).
 */
async function benchIdle() {
  const n = Number(size('BENCH_IDLE_SOURCES', 200, 3));
  const figures = [];
  for (const count of [1, n]) {
    let asked = 0;
    let release;
    const held = new Promise((resolve) => {
      release = resolve;
    });
    let allAsked;
    const everyone = new Promise((resolve) => {
      allAsked = resolve;
    });
    const emulator = await startEmulator({
      port: 0,
      rateLimit: 0,
      rowsPerDay: 10,
      startDate: '2025-06-01',
      endDate: '2025-06-30',
      clock,
      keys: keys(count),
      // Every source starts at once (--sources-at-once) and asks for its one window's first page.
      beforeReply: async ({ route }) => {
        if (route === 'line-items' && ++asked >= count) allAsked();
        await held;
      },
    });
    const dir = tempDir();
    try {
      const env = { PATH: process.env.PATH, TZ: 'UTC' };
      const sources = Array.from({ length: count }, (_, i) => {
        env[`KEY_${i}`] = `bench-key-${i}`;
        return { name: `ws-${i}`, 'base-url': emulator.url, 'api-key-env': `KEY_${i}` };
      });
      writeFileSync(
        join(dir, 'config.json'),
        JSON.stringify({
          sources,
          db: join(dir, 'c.duckdb'),
          'state-dir': join(dir, 'state'),
          'start-date': '2025-06-25',
          until: '2025-06-30',
          streams: 'line_items',
          'sources-at-once': count,
          'rate-limit': 100000,
        }),
      );
      const child = spawn(BIN, ['sync', '--config', join(dir, 'config.json'), '--log-format', 'json', '--quiet'], {
        env,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      await everyone;
      const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
      figures.push({ count, rss });
      release();
      await once(child, 'exit');
    } finally {
      await emulator.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const [one, many] = figures;
  console.log(
    `idle: RSS with every source waiting on its first request: 1 source ${one.rss.toFixed(0)} MB, ${many.count} sources ${many.rss.toFixed(0)} MB = ${(((many.rss - one.rss) * 1024) / (many.count - 1)).toFixed(0)} kB per idle source`,
  );
}

if (!which || which === 'rate') await benchRate();
if (!which || which === 'memory') await benchMemory();
if (!which || which === 'idle') await benchIdle();
if (which === 'curve') await benchCurve();
