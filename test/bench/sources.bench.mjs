#!/usr/bin/env node
// Several-sources benchmarks. Prints figures; asserts nothing. Run after `npm ci` (uses dist/):
//   npm run bench:sources             both
//   npm run bench:sources -- rate     20 sources, each its own key at 60 requests a minute, ~30 pages each
//   npm run bench:sources -- memory   peak RSS of 1 and of 5 sources syncing 1 million line items each, no rate limit
//   npm run bench:sources -- idle     RSS per source waiting on its limiter (1 source against 200)
//   npm run bench:sources -- curve    the rate run at 20, 50, 100 and 200 sources (BENCH_CURVE=20,50 for others)
// Environment: BENCH_SOURCES (default 20), BENCH_SOURCE_ROWS (default 1000000), BENCH_SOURCE_DAYS (default 30),
// BENCH_SOURCES_AT_ONCE (the rate run's --sources-at-once; default all);
// BENCH_SMOKE=1: tiny sizes. Both run the executable with a config file, as the CLI resolves it.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator } from '../../dist/emulator/server.js';
import { addDays } from '../../dist/dates.js';
import { BIN, cpuSeconds, size, smoke, tempDir } from './common.mjs';

const which = process.argv[2];
const SCOPES = ['line_items:read', 'rollups:read', 'anomalies:read', 'usage:write'];
const clock = { now: () => Date.now() };

/** Runs the executable with a config file of `n` sources; returns wall seconds, peak RSS and CPU seconds (sampled from /proc). */
async function syncSources(emulatorUrl, dir, n, extra) {
  const env = { PATH: process.env.PATH, TZ: 'UTC' };
  const sources = Array.from({ length: n }, (_, i) => {
    env[`KEY_${i}`] = `key-${i}`;
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
  }, 100);
  const [code] = await once(child, 'exit');
  clearInterval(timer);
  return { code, seconds: (Date.now() - started) / 1000, peakMb: peak / 1e6, cpuSeconds: cpu };
}

function keys(n) {
  return {
    keys: Array.from({ length: n }, (_, i) => ({ key: `key-${i}`, scopes: SCOPES, plan: 'business', workspace: `ws-${i}` })),
    connections: [],
  };
}

async function benchRate(n = Number(size('BENCH_SOURCES', 20, 2))) {
  // 30 days of 1,000 rows: 30 line-item pages a source, plus its rollups and anomalies.
  const days = Number(size('BENCH_SOURCE_DAYS', 30, 2));
  // The smoke run (npm test) only checks the script works: ten times the rate, so it takes a second, not ten.
  const rpm = smoke ? 600 : 60;
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
    const rows = n * days * 1000;
    const perKey = [...times.values()].map((t) => {
      const spanMin = (t.at(-1) - t[0]) / 60_000;
      // Requests after the first, over the time from the first to the last, against 60 a minute.
      return { requests: t.length, utilisation: spanMin > 0 ? (t.length - 1) / spanMin / rpm : 0, seconds: (t.at(-1) - t[0]) / 1000 };
    });
    const slowest = Math.max(...perKey.map((k) => k.seconds));
    const low = Math.min(...perKey.map((k) => k.utilisation));
    console.log(
      `sources: ${n} sources at ${rpm} requests/min each, ${Math.round(perKey.reduce((s, k) => s + k.requests, 0) / n)} requests each: run ${run.seconds.toFixed(1)} s (exit ${run.code}), slowest source ${slowest.toFixed(1)} s; per-key use of its budget min ${(low * 100).toFixed(1)}% / mean ${((perKey.reduce((s, k) => s + k.utilisation, 0) / n) * 100).toFixed(1)}%; 429s: ${emulator.requestLog.count({ status: 429 })}; peak RSS ${run.peakMb.toFixed(0)} MB; CPU costsync ${run.cpuSeconds.toFixed(1)} s (${((run.cpuSeconds / rows) * 1e6).toFixed(1)} µs a line item), emulator ${((user + system) / 1e6).toFixed(1)} s`,
    );
  } finally {
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchMemory() {
  const rows = Number(size('BENCH_SOURCE_ROWS', 1_000_000, 3_000));
  for (const n of [1, 5]) {
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

/** The same run at 20, 50, 100 and 200 sources, so the cost per source shows (BENCH_CURVE: another list). */
async function benchCurve() {
  const counts = (process.env.BENCH_CURVE ?? (smoke ? '2,3' : '20,50,100,200')).split(',').map(Number);
  for (const n of counts) await benchRate(n);
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
        env[`KEY_${i}`] = `key-${i}`;
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
